//! Reports of attackers from the holders' own tools: the answers, the day's
//! limit, and the count of distinct licenses in the report shards, as the
//! operator's lookup shows it. Each test reports addresses in 81.0.0.0/8, which
//! no other test uses, each its own /16. Where a promotion is meant, each
//! license reports from a network of its own (`report_own`), as independent
//! holders' tools would; `tests/api/network.rs` proves what one network cannot do.

use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{poll, send, Mode, Server, TestApp};

pub fn report(app: &TestApp, fields: &[(&str, &str)]) -> String {
    let resp = app.form("/api/reportIp", fields, Mode::Json);
    assert_eq!(resp.status, 200, "{fields:?}: {}", resp.body);
    resp.result()
}

/// `report`, from the license's own network.
pub fn report_own(app: &TestApp, fields: &[(&str, &str)]) -> String {
    let resp = app.form_from(&app.own_client(), "/api/reportIp", fields, Mode::Json);
    assert_eq!(resp.status, 200, "{fields:?}: {}", resp.body);
    resp.result()
}

/// The operator's lookup of `ip`'s reports once every holder's alarm sent what it
/// kept: `null` while no report of it is counted.
fn reports_of(
    server: &Server,
    apps: &[&TestApp],
    ip: &str,
    until: impl Fn(&Value) -> bool,
) -> Value {
    for app in apps {
        server.run_holder_alarm(&app.license);
    }
    lookup_until(server, ip, Duration::from_secs(2), until)
}

/// The operator's lookup of `ip`'s reports once `until` holds of them, or as they
/// are after `within`.
pub fn lookup_until(
    server: &Server,
    ip: &str,
    within: Duration,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let reports = || {
        let resp = server.admin("GET", &format!("/admin/lookup?ip={ip}"), None);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()["reports"].clone()
    };
    poll(within, Duration::from_millis(50), reports, until).unwrap_or_else(|seen| seen)
}

#[test]
fn a_report_is_answered_in_the_style_of_the_operations_and_changes_no_list() {
    let server = Server::shared();
    let _global = server.listed("global-list", &["81.1.0.5"]);
    let _allowed = server.listed("allow-list", &["81.1.0.6"]);
    let app = TestApp::on(&server);
    assert_eq!(
        report(
            &app,
            &[
                ("ip", " 81.1.0.1 "),
                ("categories", "ssh, brute-force"),
                ("comment", "sshd")
            ]
        ),
        "[81.1.0.1] has been reported"
    );
    assert_eq!(
        app.check("81.1.0.1"),
        "[81.1.0.1] is currently not on global greylist",
        "a report changes nothing on the holder's list"
    );
    assert_eq!(
        report(&app, &[("ip", "81.1.0.5")]),
        "[81.1.0.5] has been reported",
        "an address on the global list is reported too"
    );
    assert_eq!(
        report(&app, &[("ip", "81.1.0.6")]),
        "[81.1.0.6] is on the global allow list, no action was taken"
    );
    let own = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "81.1.1.0/24")],
        Mode::Json,
    );
    assert_eq!(own.status, 200, "{}", own.body);
    assert_eq!(
        report(&app, &[("ip", "81.1.1.7")]),
        "[81.1.1.7] is on your allow list, no action was taken"
    );
    assert_eq!(report(&app, &[("ip", "10.1.2.3")]), "[10.1.2.3] is private");
    assert_eq!(
        report(&app, &[("ip", "81.1.0.300")]),
        "[81.1.0.300] is invalid"
    );
    let plain = app.form("/api/reportIp", &[("ip", "81.1.0.2")], Mode::Plain);
    assert_eq!(plain.body, "[81.1.0.2] has been reported");
    assert_eq!(plain.header("X-Greylist-Outcome"), Some("reported"));
    // An unknown category, or a comment too long, refuses the request as an add's details do.
    let unknown = app.form(
        "/api/reportIp",
        &[("ip", "81.1.0.3"), ("categories", "ssh,phishing")],
        Mode::Json,
    );
    assert_eq!(unknown.status, 400);
    assert_eq!(
        unknown.json()["result"],
        "Bad request: unknown category \"phishing\": categories are ssh, web, mail, scan, brute-force, spam, ddos, other"
    );
    let long = "x".repeat(256);
    let refused = app.form(
        "/api/reportIp",
        &[("ip", "81.1.0.3"), ("comment", &long)],
        Mode::Json,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    // Many at once, each answered as one.
    let bulk = app.bulk(
        "/api/reportIps",
        "application/json",
        &json!({ "ips": ["81.1.0.8", "81.1.0.6", "nope"], "categories": "scan" }).to_string(),
        Mode::Json,
    );
    assert_eq!(bulk.status, 200, "{}", bulk.body);
    let results: Vec<String> = bulk.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        results,
        [
            "[81.1.0.8] has been reported",
            "[81.1.0.6] is on the global allow list, no action was taken",
            "[nope] is invalid"
        ]
    );
}

#[test]
fn a_holders_reports_are_sent_on_at_the_next_whole_second_together() {
    let server = Server::shared();
    // The shared server's clock is the real one: two reports made within one
    // second (a fresh holder each try, until a try's two fall in one) tell the
    // next whole second from the second they were made in.
    let (app, second) = (0..10)
        .find_map(|_| {
            let app = TestApp::on(&server);
            let before = server.now();
            report(&app, &[("ip", "81.9.0.1")]);
            report(&app, &[("ip", "81.9.0.2")]);
            (server.now() == before).then_some((app, before))
        })
        .expect("ten tries, and no two reports within one second");
    // Not at once: the reports of a second go to their shards in one call each.
    let at = server
        .holder_alarm_at(&app.license)
        .expect("an alarm stands");
    assert_eq!(
        at,
        second + 1,
        "the alarm at {at}, reports made from {second} to {second}"
    );
}

#[test]
fn reports_count_against_a_daily_limit_of_their_own() {
    let server = Server::own(&[
        ("DAILY_REPORTS", "2"),
        ("TOKEN_LIFETIME_SECONDS", "2592000"),
    ]);
    let app = TestApp::on(&server);
    assert_eq!(
        report(&app, &[("ip", "81.2.0.1")]),
        "[81.2.0.1] has been reported"
    );
    assert_eq!(
        report(&app, &[("ip", "81.2.0.1")]),
        "[81.2.0.1] has been reported"
    );
    assert_eq!(
        report(&app, &[("ip", "81.2.0.2")]),
        "Sorry, but you have reached the maximum limit"
    );
    assert_eq!(
        app.add("81.2.0.3"),
        "[81.2.0.3] has been added to greylist",
        "adds are counted apart"
    );
    server.advance(86_400);
    assert_eq!(
        report(&app, &[("ip", "81.2.0.2")]),
        "[81.2.0.2] has been reported"
    );
}

#[test]
fn distinct_licenses_make_the_consensus_and_one_license_counts_once() {
    // The network rule off: the licenses alone are what is counted here.
    let server = Server::own(&[("PROMOTION_NETWORKS", "1")]);
    let apps: Vec<TestApp> = (0..4).map(|_| TestApp::on(&server)).collect();
    let all: Vec<&TestApp> = apps.iter().collect();
    // One license four times is one reporter.
    for _ in 0..4 {
        report_own(&apps[0], &[("ip", "81.3.0.1"), ("categories", "ssh")]);
    }
    let once = reports_of(&server, &all, "81.3.0.1", |r| !r.is_null());
    assert_eq!(
        once["licenses"], 1,
        "one license's four reports counted as more than one license: {once}"
    );
    assert_eq!(once["reporters"][0]["reports"], 4);
    assert_eq!(once["consensusSince"], Value::Null);
    // Three licenses do not make it; the fourth does.
    for app in &apps[1..3] {
        report_own(app, &[("ip", "81.3.0.1"), ("categories", "web")]);
    }
    let three = reports_of(&server, &all, "81.3.0.1", |r| r["licenses"] == 3);
    assert_eq!(
        (three["licenses"].clone(), three["consensusSince"].clone()),
        (json!(3), Value::Null),
        "three licenses made the consensus, or were not counted as three"
    );
    // Nor do the shards' alarms, which tell the writer what reached it.
    server.run_report_shards();
    assert_eq!(
        apps[3].check("81.3.0.1"),
        "[81.3.0.1] is currently not on global greylist",
        "three licenses put the address on the global list"
    );
    report_own(&apps[3], &[("ip", "81.3.0.1"), ("categories", "scan")]);
    let four = reports_of(&server, &all, "81.3.0.1", |r| r["licenses"] == 4);
    assert_eq!(
        (&four["licenses"], &four["networks"]),
        (&json!(4), &json!(4)),
        "{four}"
    );
    assert!(four["consensusSince"].is_string(), "{four}");
    let categories: Vec<&Value> = four["reporters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["categories"])
        .collect();
    assert!(
        categories.contains(&&json!(["ssh"])) && categories.contains(&&json!(["scan"])),
        "{four}"
    );
    // A report older than the window no longer counts.
    server.advance(7 * 86_400 + 1);
    let later = reports_of(&server, &[], "81.3.0.1", |_| true);
    assert_eq!(later["licenses"], 0, "{later}");
}

#[test]
fn a_revoked_licenses_reports_stop_counting_sent_or_not() {
    let server = Server::own(&[]);
    let (a, b) = (TestApp::on(&server), TestApp::on(&server));
    report(&a, &[("ip", "81.4.0.1")]);
    report(&b, &[("ip", "81.4.0.1")]);
    let both = reports_of(&server, &[&a, &b], "81.4.0.1", |r| r["licenses"] == 2);
    assert_eq!(both["licenses"], 2, "{both}");
    let revoked = server.admin("DELETE", &format!("/admin/licenses/{}", a.license), None);
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    let after = reports_of(&server, &[&b], "81.4.0.1", |r| r["licenses"] == 1);
    assert_eq!(
        after["licenses"], 1,
        "a revoked license's sent reports still count: {after}"
    );
    assert_eq!(after["reporters"][0]["license"], b.license.as_str());
    // Kept and not yet sent: it never counts, though the alarm that sends what
    // a holder's object keeps sends another's. Two things see to that: the
    // revocation drops it (`a_revocation_drops_the_reports_not_yet_sent` proves
    // that alone), and the shards refuse a revoked license's reports besides.
    let (c, d) = (TestApp::on(&server), TestApp::on(&server));
    report(&c, &[("ip", "81.4.0.2")]);
    report(&d, &[("ip", "81.4.0.3")]);
    let gone = server.admin("DELETE", &format!("/admin/licenses/{}", c.license), None);
    assert_eq!(gone.status, 204);
    let sent = reports_of(&server, &[&d], "81.4.0.3", |r| r["licenses"] == 1);
    assert_eq!(
        sent["licenses"], 1,
        "the holder's alarm sends what it kept: {sent}"
    );
    let counted = |r: &Value| !r.is_null() && r["licenses"] != 0;
    let none = reports_of(&server, &[&c], "81.4.0.2", counted);
    assert!(
        !counted(&none),
        "a revoked license's report, kept and not yet sent, was sent: {none}"
    );
}

#[test]
fn sixty_four_reports_of_one_address_from_sixteen_licenses_at_once_are_counted_exactly() {
    let server = Server::own(&[]);
    let apps: Vec<TestApp> = (0..16).map(|_| TestApp::on(&server)).collect();
    thread::scope(|scope| {
        for app in &apps {
            scope.spawn(move || {
                for _ in 0..4 {
                    assert_eq!(
                        report_own(app, &[("ip", "81.5.0.1")]),
                        "[81.5.0.1] has been reported"
                    );
                }
            });
        }
    });
    let all: Vec<&TestApp> = apps.iter().collect();
    let counted = reports_of(&server, &all, "81.5.0.1", |r| r["licenses"] == 16);
    assert_eq!(
        counted["licenses"], 16,
        "licenses' reports sent at once were not all counted: {counted}"
    );
    let reports: u64 = counted["reporters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reports"].as_u64().unwrap())
        .sum();
    assert_eq!(
        reports, 64,
        "reports sent at once were not all counted: {counted}"
    );
    assert!(counted["consensusSince"].is_string());
}

/// What `POST /api/networkStatus` tells `app` of `ip`.
fn network_status(app: &TestApp, ip: &str) -> Value {
    let resp = app.form("/api/networkStatus", &[("ip", ip)], Mode::Json);
    assert_eq!(resp.status, 200, "{ip}: {}", resp.body);
    resp.json()
}

#[test]
fn a_holders_network_lookups_past_120_a_minute_are_refused_before_the_shard() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let lookup = || app.form("/api/networkStatus", &[("ip", "81.11.0.1")], Mode::Json);
    // The limit counts per fixed 60-second window, and the loop may straddle two.
    let limited = (0..300).find(|_| lookup().status == 429);
    let answered = limited.expect("300 lookups of one license in a row, and none refused with 429");
    assert!(
        (120..=240).contains(&answered),
        "refused after {answered} lookups, not after 120 in a window"
    );
    let other = TestApp::on(&server);
    let theirs = other.form("/api/networkStatus", &[("ip", "81.11.0.1")], Mode::Json);
    assert_eq!(
        theirs.status, 200,
        "another license looks up on: {}",
        theirs.body
    );
}

/// Reports `ip` from each of `apps`, each from its own network, and sends them
/// on: each holder's alarm, then the shards' and the writer's.
pub fn reported_by(server: &Server, apps: &[TestApp], ip: &str) {
    for app in apps {
        assert_eq!(
            report_own(app, &[("ip", ip)]),
            format!("[{ip}] has been reported")
        );
        server.run_holder_alarm(&app.license);
    }
    server.run_report_shards();
}

#[test]
fn four_licenses_promote_an_address_which_decays_once_their_reports_stop() {
    let server = Server::own(&[("TOKEN_LIFETIME_SECONDS", "2592000")]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    let (reporters, other) = (&apps[..4], &apps[4]);
    reported_by(&server, &reporters[..3], "81.6.0.1");
    assert_eq!(
        other.check("81.6.0.1"),
        "[81.6.0.1] is currently not on global greylist",
        "three licenses promote nothing"
    );
    let status = network_status(other, "81.6.0.1");
    assert_eq!(
        (&status["global"], &status["promoted"], &status["holders"]),
        (&json!(false), &json!(false), &json!(3)),
        "{status}"
    );
    reported_by(&server, &reporters[3..], "81.6.0.1");
    assert_eq!(other.check("81.6.0.1"), "[81.6.0.1] is on global greylist");
    // Every holder sees that it was promoted and by how many, never by whom.
    let status = network_status(other, " 81.6.0.1 ");
    assert_eq!(
        (&status["ip"], &status["global"], &status["promoted"]),
        (&json!("81.6.0.1"), &json!(true), &json!(true)),
        "{status}"
    );
    assert_eq!(status["holders"], 4, "{status}");
    assert!(status["promotedSince"].is_string(), "{status}");
    for app in &apps {
        assert!(!status.to_string().contains(&app.license), "{status}");
    }
    let refused = other.form("/api/networkStatus", &[("ip", "10.0.0.1")], Mode::Json);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("[10.0.0.1] is private"),
        "{}",
        refused.body
    );
    assert_eq!(
        other.add("81.6.0.1"),
        "[81.6.0.1] is already on global greylist"
    );
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    assert!(
        promoted.body.lines().any(|line| line == "81.6.0.1"),
        "{}",
        promoted.body
    );
    let own = server.export_list("global-list", None);
    assert!(!own.body.contains("81.6.0.1"), "{}", own.body);
    // The operator's status counts it apart, beside the settings in force.
    let status = server.admin("GET", "/admin/status", None).json();
    assert_eq!(status["globalList"]["promoted"], 1, "{status}");
    assert_eq!(
        status["network"],
        json!({
            "promotionHolders": 4, "promotionNetworks": 4, "promotionWindowSeconds": 604800,
            "delistAfterSeconds": 604800, "promotionProbationSeconds": 0, "promotionReview": "off"
        })
    );
    // An import of the operator's own list leaves it promoted.
    assert_eq!(server.replace_list("global-list", "81.7.0.1\n").status, 200);
    assert_eq!(other.check("81.6.0.1"), "[81.6.0.1] is on global greylist");
    // The four reporting again within the delay keep it; once their reports
    // stop for the delay, it goes, however often one license alone reports.
    server.advance(6 * 86_400);
    reported_by(&server, reporters, "81.6.0.1");
    server.advance(2 * 86_400);
    server.run_report_shards();
    assert_eq!(other.check("81.6.0.1"), "[81.6.0.1] is on global greylist");
    for _ in 0..2 {
        server.advance(2 * 86_400);
        reported_by(&server, &reporters[..1], "81.6.0.1");
    }
    server.advance(86_400 + 1);
    server.run_report_shards();
    assert_eq!(
        other.check("81.6.0.1"),
        "[81.6.0.1] is currently not on global greylist",
        "decayed: one license alone never keeps it"
    );
    let status = network_status(other, "81.6.0.1");
    assert_eq!(
        (&status["global"], &status["promoted"]),
        (&json!(false), &json!(false)),
        "{status}"
    );
    // The operator's own entries never decay, and were never promoted.
    assert_eq!(other.check("81.7.0.1"), "[81.7.0.1] is on global greylist");
    let status = network_status(other, "81.7.0.1");
    assert_eq!(
        (&status["global"], &status["promoted"], &status["holders"]),
        (&json!(true), &json!(false), &json!(0)),
        "the operator's own entry is never told as promoted: {status}"
    );
}

/// A call of CrowdSec's Local API with a feed token, as a bouncer makes it:
/// `path` after `/v1/decisions`.
pub(super) fn decisions(server: &Server, key: &str, path: &str) -> Value {
    let resp = send(
        "GET",
        &format!("{}/v1/decisions{path}", server.base),
        &[("X-Api-Key", key.to_owned())],
        None,
    );
    assert_eq!(resp.status, 200, "{path}: {}", resp.body);
    resp.json()
}

/// The item of a feed's or a pull's array whose `value` is `value`.
fn by_value<'a>(items: &'a Value, value: &str) -> &'a Value {
    items
        .as_array()
        .unwrap_or_else(|| panic!("an array: {items}"))
        .iter()
        .find(|item| item["value"] == value)
        .unwrap_or_else(|| panic!("{value} in {items}"))
}

#[test]
fn the_json_feed_and_crowdsecs_decisions_say_which_global_entries_were_promoted() {
    let server = Server::own(&[]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    let holder = &apps[4];
    let listed = server.edit_global_list(&["81.9.0.1", "81.9.1.0/24"], &[]);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let (_, key) = holder.feed_token(json!({ "scope": "all" }));
    let before = holder.feed_json("scope=all&format=json");
    let cursor = before["cursor"].as_str().unwrap().to_owned();
    decisions(&server, &key, "/stream?startup=true");
    // An address the operator does not list, one inside the operator's /24, and
    // one of the operator's own, which stays the operator's.
    for ip in ["81.9.0.5", "81.9.1.7", "81.9.0.1"] {
        reported_by(&server, &apps[..4], ip);
    }
    assert_eq!(holder.check("81.9.0.5"), "[81.9.0.5] is on global greylist");
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    let promoted: Vec<&str> = promoted.body.lines().skip(1).collect();
    assert_eq!(promoted, ["81.9.0.5", "81.9.1.7"]);

    // The JSON feed: the promoted entry says so; the operator's are as they were,
    // the /24 holding a promoted address included.
    let entry = |value: &str, source: Option<&str>| {
        let mut entry =
            json!({ "value": value, "scope": "global", "expiresAt": null, "comment": null });
        if let Some(source) = source {
            entry["source"] = json!(source);
        }
        entry
    };
    let whole = holder.feed_json("scope=all&format=json");
    assert_eq!(
        by_value(&whole["entries"], "81.9.0.5"),
        &entry("81.9.0.5", Some("promoted")),
        "the promoted entry does not say so in the JSON feed"
    );
    for own in ["81.9.0.1", "81.9.1.0/24"] {
        assert_eq!(by_value(&whole["entries"], own), &entry(own, None), "{own}");
    }
    let delta = holder.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(
        (&delta["deleted"], &delta["new"]),
        (&json!([]), &json!([entry("81.9.0.5", Some("promoted"))])),
        "{delta}"
    );

    // CrowdSec: the promoted entry's scenario says so, in the pull that brings
    // it and in every later one; its origin is the global list's.
    let changed = decisions(&server, &key, "/stream");
    let news = changed["new"].as_array().unwrap();
    assert_eq!(news.len(), 1, "{changed}");
    assert_eq!(
        (&news[0]["value"], &news[0]["origin"], &news[0]["scenario"]),
        (
            &json!("81.9.0.5"),
            &json!("greylist-global"),
            &json!("greylist/global-promoted")
        )
    );
    let all = decisions(&server, &key, "/stream?startup=true");
    assert_eq!(
        by_value(&all["new"], "81.9.0.5")["scenario"],
        "greylist/global-promoted"
    );
    for own in ["81.9.0.1", "81.9.1.0/24"] {
        let decision = by_value(&all["new"], own);
        assert_eq!(
            (&decision["origin"], &decision["scenario"]),
            (&json!("greylist-global"), &json!("greylist/global")),
            "{own}"
        );
    }
    // Its words tell the promoted entries apart, and `global` still takes them all.
    let values = |query: &str| -> Vec<String> {
        let answer = decisions(&server, &key, &format!("/stream?startup=true&{query}"));
        let news = answer["new"].as_array().unwrap().iter();
        news.map(|d| d["value"].as_str().unwrap().to_owned())
            .filter(|value| value.starts_with("81.9."))
            .collect()
    };
    assert_eq!(
        values("scenarios_not_containing=promoted"),
        ["81.9.0.1", "81.9.1.0/24"]
    );
    assert_eq!(values("scenarios_containing=promoted"), ["81.9.0.5"]);
    assert_eq!(
        values("scenarios_containing=global"),
        ["81.9.0.1", "81.9.0.5", "81.9.1.0/24"]
    );
    // Live mode too.
    let live = decisions(&server, &key, "?ip=81.9.0.5");
    assert_eq!(live[0]["scenario"], "greylist/global-promoted", "{live}");
    let live = decisions(&server, &key, "?ip=81.9.1.7");
    assert_eq!(
        (&live[0]["value"], &live[0]["scenario"]),
        (&json!("81.9.1.0/24"), &json!("greylist/global")),
        "{live}"
    );
}

#[test]
fn the_operator_takes_a_promotion_off_and_only_new_reports_bring_it_back() {
    let server = Server::own(&[]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    reported_by(&server, &apps[..4], "81.8.0.1");
    // Reported while it was not allowed; allowed before the shard tells the writer.
    for app in &apps[..4] {
        report_own(app, &[("ip", "81.8.1.1")]);
        server.run_holder_alarm(&app.license);
    }
    assert_eq!(server.edit_allow_list(&["81.8.1.0/24"], &[]).status, 200);
    server.run_report_shards();
    let other = &apps[4];
    assert_eq!(other.check("81.8.0.1"), "[81.8.0.1] is on global greylist");
    assert_eq!(
        other.check("81.8.1.1"),
        "[81.8.1.1] is on the global allow list, no action was taken",
        "the global allow list is never promoted over"
    );
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    assert!(
        !promoted.body.contains("81.8.1.1"),
        "an address the global allow list holds was promoted: {}",
        promoted.body
    );
    let taken = server.admin(
        "POST",
        "/admin/global-list",
        Some(json!({ "add": [], "remove": [], "removePromoted": ["81.8.0.1"] })),
    );
    assert_eq!(taken.status, 200, "{}", taken.body);
    server.run_report_shards();
    assert_eq!(
        other.check("81.8.0.1"),
        "[81.8.0.1] is currently not on global greylist"
    );
    // The reports made before stay forgotten: three new ones are not enough, four are.
    reported_by(&server, &apps[..3], "81.8.0.1");
    assert_eq!(
        other.check("81.8.0.1"),
        "[81.8.0.1] is currently not on global greylist"
    );
    reported_by(&server, &apps[3..4], "81.8.0.1");
    assert_eq!(other.check("81.8.0.1"), "[81.8.0.1] is on global greylist");
}

#[test]
fn with_ipv6_and_its_64s_reports_of_one_64_promote_it_for_every_address_in_it() {
    let server = Server::own(&[("IPV6", "on"), ("IPV6_PREFIX", "64")]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    // Four licenses, each reporting another address of one /64: one subject, four reporters.
    for (n, app) in apps[..4].iter().enumerate() {
        let ip = format!("2a00:1450:4001:81b::{}", n + 1);
        assert_eq!(
            report_own(app, &[("ip", &ip)]),
            format!("[{ip}] has been reported")
        );
        server.run_holder_alarm(&app.license);
    }
    server.run_report_shards();
    assert_eq!(
        apps[4].check("2a00:1450:4001:81b::99"),
        "[2a00:1450:4001:81b::99] is on global greylist"
    );
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    assert!(
        promoted
            .body
            .lines()
            .any(|line| line == "2a00:1450:4001:81b::/64"),
        "{}",
        promoted.body
    );
    let lookup = server.admin("GET", "/admin/lookup?ip=2a00:1450:4001:81b::7", None);
    assert_eq!(lookup.json()["reports"]["licenses"], 4, "{}", lookup.body);
}
