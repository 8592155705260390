//! A holder's own allow list on every surface a firewall reads: the whole feed
//! in text, JSON and appliance files, the JSON delta, CrowdSec's stream and live
//! mode. Each test has a server of its own: the global list's edits would reach
//! other tests' deltas.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::helpers::{send, Mode, Server, TestApp};

fn values(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("an array: {items}"))
        .iter()
        .map(|item| item["value"].as_str().unwrap().to_owned())
        .collect()
}

fn allow(app: &TestApp, route: &str, ip: &str) {
    let resp = app.form(&format!("/api/{route}"), &[("ip", ip)], Mode::Json);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(
        resp.result().contains("your allow list"),
        "{route} {ip}: {}",
        resp.body
    );
}

fn whole(app: &TestApp) -> BTreeSet<String> {
    values(&app.feed_json("scope=all&format=json")["entries"])
        .into_iter()
        .collect()
}

/// The global list of these tests: single addresses and a /24.
fn listed_globally(server: &Server) {
    let edit = server.edit_global_list(&["79.1.0.5", "79.1.0.6", "79.2.0.0/24", "79.3.0.9"], &[]);
    assert_eq!(edit.status, 200, "{}", edit.body);
}

#[test]
fn the_whole_feed_in_every_format_leaves_out_what_the_holder_allows() {
    let server = Server::own(&[]);
    listed_globally(&server);
    let app = TestApp::on(&server);
    let other = TestApp::on(&server);
    app.add("79.4.0.1");
    allow(&app, "addIpToAllowlist", "79.1.0.0/24");
    allow(&app, "addIpToAllowlist", "79.2.0.128/25");
    let expected: BTreeSet<String> = ["79.2.0.0/25", "79.3.0.9", "79.4.0.1"]
        .map(String::from)
        .into();
    assert_eq!(
        whole(&app),
        expected,
        "the whole JSON feed is not the lists less what the holder allows"
    );
    let text = app.feed("scope=all");
    assert_eq!(text.status, 200);
    let lines: Vec<&str> = text.body.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        ["79.2.0.0/25", "79.3.0.9", "79.4.0.1"],
        "the whole text feed is not the lists less what the holder allows"
    );
    // Every appliance's file: what the holder allows is in none of them, and
    // the /24 it allows half of is there as the other half.
    for (format, kept) in [
        ("ipset", "add edge 79.2.0.0/25"),
        ("nftables", "79.2.0.0/25"),
        ("mikrotik", "address=79.2.0.0/25"),
    ] {
        let file = app
            .feed(&format!("scope=all&format={format}&list=edge"))
            .body;
        for allowed in ["79.1.0.5", "79.1.0.6", "79.2.0.0/24", "79.2.0.128"] {
            assert!(
                !file.contains(allowed),
                "the {format} file carries {allowed}, which the holder allows: {file}"
            );
        }
        for listed in [kept, "79.3.0.9", "79.4.0.1"] {
            assert!(
                file.contains(listed),
                "the {format} file lacks {listed}: {file}"
            );
        }
    }
    // Another holder's feed is as the global list has it.
    let theirs = values(&other.feed_json("scope=all&format=json")["entries"]);
    assert_eq!(theirs, ["79.1.0.5", "79.1.0.6", "79.2.0.0/24", "79.3.0.9"]);
}

#[test]
fn a_delta_drops_the_global_entries_an_allow_entry_covers_and_brings_them_back_after() {
    let server = Server::own(&[]);
    listed_globally(&server);
    let app = TestApp::on(&server);
    app.add("79.4.0.1");
    let first = app.feed_json("scope=all&format=json");
    let mut held: BTreeSet<String> = values(&first["entries"]).into_iter().collect();
    let mut cursor = first["cursor"].as_str().unwrap().to_owned();
    let mut delta = |held: &mut BTreeSet<String>| {
        let answer = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
        assert_eq!(answer["reset"], Value::Null, "a delta: {answer}");
        let (deleted, new) = (values(&answer["deleted"]), values(&answer["new"]));
        for value in &deleted {
            held.remove(value);
        }
        held.extend(new.iter().cloned());
        cursor = answer["cursor"].as_str().unwrap().to_owned();
        (deleted, new)
    };
    allow(&app, "addIpToAllowlist", "79.1.0.0/24");
    allow(&app, "addIpToAllowlist", "79.2.0.0/25");
    let (deleted, new) = delta(&mut held);
    assert_eq!(
        BTreeSet::from_iter(deleted),
        BTreeSet::from(["79.1.0.5", "79.1.0.6", "79.2.0.0/24"].map(String::from)),
        "the delta does not delete the global entries a new allow entry covers"
    );
    assert_eq!(new, ["79.2.0.128/25"], "the rest of the /24");
    assert_eq!(
        held,
        whole(&app),
        "the delta leaves the firewall as the whole feed"
    );
    // An add that covers the holder's own entry drops it once, as a removal.
    allow(&app, "addIpToAllowlist", "79.4.0.0/24");
    let (deleted, new) = delta(&mut held);
    assert_eq!((deleted, new), (vec!["79.4.0.1".to_owned()], vec![]));
    // Taken back: the global entries come back; the holder's own does not.
    allow(&app, "deleteIpFromAllowlist", "79.1.0.0/24");
    allow(&app, "deleteIpFromAllowlist", "79.2.0.0/25");
    allow(&app, "deleteIpFromAllowlist", "79.4.0.0/24");
    let (deleted, new) = delta(&mut held);
    assert_eq!(deleted, ["79.2.0.128/25"]);
    assert_eq!(
        BTreeSet::from_iter(new),
        BTreeSet::from(["79.1.0.5", "79.1.0.6", "79.2.0.0/24"].map(String::from))
    );
    assert_eq!(held, whole(&app));
    // An operator edit and a holder's change in one delta, each weighed with the other.
    allow(&app, "addIpToAllowlist", "79.5.0.0/24");
    server.edit_global_list(&["79.5.0.7", "79.6.0.1"], &[]);
    let (deleted, new) = delta(&mut held);
    assert_eq!((deleted, new), (vec![], vec!["79.6.0.1".to_owned()]));
    assert_eq!(held, whole(&app));
}

fn pull(server: &Server, key: &str, query: &str) -> Value {
    let resp = send(
        "GET",
        &format!("{}/v1/decisions/stream?{query}", server.base),
        &[("X-Api-Key", key.to_owned())],
        None,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

#[test]
fn crowdsecs_stream_deletes_what_the_holder_allows_and_live_mode_answers_null() {
    let server = Server::own(&[]);
    listed_globally(&server);
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    let startup = values(&pull(&server, &key, "startup=true")["new"]);
    assert!(startup.contains(&"79.1.0.5".to_owned()), "{startup:?}");
    allow(&app, "addIpToAllowlist", "79.1.0.5");
    let answer = pull(&server, &key, "");
    assert_eq!(
        (values(&answer["deleted"]), values(&answer["new"])),
        (vec!["79.1.0.5".to_owned()], vec![]),
        "the stream does not delete what the holder now allows"
    );
    let live = |ip: &str| {
        let resp = send(
            "GET",
            &format!("{}/v1/decisions?ip={ip}", server.base),
            &[("X-Api-Key", key.clone())],
            None,
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.body
    };
    assert_eq!(live("79.1.0.5"), "null");
    assert!(live("79.1.0.6").contains("79.1.0.6"));
    allow(&app, "deleteIpFromAllowlist", "79.1.0.5");
    let answer = pull(&server, &key, "");
    assert_eq!(
        (values(&answer["deleted"]), values(&answer["new"])),
        (vec![], vec!["79.1.0.5".to_owned()])
    );
    assert!(live("79.1.0.5").contains("79.1.0.5"));
    assert_eq!(pull(&server, &key, ""), json!({ "deleted": [], "new": [] }));
}

#[test]
fn with_ipv6_an_allowed_address_takes_its_listed_64_out_of_the_holders_feed() {
    let server = Server::own(&[("IPV6", "on"), ("IPV6_PREFIX", "64")]);
    let app = TestApp::on(&server);
    assert_eq!(
        app.add("2a00:1450:4001:80b::200e"),
        "[2a00:1450:4001:80b::200e] has been added to greylist"
    );
    let entries = values(&app.feed_json("format=json")["entries"]);
    assert_eq!(entries, ["2a00:1450:4001:80b::/64"]);
    let first = app.feed_json("format=json");
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    allow(&app, "addIpToAllowlist", "2a00:1450:4001:80b::1");
    assert_eq!(app.feed_json("format=json")["entries"], json!([]));
    let answer = app.feed_json(&format!("format=json&since={cursor}"));
    assert_eq!(
        (values(&answer["deleted"]), values(&answer["new"])),
        (vec!["2a00:1450:4001:80b::/64".to_owned()], vec![])
    );
    allow(&app, "deleteIpFromAllowlist", "2a00:1450:4001:80b::1");
    assert_eq!(
        values(&app.feed_json("format=json")["entries"]),
        ["2a00:1450:4001:80b::/64"]
    );
}

#[test]
fn a_delta_whose_allow_list_changes_touch_too_much_of_the_global_list_is_answered_whole() {
    let server = Server::own(&[]);
    // Every other address of four /16s: 131 072 global blocks, more than a delta
    // works out in memory once the holder allow-lists all four.
    let mut import = String::new();
    for net in 0..4u32 {
        for n in 0..32_768u32 {
            let addr = (80 << 24) | (net << 16) | (2 * n + 1);
            import.push_str(&format!("{}\n", std::net::Ipv4Addr::from(addr)));
        }
    }
    let put = server.replace_list("global-list", &import);
    assert_eq!(put.status, 200, "{}", put.body);
    let app = TestApp::on(&server);
    let first = app.feed_json("scope=all&format=json");
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    for net in 0..4 {
        allow(&app, "addIpToAllowlist", &format!("80.{net}.0.0/16"));
    }
    let answer = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(answer["reset"], true, "the whole feed, not a delta");
    assert_eq!(answer["entries"], json!([]));
    // One /16 less is a delta again.
    let cursor = answer["cursor"].as_str().unwrap().to_owned();
    allow(&app, "deleteIpFromAllowlist", "80.0.0.0/16");
    let delta = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(delta["reset"], Value::Null, "{}", delta["cursor"]);
    assert_eq!(values(&delta["new"]).len(), 32_768);
}
