//! The feed as appliances load it: the files each format writes, loaded by the
//! real `nft` and `ipset` in a network namespace of their own (never the
//! host's firewall), and the plain text URL tables and threat feeds read.

use std::fs;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use super::helpers::{fresh_state_dir, Resp, Server, TestApp};

/// A server of this file's own: its tests share a global list no other test changes.
fn server() -> Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER.get_or_init(|| Server::own(&[]).for_many()).clone()
}

/// A holder with a personal entry that expires, one with a comment that tries to
/// break out of its line, one inside a global range, and that range.
fn holder(server: &Arc<Server>) -> TestApp {
    let app = TestApp::on(server);
    app.add_with(&[("ip", "23.94.30.1"), ("ttl", "3600")]);
    let comment = "x\" ; /system reboot ; :put \"$y\n/ip firewall filter remove 0";
    app.add_with(&[("ip", "23.94.30.2"), ("comment", comment)]);
    app.add_with(&[("ip", "45.92.1.1")]);
    assert_eq!(server.edit_global_list(&["45.92.0.0/16"], &[]).status, 200);
    app
}

fn file(app: &TestApp, query: &str) -> Resp {
    let resp = app.feed(query);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    resp
}

/// Runs `script` with `sh` in a new network namespace, the feed's file at `$1`.
pub(super) fn in_namespace(body: &str, script: &str) -> String {
    let dir = fresh_state_dir();
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("feed");
    fs::write(&path, body).unwrap();
    let out = Command::new("unshare")
        .args(["-n", "sh", "-ec", script, "sh"])
        .arg(&path)
        .output()
        .expect("unshare(1)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the appliance could not load the feed's file: {script}: {text}\n{body}"
    );
    text
}

#[test]
fn an_nft_file_loads_into_a_set_with_the_entries_and_their_timeouts() {
    let server = server();
    let app = holder(&server);
    let body = file(&app, "scope=all&format=nftables&list=edge").body;
    // Loaded twice: the second run flushes and fills the same set again.
    let listed = in_namespace(
        &body,
        "nft -f \"$1\"; nft -f \"$1\"; nft list set inet greylist edge",
    );
    assert!(listed.contains("flags interval,timeout"), "{listed}");
    let elements = listed.split("elements = {").nth(1).unwrap_or_default();
    assert!(
        elements.contains("23.94.30.1 timeout 59m") || elements.contains("23.94.30.1 timeout 1h"),
        "{listed}"
    );
    assert!(elements.contains("23.94.30.2"), "{listed}");
    assert!(elements.contains("45.92.0.0/16"), "{listed}");
    assert!(
        !elements.contains("45.92.1.1"),
        "inside the range, merged: {listed}"
    );
    assert!(!body.contains("reboot"), "no comment goes into an nft file");
}

#[test]
fn an_ipset_file_restores_into_a_hash_net_set_twice_over() {
    let server = server();
    let app = holder(&server);
    let body = file(&app, "scope=all&format=ipset&list=edge").body;
    let listed = in_namespace(
        &body,
        "ipset restore < \"$1\"; ipset restore < \"$1\"; ipset list edge",
    );
    assert!(listed.contains("Type: hash:net"), "{listed}");
    let members = listed.split("Members:").nth(1).unwrap_or_default();
    assert!(members.contains("23.94.30.1 timeout "), "{listed}");
    assert!(members.contains("23.94.30.2 timeout 0"), "{listed}");
    assert!(members.contains("45.92.0.0/16 timeout 0"), "{listed}");
    assert_eq!(
        members.lines().filter(|l| !l.trim().is_empty()).count(),
        3,
        "{listed}"
    );
}

#[test]
fn a_routeros_script_replaces_its_list_and_keeps_each_comment_inside_its_quotes() {
    let server = server();
    let app = holder(&server);
    let body = file(&app, "scope=all&format=mikrotik&list=edge-1").body;
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(
        lines[1],
        "/ip firewall address-list remove [find where list=\"edge-1\"]"
    );
    assert!(lines.contains(&"/ip firewall address-list add list=\"edge-1\" address=45.92.0.0/16"));
    let expiring = lines
        .iter()
        .find(|l| l.contains("address=23.94.30.1 "))
        .unwrap();
    assert!(
        expiring.contains(" timeout=59m") || expiring.contains(" timeout=1h0m0s"),
        "{expiring}"
    );
    let commented = lines
        .iter()
        .find(|l| l.contains("address=23.94.30.2 "))
        .unwrap();
    assert_eq!(
        *commented,
        "/ip firewall address-list add list=\"edge-1\" address=23.94.30.2 \
         comment=\"x\\\" ; /system reboot ; :put \\\"\\$y_/ip firewall filter remove 0\"",
        "a comment stays inside its RouterOS quotes"
    );
    // Every line is a comment or an address-list command: nothing broke out.
    assert!(lines
        .iter()
        .all(|l| l.starts_with('#') || l.starts_with("/ip firewall address-list ")));
    assert_eq!(lines.len(), 2 + 3 + 1);
    let refused = app.feed("format=mikrotik&list=a;b");
    assert_eq!(refused.status, 400, "{}", refused.body);
}

#[test]
fn plain_text_gives_url_tables_and_threat_feeds_one_address_or_range_a_line() {
    let app = TestApp::new();
    app.add("23.94.31.1");
    let body = file(&app, "").body;
    // pfSense/OPNsense URL tables, FortiGate threat feeds and Palo Alto EDLs take
    // an address or a CIDR range a line; the `#` lines are comments to the first two.
    let entries: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(entries, ["23.94.31.1"]);
    let server = server();
    let all = holder(&server);
    let body = file(&all, "scope=all").body;
    let entries: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        entries.contains(&"45.92.0.0/16") && entries.contains(&"23.94.30.1"),
        "{body}"
    );
    let shape = |line: &str| {
        let (addr, len) = line.split_once('/').unwrap_or((line, "32"));
        addr.parse::<std::net::Ipv4Addr>().is_ok() && len.parse::<u8>().is_ok_and(|l| l <= 32)
    };
    assert!(entries.iter().all(|l| shape(l)), "{body}");
}

#[test]
fn merged_a_global_range_is_written_once_with_what_it_holds_and_json_keeps_whose_each_is() {
    // A server of its own: the holder's address first, then a range around it
    // (an address the global list holds already is never added), on a global
    // list the other tests here do not count.
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("45.95.1.1");
    assert_eq!(server.edit_global_list(&["45.95.0.0/16"], &[]).status, 200);
    let text = file(&app, "scope=all&aggregate=1").body;
    let entries: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(entries.contains(&"45.95.0.0/16"), "{text}");
    assert!(
        !entries.contains(&"45.95.1.1"),
        "merged, a personal address inside a global range is that range: {text}"
    );
    let json = app.feed_json("scope=all&format=json&aggregate=1");
    let scope_of = |value: &str| {
        json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["value"] == value)
            .map(|item| item["scope"].clone())
    };
    assert_eq!(scope_of("45.95.0.0/16"), Some("global".into()), "{json}");
    assert_eq!(
        scope_of("45.95.1.1"),
        Some("personal".into()),
        "JSON merges only what shares its origin: {json}"
    );
}
