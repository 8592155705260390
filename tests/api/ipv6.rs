//! IPv6, the operator's choice (`IPV6`). Off, every IPv6 form answers as the
//! specification's IPv4 rules have it. On, the three operations, bulk changes,
//! the list, history, limits, the feed, the decision stream and the appliance
//! files (loaded by the real `nft` and `ipset`) take IPv6 as they take IPv4; so
//! do the global list and the allow list, their imports (DROP and DROPv6 in one
//! file) and exports. A restart keeps IPv6 entries, and turning IPv6 off again
//! hides none of them.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use super::appliances::in_namespace;
use super::helpers::{send, Encoding, Mode, Resp, Server, TestApp};

const A: &str = "2a00:1450:4001:80b::200e";
const B: &str = "2606:4700::1111";

/// A server with IPv6 on, shared by this file's tests (each has its own license).
/// CrowdSec's live mode: the decisions a bouncer with feed token `key` is given for `ip`.
fn live_decisions(server: &Server, key: &str, ip: &str) -> Resp {
    send(
        "GET",
        &format!("{}/v1/decisions?ip={ip}", server.base),
        &[("X-Api-Key", key.to_owned())],
        None,
    )
}

fn on() -> Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| Server::own(&[("IPV6", "on")]).for_many())
        .clone()
}

/// IPv6 forms a client may send: long and short, IPv4-mapped, private, with a
/// zone index, in brackets, with a prefix. Off, each answers `is invalid`.
const FORMS: [&str; 9] = [
    A,
    "2A00:1450:4001:080B:0:0:0:200E",
    "::ffff:8.8.8.8",
    "::1",
    "2001:db8::1",
    "fe80::1%eth0",
    "[2606:4700::1111]",
    "2606:4700::/32",
    "::",
];

#[test]
fn off_every_ipv6_form_answers_is_invalid_as_the_specification_has_it() {
    let app = TestApp::new();
    for form in FORMS {
        let invalid = format!("[{form}] is invalid");
        let off = "with IPv6 off, every IPv6 form answers is invalid";
        assert_eq!(app.check(form), invalid, "{off}: a check");
        assert_eq!(app.add(form), invalid, "{off}: an add");
        assert_eq!(app.remove(form), invalid, "{off}: a remove");
    }
    let bulk = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        &format!("{A}\n::ffff:8.8.4.4\n"),
        Mode::Json,
    );
    let results = &bulk.json()["results"];
    assert_eq!(
        results[0]["result"],
        format!("[{A}] is invalid"),
        "{results}"
    );
    assert_eq!(results[1]["result"], "[::ffff:8.8.4.4] is invalid");
    let quota = app.get("/api/quota").json();
    assert!(quota.get("ipv6").is_none(), "{quota}");
}

#[test]
fn on_the_three_operations_answer_ipv6_in_the_specified_shapes() {
    let app = TestApp::on(&on());
    assert_eq!(
        app.check(A),
        format!("[{A}] is currently not on global greylist")
    );
    assert_eq!(app.add(A), format!("[{A}] has been added to greylist"));
    let long = "2A00:1450:4001:080B:0:0:0:200E";
    assert_eq!(
        app.add(long),
        format!("[{long}] is already on your greylist")
    );
    assert_eq!(
        app.check(&format!(" {long}\t")),
        format!("[{long}] is currently on your personal greylist"),
        "the message shows the address as given, trimmed"
    );
    for private in [
        "2001:db8::1",
        "fc00::1",
        "fe80::1",
        "::1",
        "ff02::1",
        "2002:808:808::1",
    ] {
        assert_eq!(
            app.add(private),
            format!("[{private}] is private"),
            "an address of a private IPv6 block is refused as private"
        );
    }
    for invalid in [
        "fe80::1%eth0",
        "[2606:4700::1111]",
        "2606:4700::/32",
        "1::2::3",
        "12345::",
    ] {
        assert_eq!(app.check(invalid), format!("[{invalid}] is invalid"));
    }
    // An IPv4-mapped address is the IPv4 address it maps, and its message shows
    // it as given, as every message does.
    assert_eq!(
        app.add("::ffff:8.8.4.4"),
        "[::ffff:8.8.4.4] has been added to greylist",
        "an IPv4-mapped address is added as the IPv4 address it maps"
    );
    assert_eq!(
        app.check("8.8.4.4"),
        "[8.8.4.4] is currently on your personal greylist",
        "an IPv4-mapped address is added as the IPv4 address it maps"
    );
    assert_eq!(app.add("::ffff:10.0.0.1"), "[::ffff:10.0.0.1] is private");
    assert_eq!(
        app.remove(A),
        format!("[{A}] has been removed from greylist")
    );
    assert_eq!(app.remove(A), format!("[{A}] is not on greylist"));
    assert_eq!(app.get("/api/quota").json()["ipv6"], true);
    let answer = app.call(
        "/api/checkIpOnGreylist",
        B,
        Encoding::Urlencoded,
        Mode::Json,
    );
    assert_eq!(
        (answer.status, answer.header("X-Greylist-Outcome")),
        (200, Some("not_listed")),
        "{}",
        answer.body
    );
}

#[test]
fn on_an_ipv6_add_counts_one_against_the_daily_limit() {
    let server = Server::own(&[("IPV6", "on"), ("DAILY_ADDITIONS", "2")]);
    let app = TestApp::on(&server);
    assert_eq!(app.add(A), format!("[{A}] has been added to greylist"));
    assert_eq!(app.add("8.8.4.4"), "[8.8.4.4] has been added to greylist");
    assert_eq!(app.add(B), "Sorry, but you have reached the maximum limit");
    assert_eq!(
        app.check(B),
        format!("[{B}] is currently not on global greylist")
    );
    server.kill();
}

#[test]
fn on_bulk_changes_the_list_and_history_take_both_families() {
    let app = TestApp::on(&on());
    let bulk = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        &format!("8.8.4.4\n{A}\n2001:db8::1\n{B}\n"),
        Mode::Json,
    );
    assert_eq!(bulk.status, 200, "{}", bulk.body);
    let results: Vec<Value> = bulk.json()["results"].as_array().unwrap().clone();
    let codes: Vec<&str> = results
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["added", "added", "private", "added"]);
    // A page at a time, through an IPv6 entry's cursor.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = app.list(&[("limit", "1"), ("cursor", &cursor)]);
        seen.extend(
            page["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["ip"].as_str().unwrap().to_owned()),
        );
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [B, A, "8.8.4.4"],
        "a page at a time through IPv6 cursors, the list is read whole"
    );
    let history = app.history();
    let addresses: Vec<&str> = history["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{history}"))
        .iter()
        .map(|e| e["ip"].as_str().unwrap())
        .collect();
    assert!(
        addresses.contains(&A) && addresses.contains(&B),
        "{history}"
    );
}

#[test]
fn on_the_feed_and_the_decision_stream_carry_ipv6_and_its_deletion() {
    let app = TestApp::on(&on());
    app.add_with(&[("ip", A), ("ttl", "3600"), ("comment", "scanner")]);
    app.add("8.8.4.4");
    let text = app.feed("scope=personal").body;
    assert!(
        text.lines().any(|l| l == A) && text.lines().any(|l| l == "8.8.4.4"),
        "{text}"
    );
    let whole = app.feed_json("scope=personal&format=json");
    let entry = whole["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["value"] == A)
        .unwrap_or_else(|| panic!("{whole}"))
        .clone();
    assert_eq!(entry["comment"], "scanner");
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    let pull = |query: &str| {
        let resp = send(
            "GET",
            &format!("{}/v1/decisions/stream?{query}", app.server.base),
            &[("X-Api-Key", key.clone())],
            None,
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    };
    let startup = pull("startup=true");
    let decision = startup["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == A)
        .unwrap_or_else(|| panic!("{startup}"))
        .clone();
    assert_eq!(
        (decision["scope"].clone(), decision["scenario"].clone()),
        (json!("Ip"), json!("scanner"))
    );
    // Live mode looks the one address up.
    let live = live_decisions(&app.server, &key, A);
    assert_eq!(
        live.json()[0]["value"],
        A,
        "live mode finds a listed IPv6 address: {}",
        live.body
    );
    app.remove(A);
    let changes = pull("startup=false");
    assert_eq!(changes["deleted"][0]["value"], A, "{changes}");
    assert_eq!(changes["deleted"][0]["id"], decision["id"]);
    let cursor = whole["cursor"].as_str().unwrap();
    let delta = app.feed_json(&format!("scope=personal&format=json&since={cursor}"));
    assert_eq!(delta["deleted"][0]["value"], A, "{delta}");
    assert_eq!(
        delta["deleted"].as_array().map(Vec::len),
        Some(1),
        "{delta}"
    );
}

#[test]
fn on_appliance_files_load_ipv6_into_sets_of_their_own() {
    let app = TestApp::on(&on());
    app.add_with(&[("ip", A), ("ttl", "3600")]);
    app.add(B);
    app.add("8.8.4.4");
    let nft = app.feed("scope=personal&format=nftables&list=edge").body;
    let listed = in_namespace(
        &nft,
        "nft -f \"$1\"; nft -f \"$1\"; nft list set inet greylist edge; nft list set inet greylist edge6",
    );
    let v6 = listed.split("set edge6").nth(1).unwrap_or_default();
    assert!(v6.contains("type ipv6_addr") && v6.contains(B), "{listed}");
    assert!(v6.contains(&format!("{A} timeout")), "{listed}");
    let ipset = app.feed("scope=personal&format=ipset&list=edge").body;
    let listed = in_namespace(
        &ipset,
        "ipset restore < \"$1\"; ipset restore < \"$1\"; ipset list edge6",
    );
    assert!(listed.contains("family inet6"), "{listed}");
    let members = listed.split("Members:").nth(1).unwrap_or_default();
    assert!(members.contains(&format!("{B} timeout 0")), "{listed}");
    assert_eq!(
        members.lines().filter(|l| !l.trim().is_empty()).count(),
        2,
        "{listed}"
    );
    let routeros = app.feed("scope=personal&format=mikrotik&list=edge").body;
    assert!(routeros.contains(
        ":do { /ipv6 firewall address-list remove [find where list=\"edge\"] } on-error={}\n"
    ));
    assert!(routeros.contains(&format!(
        "/ipv6 firewall address-list add list=\"edge\" address={B}\n"
    )));
}

#[test]
fn a_restart_keeps_ipv6_entries_and_turning_ipv6_off_hides_none_of_them() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    assert_eq!(app.add(A), format!("[{A}] has been added to greylist"));
    server.kill();
    let restarted = server.restart_from();
    let again = app.with_server(&restarted);
    assert_eq!(
        again.check(A),
        format!("[{A}] is currently on your personal greylist")
    );
    restarted.kill();
    let off = Server::own_on(&server.state_dir, &[("IPV6", "off")]);
    let now_off = app.with_server(&off);
    assert_eq!(
        now_off.check(A),
        format!("[{A}] is invalid"),
        "new IPv6 input is refused"
    );
    let text = now_off.feed("scope=personal").body;
    assert!(text.lines().any(|l| l == A), "still served: {text}");
    let nft = now_off
        .feed("scope=personal&format=nftables&list=edge")
        .body;
    let listed = in_namespace(&nft, "nft -f \"$1\"; nft list set inet greylist edge6");
    assert!(listed.contains(A), "{listed}");
    let list = now_off.list(&[]);
    assert_eq!(list["entries"][0]["ip"], A, "{list}");
    off.kill();
}

#[test]
fn with_ipv6_prefix_64_an_add_lists_the_64_and_every_address_in_it_answers_as_listed() {
    let server = Server::own(&[("IPV6", "on"), ("IPV6_PREFIX", "64")]);
    let app = TestApp::on(&server);
    let net = "2a00:1450:4001:80b::/64";
    let other = "2a00:1450:4001:80b:ffff::dead";
    assert_eq!(app.add(A), format!("[{A}] has been added to greylist"));
    assert_eq!(
        app.check(other),
        format!("[{other}] is currently on your personal greylist"),
        "every address in the listed /64 answers as listed, shown as given"
    );
    assert_eq!(
        app.add(other),
        format!("[{other}] is already on your greylist")
    );
    assert_eq!(
        app.check("2a00:1450:4001:80c::1"),
        "[2a00:1450:4001:80c::1] is currently not on global greylist"
    );
    assert_eq!(app.list(&[])["entries"][0]["ip"], net);
    let text = app.feed("scope=personal").body;
    assert!(text.lines().any(|l| l == net), "{text}");
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    let startup = send(
        "GET",
        &format!("{}/v1/decisions/stream?startup=true", server.base),
        &[("X-Api-Key", key.clone())],
        None,
    )
    .json();
    assert_eq!(
        (
            startup["new"][0]["value"].clone(),
            startup["new"][0]["scope"].clone()
        ),
        (json!(net), json!("Range")),
        "{startup}"
    );
    let live = |ip: &str| live_decisions(&server, &key, ip).body;
    let found: Value = serde_json::from_str(&live(other)).unwrap();
    assert_eq!(found[0]["value"], net, "{found}");
    let nft = app.feed("scope=personal&format=nftables&list=edge").body;
    let listed = in_namespace(&nft, "nft -f \"$1\"; nft list set inet greylist edge6");
    assert!(listed.contains(net), "{listed}");
    // An allowed address inside the /64: the /64 is no longer acted on anywhere.
    server.edit_allow_list(&["2a00:1450:4001:80b::5"], &[]);
    assert_eq!(live(other), "null", "live mode leaves the /64 out");
    let text = app.feed("scope=personal").body;
    assert!(!text.lines().any(|l| l == net), "{text}");
    server.edit_allow_list(&[], &["2a00:1450:4001:80b::5"]);
    assert_eq!(
        app.remove("2a00:1450:4001:80b::"),
        "[2a00:1450:4001:80b::] has been removed from greylist"
    );
    assert_eq!(
        app.check(A),
        format!("[{A}] is currently not on global greylist")
    );
    server.kill();
}

#[test]
fn on_the_global_list_and_the_allow_list_take_ipv6_prefixes_that_answer_check_and_add() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    assert_eq!(
        server
            .edit_global_list(&["2a0b:4140::/32", "2a06:5280::/29", "57.57.0.0/16"], &[])
            .json(),
        json!({ "added": 3, "removed": 0 })
    );
    for inside in [
        "2a0b:4140::",
        "2a0b:4140:ffff:ffff:ffff:ffff:ffff:ffff",
        "2A0B:4140:0:0:0:0:0:1",
        "2a06:5287::1",
    ] {
        assert_eq!(
            app.check(inside),
            format!("[{inside}] is on global greylist"),
            "a check finds an IPv6 address inside a global IPv6 prefix"
        );
        assert_eq!(
            app.add(inside),
            format!("[{inside}] is already on global greylist"),
            "an add finds an IPv6 address inside a global IPv6 prefix"
        );
    }
    for outside in [
        "2a0b:4141::",
        "2a0b:413f:ffff:ffff:ffff:ffff:ffff:ffff",
        "2a06:5288::",
    ] {
        assert_eq!(
            app.check(outside),
            format!("[{outside}] is currently not on global greylist")
        );
    }
    // The allow list beats the global list, for IPv6 as for IPv4.
    let _allowed = server.listed("allow-list", &["2a0b:4140:1::/48"]);
    for allowed in ["2a0b:4140:1::1", "2a0b:4140:1:ffff::"] {
        assert_eq!(
            app.add(allowed),
            format!("[{allowed}] is on the global allow list, no action was taken")
        );
    }
    assert_eq!(
        app.check("2a0b:4140:2::1"),
        "[2a0b:4140:2::1] is on global greylist"
    );
    for (entry, why) in [
        ("2a0b::/16", "wider than /29"),
        ("2001:db8::/32", "private"),
        ("fe80::/64", "private"),
        ("2a0b:4140::1/32", "host bits"),
        ("2a0b:4140::/129", "not an IP address"),
    ] {
        let resp = server.edit_global_list(&[entry], &[]);
        assert_eq!(resp.status, 400, "{entry}");
        let message = resp.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(entry) && message.contains(why),
            "{entry}: {message}"
        );
    }
    assert_eq!(
        server.edit_allow_list(&["fc00::/7"], &["fc00::/7"]).status,
        200,
        "the allow list takes any range"
    );
    // An IPv4-mapped entry is the IPv4 entry it maps.
    assert_eq!(
        server
            .edit_global_list(&["::ffff:57.57.0.0/112"], &[])
            .json(),
        json!({ "added": 0, "removed": 0 })
    );
    assert_eq!(
        server.edit_global_list(&[], &["2a0b:4140::/32"]).json(),
        json!({ "added": 0, "removed": 1 })
    );
    assert_eq!(
        app.add("2a0b:4140::1"),
        "[2a0b:4140::1] has been added to greylist"
    );
    let status = server.status();
    assert_eq!(status["globalList"]["entries"], 2, "{status}");
}

#[test]
fn on_one_import_takes_drop_and_dropv6_and_exports_both_families_as_it_reads() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    let text =
        "; Spamhaus DROPv6 List\r\n2a06:5280::/29 ; SBL334219\r\n2607:d100::/32 ; SBL347495\r\n\
                ; Spamhaus DROP List\r\n63.10.16.0/20 ; SBL256894\r\n::ffff:63.1.1.1\n";
    let replaced = server.replace_list("global-list", text);
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let replaced = replaced.json();
    assert_eq!(
        (&replaced["entries"], &replaced["added"]),
        (&json!(4), &json!(4))
    );
    assert_eq!(
        app.check("2607:d100::1"),
        "[2607:d100::1] is on global greylist"
    );
    assert_eq!(app.check("63.1.1.1"), "[63.1.1.1] is on global greylist");
    let export = server.export_list("global-list", None);
    let version = replaced["version"].as_str().unwrap();
    assert_eq!(
        export.body,
        format!(
            "# global list, version {version}, 4 entries\n63.1.1.1\n63.10.16.0/20\n\
             2607:d100::/32\n2a06:5280::/29\n"
        ),
        "IPv4 entries first, each family in address order"
    );
    assert_eq!(
        server.replace_list("global-list", &export.body).json()["added"],
        0,
        "an export imports as the same list"
    );
    // A list without IPv6 entries is one again after an import without any.
    let v4_only = server.replace_list("global-list", "63.10.16.0/20\n").json();
    assert_eq!(
        (&v4_only["entries"], &v4_only["removed"]),
        (&json!(1), &json!(3))
    );
    assert_eq!(
        app.check("2607:d100::1"),
        "[2607:d100::1] is currently not on global greylist"
    );
}

#[test]
fn off_an_import_refuses_its_first_ipv6_line_as_before_and_changes_nothing() {
    let server = Server::shared();
    let refused = server.replace_list("global-list", "63.10.16.0/20\n2607:d100::/32 ; SBL347495\n");
    assert_eq!(
        refused.status, 400,
        "with IPv6 off, an import refuses an IPv6 line: {}",
        refused.body
    );
    let message = refused.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("line 2")
            && message.contains("not an IPv4 address or CIDR range without host bits"),
        "{message}"
    );
    let edit = server.edit_allow_list(&["2607:d100::/32"], &[]);
    assert_eq!(
        edit.status, 400,
        "with IPv6 off, an edit refuses an IPv6 entry: {}",
        edit.body
    );
}

#[test]
fn on_feeds_carry_the_global_ipv6_blocks_without_what_the_allow_list_holds() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    app.add("8.8.4.4");
    app.add("2a0b:4140:5::1");
    app.add(B);
    server.edit_global_list(&["2a0b:4140::/32", "57.57.0.0/16"], &[]);
    server.edit_allow_list(&["2a0b:4140:1::/48", "57.57.1.0/24"], &[]);
    let text = app.feed("scope=all").body;
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| {
                panic!("the feed carries the global blocks as the allow list cuts them, {line} missing: {text}")
            })
    };
    let order = [
        "8.8.4.4",
        "57.57.0.0/24",
        "57.57.2.0/23",
        "57.57.128.0/17",
        B,
        "2a0b:4140::/48",
        "2a0b:4140:2::/47",
        "2a0b:4140:4::/46",
        "2a0b:4140:5::1",
        "2a0b:4140:8000::/33",
    ];
    assert!(
        order.windows(2).all(|w| at(w[0]) < at(w[1])),
        "address order, IPv4 first, a block before what it holds: {text}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("2a0b:4140:1:")),
        "{text}"
    );

    // A cursor gets what changed in either family: global blocks, and the
    // holder's entries the allow list now holds or let go.
    let whole = app.feed_json("scope=all&format=json");
    let cursor = whole["cursor"].as_str().unwrap().to_owned();
    server.edit_global_list(&["2a06:5280::/29", "58.58.0.0/16"], &["2a0b:4140::/32"]);
    server.edit_allow_list(&["2a0b:4140:5::/48"], &["2a0b:4140:1::/48"]);
    let delta = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert!(delta.get("reset").is_none(), "{delta}");
    let values = |key: &str| -> Vec<String> {
        delta[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["value"].as_str().unwrap().to_owned())
            .collect()
    };
    let (deleted, new) = (values("deleted"), values("new"));
    for gone in [
        "2a0b:4140::/48",
        "2a0b:4140:2::/47",
        "2a0b:4140:8000::/33",
        "2a0b:4140:5::1",
    ] {
        assert!(
            deleted.iter().any(|v| v == gone),
            "a delta tells the blocks that went, {gone} among them: {delta}"
        );
    }
    for added in ["2a06:5280::/29", "58.58.0.0/16"] {
        assert!(
            new.iter().any(|v| v == added),
            "a delta tells the blocks that came, {added} among them: {delta}"
        );
    }
    assert!(!new.iter().any(|v| v.starts_with("2a0b:4140")), "{delta}");
    let cursor = delta["cursor"].as_str().unwrap().to_owned();
    server.edit_allow_list(&[], &["2a0b:4140:5::/48"]);
    let shown = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(
        shown["new"][0]["value"], "2a0b:4140:5::1",
        "the allow list let it go: {shown}"
    );
    server.edit_global_list(&["2a0b:4140::/32"], &[]);
    server.edit_allow_list(&["2a0b:4140:1::/48"], &[]);

    // The real nft takes the file: a global block and the entry inside it would overlap.
    let nft = app.feed("scope=all&format=nftables&list=edge").body;
    let listed = in_namespace(
        &nft,
        "nft -f \"$1\"; nft -f \"$1\"; nft list set inet greylist edge6",
    );
    assert!(
        listed.contains("2a0b:4140::/48") && listed.contains(B),
        "{listed}"
    );
    assert!(
        !listed.contains("2a0b:4140:5::1"),
        "held by its global block: {listed}"
    );

    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    let startup = send(
        "GET",
        &format!("{}/v1/decisions/stream?startup=true", server.base),
        &[("X-Api-Key", key.clone())],
        None,
    )
    .json();
    let block = startup["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == "2a06:5280::/29")
        .unwrap_or_else(|| panic!("{startup}"))
        .clone();
    assert_eq!(
        (&block["scope"], &block["origin"]),
        (&json!("Range"), &json!("greylist-global"))
    );
    server.edit_global_list(&[], &["2a06:5280::/29"]);
    let changes = send(
        "GET",
        &format!("{}/v1/decisions/stream?startup=false", server.base),
        &[("X-Api-Key", key.clone())],
        None,
    )
    .json();
    let deleted = changes["deleted"].as_array().unwrap();
    assert_eq!(deleted.len(), 1, "{changes}");
    assert_eq!(
        (&deleted[0]["id"], &deleted[0]["value"]),
        (&block["id"], &block["value"]),
        "the block the bouncer holds is deleted, by its id"
    );
    assert_eq!(changes["new"], json!([]), "{changes}");
    let live = |ip: &str| live_decisions(&server, &key, ip).body;
    let inside: Value = serde_json::from_str(&live("2a0b:4140:8000::1")).unwrap();
    assert_eq!(
        inside[0]["value"], "2a0b:4140:8000::/33",
        "live mode answers the global IPv6 block past the allow list's hole: {inside}"
    );
    let inside: Value = serde_json::from_str(&live("57.57.200.1")).unwrap();
    assert_eq!(
        inside[0]["value"], "57.57.128.0/17",
        "the block past the allow list's hole in the same interval: {inside}"
    );
    assert_eq!(live("2a0b:4140:1::1"), "null", "the allow list holds it");
}
