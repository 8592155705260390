//! A holder's own allow list: its operations and messages, its limits, its
//! place in the precedence (under the global allow list, over the global
//! challenge list and the personal list) and the day's counters. Entries of
//! the operator's lists on the shared server are in 78.78.0.0/16, which no other
//! test uses.

use serde_json::{json, Value};

use crate::helpers::{send, Mode, Server, TestApp};

fn allow(app: &TestApp, route: &str, fields: &[(&str, &str)]) -> String {
    let resp = app.form(&format!("/api/{route}"), fields, Mode::Json);
    assert_eq!(resp.status, 200, "{route} {fields:?}: {}", resp.body);
    resp.result()
}

fn add(app: &TestApp, ip: &str) -> String {
    allow(app, "addIpToAllowlist", &[("ip", ip)])
}

fn check(app: &TestApp, ip: &str) -> String {
    allow(app, "checkIpOnAllowlist", &[("ip", ip)])
}

fn remove(app: &TestApp, ip: &str) -> String {
    allow(app, "deleteIpFromAllowlist", &[("ip", ip)])
}

fn quota(app: &TestApp) -> Value {
    let resp = app.get("/api/quota");
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

#[test]
fn every_allow_list_message_is_the_issued_text_on_both_names() {
    let app = TestApp::new();
    assert_eq!(
        add(&app, "45.67.89.0/24"),
        "[45.67.89.0/24] has been added to your allow list"
    );
    assert_eq!(
        add(&app, "45.67.89.0/24"),
        "[45.67.89.0/24] is already on your allow list"
    );
    assert_eq!(
        add(&app, " 45.67.89.7 "),
        "[45.67.89.7] is already on your allow list",
        "inside an entry is already on the list"
    );
    assert_eq!(
        check(&app, "45.67.89.7"),
        "[45.67.89.7] is on your allow list"
    );
    assert_eq!(
        check(&app, "45.67.89.128/25"),
        "[45.67.89.128/25] is on your allow list"
    );
    assert_eq!(
        check(&app, "45.67.0.0/16"),
        "[45.67.0.0/16] is not on your allow list"
    );
    assert_eq!(
        check(&app, "45.67.90.1"),
        "[45.67.90.1] is not on your allow list"
    );
    assert_eq!(
        remove(&app, "45.67.89.7"),
        "[45.67.89.7] is not on your allow list"
    );
    assert_eq!(
        remove(&app, "45.67.89.0/24"),
        "[45.67.89.0/24] has been removed from your allow list"
    );
    assert_eq!(
        remove(&app, "45.67.89.0/24"),
        "[45.67.89.0/24] is not on your allow list"
    );
    // BitNinja's names are the same operations.
    assert_eq!(
        allow(&app, "addIpToWhitelist", &[("ip", "45.67.91.1")]),
        "[45.67.91.1] has been added to your allow list"
    );
    assert_eq!(
        allow(&app, "checkIpOnWhitelist", &[("ip", "45.67.91.1")]),
        "[45.67.91.1] is on your allow list"
    );
    assert_eq!(
        allow(&app, "deleteIpFromWhitelist", &[("ip", "45.67.91.1")]),
        "[45.67.91.1] has been removed from your allow list"
    );
    // Validation as for the greylist's operations, ranges too.
    for (given, answer) in [
        ("45.67.89.77/24", "[45.67.89.77/24] is invalid"),
        ("45.66.0.0/15", "[45.66.0.0/15] is invalid"),
        ("999.1.1.1", "[999.1.1.1] is invalid"),
        ("", "[] is invalid"),
        ("10.1.2.3", "[10.1.2.3] is private"),
        ("203.0.0.0/16", "[203.0.0.0/16] is private"),
        ("2a00:1450::/32", "[2a00:1450::/32] is invalid"),
    ] {
        for route in [
            "addIpToAllowlist",
            "checkIpOnAllowlist",
            "deleteIpFromAllowlist",
        ] {
            assert_eq!(
                allow(&app, route, &[("ip", given)]),
                answer,
                "{route} {given}"
            );
        }
    }
    let plain = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "45.67.92.0/24")],
        Mode::Plain,
    );
    assert_eq!(
        plain.body,
        "[45.67.92.0/24] has been added to your allow list"
    );
    assert_eq!(plain.header("X-Greylist-Outcome"), Some("added_allow"));
    let long = "x".repeat(256);
    let refused = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "45.67.93.1"), ("comment", &long)],
        Mode::Json,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
}

#[test]
fn the_holders_allow_list_is_under_the_global_allow_list_and_over_the_global_challenge_list() {
    let server = Server::shared();
    let _global = server.listed("global-list", &["78.78.1.0/24"]);
    let _allowed = server.listed("allow-list", &["78.78.2.0/24"]);
    let app = TestApp::on(&server);
    let other = TestApp::on(&server);
    // The operator's allow list answers first, for the allow list's own operations too.
    assert_eq!(
        add(&app, "78.78.2.9"),
        "[78.78.2.9] is on the global allow list, no action was taken"
    );
    assert_eq!(
        add(&app, "78.78.2.0/24"),
        "[78.78.2.0/24] is on the global allow list, no action was taken"
    );
    assert_eq!(
        add(&app, "78.78.0.0/16"),
        "[78.78.0.0/16] has been added to your allow list"
    );
    assert_eq!(
        app.check("78.78.2.9"),
        "[78.78.2.9] is on the global allow list, no action was taken"
    );
    // Over the global challenge list: nothing is done, nothing counted.
    let before = quota(&app);
    assert_eq!(
        app.check("78.78.1.5"),
        "[78.78.1.5] is on your allow list, no action was taken",
        "the holder's allow list answers over the global challenge list"
    );
    assert_eq!(
        app.add("78.78.1.5"),
        "[78.78.1.5] is on your allow list, no action was taken",
        "the holder's allow list answers over the global challenge list"
    );
    assert_eq!(
        app.add("78.78.3.5"),
        "[78.78.3.5] is on your allow list, no action was taken",
        "the holder's allow list answers an add of what it holds"
    );
    assert_eq!(app.remove("78.78.3.5"), "[78.78.3.5] is not on greylist");
    assert_eq!(
        quota(&app)["additions"],
        before["additions"],
        "a refused add counts nothing"
    );
    // Another holder still meets the global list.
    assert_eq!(
        other.check("78.78.1.5"),
        "[78.78.1.5] is on global greylist"
    );
    assert_eq!(
        other.add("78.78.1.5"),
        "[78.78.1.5] is already on global greylist"
    );
    // Without the entry, the global list answers again.
    assert_eq!(
        remove(&app, "78.78.0.0/16"),
        "[78.78.0.0/16] has been removed from your allow list"
    );
    assert_eq!(app.check("78.78.1.5"), "[78.78.1.5] is on global greylist");
    assert_eq!(
        app.add("78.78.3.5"),
        "[78.78.3.5] has been added to greylist"
    );
}

#[test]
fn an_allow_list_entry_takes_away_the_personal_entries_it_covers_as_the_days_removals() {
    let server = Server::shared();
    let _global = server.listed("global-list", &["78.78.10.5"]);
    let app = TestApp::on(&server);
    for ip in ["78.78.10.1", "78.78.10.2", "78.78.11.1"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
    }
    let before = quota(&app);
    assert_eq!(before["removals"]["used"], 0);
    assert_eq!(
        add(&app, "78.78.10.0/24"),
        "[78.78.10.0/24] has been added to your allow list"
    );
    let after = quota(&app);
    assert_eq!(after["removals"]["used"], 2, "{after}");
    assert_eq!(after["additions"], before["additions"]);
    assert_eq!(
        app.remove("78.78.10.1"),
        "[78.78.10.1] is not on greylist",
        "the allow list entry took the personal entry it covers away"
    );
    assert_eq!(
        app.check("78.78.10.5"),
        "[78.78.10.5] is on your allow list, no action was taken",
        "the global entry inside the range too"
    );
    assert_eq!(
        app.check("78.78.11.1"),
        "[78.78.11.1] is currently on your personal greylist"
    );
    // Removing the entry brings nothing back.
    remove(&app, "78.78.10.0/24");
    assert_eq!(
        app.check("78.78.10.1"),
        "[78.78.10.1] is currently not on global greylist"
    );
    assert_eq!(
        app.check("78.78.10.5"),
        "[78.78.10.5] is on global greylist"
    );
    // Each taken away is in the history, then the entry's own changes.
    let history = app.history();
    let changes: Vec<(String, String)> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["change"].as_str().unwrap().to_owned(),
                e["ip"].as_str().unwrap().to_owned(),
            )
        })
        .take(4)
        .collect();
    assert_eq!(
        changes,
        [
            ("allow_removed".to_owned(), "78.78.10.0/24".to_owned()),
            ("allow_added".to_owned(), "78.78.10.0/24".to_owned()),
            ("removed".to_owned(), "78.78.10.2".to_owned()),
            ("removed".to_owned(), "78.78.10.1".to_owned()),
        ]
    );
}

#[test]
fn bulk_operations_answer_each_allowed_address_as_the_single_ones_do() {
    let app = TestApp::new();
    add(&app, "45.68.1.0/24");
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        "45.68.1.1\n45.68.2.1\n",
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let answer = resp.json();
    let results: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "[45.68.1.1] is on your allow list, no action was taken",
            "[45.68.2.1] has been added to greylist"
        ]
    );
}

#[test]
fn every_bulk_operation_answers_each_allowed_address_as_its_single_one_does() {
    let app = TestApp::new();
    add(&app, "45.68.3.0/24");
    for (bulk, single, body) in [
        (
            "/api/addIpsToGreylist",
            "/api/addIpToGreylist",
            "45.68.3.1\n45.68.4.1\n",
        ),
        (
            "/api/deleteIpsFromGreylist",
            "/api/deleteIpFromGreylist",
            "45.68.3.1\n45.68.4.2\n",
        ),
        ("/api/reportIps", "/api/reportIp", "45.68.3.1\n45.68.4.3\n"),
    ] {
        let alone = app.form(single, &[("ip", "45.68.3.1")], Mode::Json);
        assert_eq!(alone.status, 200, "{single}: {}", alone.body);
        let alone = alone.result();
        // A remove is not refused for the allow list: there is nothing to take.
        if bulk != "/api/deleteIpsFromGreylist" {
            assert!(alone.contains("allow list"), "{single}: {alone}");
        }
        let resp = app.bulk(bulk, "text/plain", body, Mode::Json);
        assert_eq!(resp.status, 200, "{bulk}: {}", resp.body);
        let answer = resp.json();
        let results: Vec<&str> = answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["result"].as_str().unwrap())
            .collect();
        assert_eq!(results.len(), 2, "{bulk}: {answer}");
        assert_eq!(
            results[0], alone,
            "{bulk} answered an allowed address otherwise than {single}"
        );
        assert!(
            !results[1].contains("allow list"),
            "{bulk} took an address the holder does not allow as allowed: {}",
            results[1]
        );
    }
}

#[test]
fn the_allow_list_pages_newest_first_in_canonical_form() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    allow(
        &app,
        "addIpToAllowlist",
        &[("ip", "45.69.0.0/16"), ("comment", "office")],
    );
    server.advance(1);
    add(&app, "::ffff:45.70.1.0/120");
    server.advance(1);
    add(&app, "45.71.1.1/32");
    let page = |fields: &[(&str, &str)]| {
        let resp = app.form("/api/listAllowlist", fields, Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    };
    let first = page(&[("limit", "2")]);
    assert_eq!(first["result"], "3 entries");
    let ips: Vec<&str> = first["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["ip"].as_str().unwrap())
        .collect();
    assert_eq!(ips, ["45.71.1.1", "45.70.1.0/24"]);
    let cursor = first["cursor"].as_str().unwrap();
    let rest = page(&[("limit", "2"), ("cursor", cursor)]);
    assert_eq!(
        rest["entries"],
        json!([{ "ip": "45.69.0.0/16", "comment": "office", "addedAt": rest["entries"][0]["addedAt"] }])
    );
    assert_eq!(rest["cursor"], Value::Null);
    let plain = app.form("/api/listWhitelist", &[], Mode::Plain);
    assert_eq!(plain.body, "45.71.1.1\n45.70.1.0/24\n45.69.0.0/16\n");
}

#[test]
fn the_allow_list_holds_at_most_its_entries_and_changes_a_day_and_an_add_its_removals() {
    let server = Server::own(&[
        ("ALLOW_LIST_ENTRIES", "2"),
        ("DAILY_ALLOW_CHANGES", "4"),
        ("DAILY_REMOVALS", "2"),
        ("TOKEN_LIFETIME_SECONDS", "2592000"),
    ]);
    let app = TestApp::on(&server);
    let limit = "Sorry, but you have reached the maximum limit";
    for ip in ["45.72.1.1", "45.72.1.2", "45.72.1.3"] {
        app.add(ip);
    }
    // Three entries inside, two removals left: the add changes nothing.
    assert_eq!(add(&app, "45.72.1.0/24"), limit);
    assert_eq!(
        app.check("45.72.1.1"),
        "[45.72.1.1] is currently on your personal greylist"
    );
    assert_eq!(quota(&app)["removals"]["used"], 0);
    assert_eq!(
        add(&app, "45.72.2.1"),
        "[45.72.2.1] has been added to your allow list"
    );
    assert_eq!(
        add(&app, "45.72.2.2"),
        "[45.72.2.2] has been added to your allow list"
    );
    assert_eq!(add(&app, "45.72.2.3"), limit, "two entries at most");
    assert_eq!(
        remove(&app, "45.72.2.1"),
        "[45.72.2.1] has been removed from your allow list"
    );
    assert_eq!(
        add(&app, "45.72.2.3"),
        "[45.72.2.3] has been added to your allow list"
    );
    // Four changes made: a fifth is refused, an add or a remove alike; a check is not one.
    assert_eq!(
        remove(&app, "45.72.2.3"),
        limit,
        "past the day's allow-list changes a remove is refused as an add is"
    );
    assert_eq!(
        check(&app, "45.72.2.3"),
        "[45.72.2.3] is on your allow list"
    );
    // The next UTC day counts afresh.
    server.advance(86_400);
    assert_eq!(
        remove(&app, "45.72.2.3"),
        "[45.72.2.3] has been removed from your allow list"
    );
}

/// Holds the revocations' object's markings of allow-list flags, or lets them
/// go; how many wait.
fn hold_marks(server: &Server, hold: bool) -> u64 {
    let resp = send(
        "POST",
        &format!("{}/__test/revocations/hold-marks", server.base),
        &[("Content-Type", "application/json".to_owned())],
        Some(json!({ "hold": hold }).to_string().as_bytes()),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json().as_u64().unwrap()
}

#[test]
fn an_allow_list_changed_while_its_flag_is_told_ends_told_as_it_stands() {
    // The hold is the revocations' object's, which every license shares.
    let server = Server::own(&[]);
    let _global = server.listed("global-list", &["78.78.9.0/24"]);
    let app = TestApp::on(&server);
    assert_eq!(
        add(&app, "45.67.1.1"),
        "[45.67.1.1] has been added to your allow list"
    );
    // The last entry's removal waits on its telling that the list is empty...
    assert_eq!(hold_marks(&server, true), 0);
    let removing = std::thread::scope(|scope| {
        let removal = scope.spawn(|| remove(&app, "45.67.1.1"));
        let mut polls = 0;
        while hold_marks(&server, true) == 0 {
            polls += 1;
            assert!(polls < 2000, "the removal's telling never came");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // ...while an entry comes in, and finds the flag still saying there are some.
        assert_eq!(
            add(&app, "78.78.9.0/24"),
            "[78.78.9.0/24] has been added to your allow list"
        );
        hold_marks(&server, false);
        removal.join().unwrap()
    });
    assert_eq!(
        removing,
        "[45.67.1.1] has been removed from your allow list"
    );
    // The license's record says what the list holds at the end: the entry is
    // stronger than the global list.
    assert_eq!(
        app.check("78.78.9.5"),
        "[78.78.9.5] is on your allow list, no action was taken",
        "an entry added while the last one's removal was told leaves the record saying the list has entries"
    );
}
