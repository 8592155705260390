//! A network no one actor can steer: promotions need licenses reporting from
//! distinct networks, last only while their reporters report, fall when the
//! licenses behind them are revoked or suspended (by the operator, or by a report
//! of a canary, whose answer is any report's), wait for licenses on probation and,
//! under review, for the operator (the shards' own alarms promoting and letting
//! go, with no test hook, are in alarms.rs). Each test reports addresses of its
//! own /16 in 82.0.0.0/8, which no other test uses.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{poll, send, Mode, Server, TestApp, ADMIN_TOKEN};
use crate::reports::{report_own, reported_by};

/// The operator's lookup of `ip`'s reports, as they are now.
fn reports(server: &Server, ip: &str) -> Value {
    let resp = server.admin("GET", &format!("/admin/lookup?ip={ip}"), None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["reports"].clone()
}

pub fn global(app: &TestApp, ip: &str) -> bool {
    let answer = app.check(ip);
    assert!(
        answer == format!("[{ip}] is on global greylist")
            || answer == format!("[{ip}] is currently not on global greylist"),
        "{answer}"
    );
    answer.ends_with("is on global greylist")
}

fn canaries(server: &Server, add: &[&str], remove: &[&str]) -> Value {
    let resp = server.admin(
        "POST",
        "/admin/canaries",
        Some(json!({ "add": add, "remove": remove })),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn license(server: &Server, app: &TestApp) -> Value {
    let resp = server.admin("GET", &format!("/admin/licenses/{}", app.license), None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn set_network(server: &Server, app: &TestApp, standing: &str) -> Value {
    let resp = server.admin(
        "PATCH",
        &format!("/admin/licenses/{}", app.license),
        Some(json!({ "network": standing })),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

/// Every holder's alarm (reports and standings told to the shards), then the
/// shards' and the writer's.
fn settle(server: &Server, apps: &[TestApp]) {
    for app in apps {
        server.run_holder_alarm(&app.license);
    }
    server.run_report_shards();
}

#[test]
fn one_network_with_any_number_of_licenses_promotes_nothing_and_four_networks_do() {
    let server = Server::own(&[]);
    let apps: Vec<TestApp> = (0..7).map(|_| TestApp::on(&server)).collect();
    let (many, other) = (&apps[..6], &apps[6]);
    // Six licenses, one machine: one /24, however the addresses in it differ.
    for (n, app) in many.iter().enumerate() {
        let client = format!("203.0.113.{}", n + 1);
        let resp = app.form_from(&client, "/api/reportIp", &[("ip", "82.1.0.1")], Mode::Json);
        assert_eq!(resp.result(), "[82.1.0.1] has been reported");
    }
    settle(&server, many);
    assert!(!global(other, "82.1.0.1"), "one network is one voice");
    let seen = reports(&server, "82.1.0.1");
    assert_eq!(
        (
            &seen["licenses"],
            &seen["networks"],
            &seen["consensusSince"]
        ),
        (&json!(6), &json!(1), &Value::Null),
        "{seen}"
    );
    assert_eq!(seen["needed"], json!({ "licenses": 4, "networks": 4 }));
    assert_eq!(seen["missing"], json!({ "licenses": 0, "networks": 3 }));
    for reporter in seen["reporters"].as_array().unwrap() {
        assert_eq!(
            (&reporter["network"], &reporter["standing"]),
            (&json!("203.0.113.0/24"), &json!("counting")),
            "the lookup names each reporter's network and standing"
        );
    }
    // The same through IPv6: four /64s of one /48 are one network.
    for (n, app) in many[..4].iter().enumerate() {
        let client = format!("2001:db8:7:{n}::1");
        let resp = app.form_from(&client, "/api/reportIp", &[("ip", "82.1.0.2")], Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
    }
    settle(&server, &many[..4]);
    assert!(!global(other, "82.1.0.2"));
    assert_eq!(reports(&server, "82.1.0.2")["networks"], 1);
    // Four licenses from four networks.
    reported_by(&server, &many[..4], "82.1.0.3");
    assert!(global(other, "82.1.0.3"));
    let seen = reports(&server, "82.1.0.3");
    assert_eq!(
        (&seen["licenses"], &seen["networks"], &seen["missing"]),
        (
            &json!(4),
            &json!(4),
            &json!({ "licenses": 0, "networks": 0 })
        ),
        "{seen}"
    );
    assert!(seen["consensusSince"].is_string());
    // A holder sees how many licenses, never which, nor from where.
    let status = other.form("/api/networkStatus", &[("ip", "82.1.0.3")], Mode::Json);
    let status = status.json();
    assert_eq!(status["holders"], 4);
    let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["global", "holders", "ip", "promoted", "promotedSince"]
    );
    assert!(!status.to_string().contains("10."), "{status}");
}

#[test]
fn revoking_three_of_four_promoting_licenses_takes_the_promotion_down() {
    let server = Server::own(&[("TOKEN_LIFETIME_SECONDS", "2592000")]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    reported_by(&server, &apps[..4], "82.2.0.1");
    assert!(global(&apps[4], "82.2.0.1"));
    for app in &apps[..3] {
        let revoked = server.admin("DELETE", &format!("/admin/licenses/{}", app.license), None);
        assert_eq!(revoked.status, 204, "{}", revoked.body);
    }
    server.run_report_shards();
    assert!(
        !global(&apps[4], "82.2.0.1"),
        "what they promoted goes with them"
    );
    // The fourth alone, reporting on, never brings it back.
    reported_by(&server, &apps[3..4], "82.2.0.1");
    server.advance(86_400);
    reported_by(&server, &apps[3..4], "82.2.0.1");
    assert!(!global(&apps[4], "82.2.0.1"));
    assert_eq!(reports(&server, "82.2.0.1")["licenses"], 1);
}

/// Everything an answer says but its date, with the address written as `<ip>`.
fn said(resp: &crate::helpers::Resp, ip: &str) -> (u16, String, Vec<(String, String)>) {
    let mut headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .filter(|(name, _)| !name.eq_ignore_ascii_case("date"))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.replace(ip, "<ip>")))
        .collect();
    headers.sort();
    (resp.status, resp.body.replace(ip, "<ip>"), headers)
}

#[test]
fn a_planted_canary_costs_its_planter_the_vote_and_reveals_nothing() {
    let server = Server::own(&[]);
    let apps: Vec<TestApp> = (0..6).map(|_| TestApp::on(&server)).collect();
    assert_eq!(server.edit_allow_list(&["82.3.8.0/24"], &[]).status, 200);
    assert_eq!(
        canaries(&server, &["82.3.9.0/24", "82.3.8.1"], &[]),
        json!({ "added": 2, "removed": 0 })
    );
    reported_by(&server, &apps[..4], "82.3.0.1");
    assert!(global(&apps[5], "82.3.0.1"));
    let planter = &apps[0];
    // An address only the planter reports: what a holder sees of it must not
    // change when the planter is caught.
    reported_by(&server, &apps[..1], "82.3.6.1");
    let status = |app: &TestApp, ip: &str| {
        let mut status = app
            .form("/api/networkStatus", &[("ip", ip)], Mode::Json)
            .json();
        status["ip"] = json!("<ip>");
        status
    };
    let alone = status(planter, "82.3.6.1");
    assert_eq!(alone["holders"], 1, "{alone}");
    let quota = |app: &TestApp| license(&server, app)["today"]["reported"].clone();
    // Answered exactly as a report of an address no list holds, and counted the same.
    let before = quota(planter);
    for mode in [Mode::Plain, Mode::Json] {
        let normal = planter.form_from(
            &planter.own_client(),
            "/api/reportIp",
            &[("ip", "82.3.7.5")],
            mode,
        );
        let canary = planter.form_from(
            &planter.own_client(),
            "/api/reportIp",
            &[("ip", "82.3.9.5")],
            mode,
        );
        assert_eq!(
            said(&canary, "82.3.9.5"),
            said(&normal, "82.3.7.5"),
            "{mode:?}"
        );
    }
    assert_eq!(
        quota(planter),
        json!(before.as_u64().unwrap() + 4),
        "a canary's report is counted against the day's reports as any other"
    );
    settle(&server, &apps[..1]);
    assert!(
        !global(&apps[5], "82.3.0.1"),
        "what it helped promote is counted again"
    );
    let picture = license(&server, planter);
    assert_eq!(picture["network"]["standing"], "suspended", "{picture}");
    assert_eq!(picture["network"]["canary"], "82.3.9.5");
    assert!(picture["network"]["since"].is_string());
    let seen = reports(&server, "82.3.0.1");
    let standing = |seen: &Value, license: &str| {
        seen["reporters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["license"] == license)
            .map(|r| r["standing"].clone())
    };
    assert_eq!(standing(&seen, &planter.license), Some(json!("suspended")));
    assert_eq!(seen["licenses"], 3);
    // Its later reports count for nothing.
    reported_by(&server, &apps[..1], "82.3.0.1");
    assert!(!global(&apps[5], "82.3.0.1"));
    // A holder's view of the canary is that of any address it reported, and
    // of the others it reported as before: nothing says it was caught.
    assert_eq!(status(planter, "82.3.9.5"), status(planter, "82.3.7.5"));
    assert_eq!(
        status(&apps[5], "82.3.9.5")["holders"],
        1,
        "a holder's status counts every license that reported it, whatever its standing"
    );
    assert_eq!(status(planter, "82.3.6.1"), alone);
    assert_eq!(
        last_audit(&server, "license.network"),
        "network: suspended, reported the canary 82.3.9.5",
        "a canary's suspension is an audit row the directory keeps"
    );
    // Reinstated: its reports count again, and the promotion is back.
    let reinstated = set_network(&server, planter, "counting");
    assert_eq!(
        reinstated["network"]["standing"], "counting",
        "{reinstated}"
    );
    assert_eq!(reinstated["license"], planter.license.as_str());
    settle(&server, &apps[..1]);
    assert!(global(&apps[5], "82.3.0.1"));
    let audit = server.admin(
        "GET",
        &format!(
            "/admin/audit?kind=license.network&license={}",
            planter.license
        ),
        None,
    );
    assert_eq!(
        audit.json()["entries"][0]["detail"],
        "network: counting",
        "{}",
        audit.body
    );
    // A canary the global allow list also holds still catches its reporter,
    // and is answered as the allow list answers.
    let other = &apps[4];
    let answer = report_own(other, &[("ip", "82.3.8.1")]);
    assert_eq!(
        answer,
        "[82.3.8.1] is on the global allow list, no action was taken"
    );
    server.run_holder_alarm(&other.license);
    assert_eq!(
        license(&server, other)["network"]["standing"],
        "suspended",
        "a canary the global allow list also holds still catches its reporter"
    );
    // Suspended by hand, and back.
    let third = &apps[2];
    assert_eq!(
        set_network(&server, third, "suspended")["network"]["canary"],
        Value::Null
    );
    settle(&server, &apps[2..3]);
    assert!(!global(&apps[5], "82.3.0.1"));
}

#[test]
fn the_canaries_are_an_operator_list_of_at_most_ten_thousand_entries() {
    let server = Server::own(&[]);
    let empty = server.admin("GET", "/admin/canaries", None);
    assert_eq!(empty.body, "# canaries, version 0, 0 entries\n");
    assert_eq!(
        canaries(&server, &["82.4.0.0/24", " 82.4.1.1 "], &["82.4.2.2"]),
        json!({ "added": 2, "removed": 0 })
    );
    let listed = server.admin("GET", "/admin/canaries", None);
    assert_eq!(
        listed.body,
        "# canaries, version 1, 2 entries\n82.4.0.0/24\n82.4.1.1\n"
    );
    let tag = listed.header("ETag").unwrap().to_owned();
    assert_eq!(tag, "\"1\"");
    let again = send(
        "GET",
        &format!("{}/admin/canaries", server.base),
        &[
            ("Authorization", format!("Bearer {ADMIN_TOKEN}")),
            ("If-None-Match", tag),
        ],
        None,
    );
    assert_eq!(again.status, 304);
    let bad = server.admin(
        "POST",
        "/admin/canaries",
        Some(json!({ "add": ["82.4.3.3", "nope"] })),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("nope"), "{}", bad.body);
    // Ten thousand in all, no more: the one past them refuses the edit whole.
    let many: Vec<String> = (0..9_998u32)
        .map(|n| std::net::Ipv4Addr::from(0x5205_0000 + n).to_string())
        .collect();
    let resp = server.admin("POST", "/admin/canaries", Some(json!({ "add": many })));
    assert_eq!(resp.json(), json!({ "added": 9_998, "removed": 0 }));
    let past = server.admin(
        "POST",
        "/admin/canaries",
        Some(json!({ "add": ["82.4.9.9"] })),
    );
    assert_eq!(
        past.status, 400,
        "an edit past the ten thousand canaries is refused whole: {}",
        past.body
    );
    assert!(past.body.contains("10000"), "{}", past.body);
    assert!(server
        .admin("GET", "/admin/canaries", None)
        .body
        .starts_with("# canaries, version 2, 10000 entries\n"));
    assert_eq!(
        last_audit(&server, "canaries.edited"),
        "added 9998, removed 0"
    );
}

#[test]
fn a_license_on_probation_reports_and_counts_once_it_is_old_enough() {
    let server = Server::own(&[
        ("PROMOTION_PROBATION_SECONDS", "86400"),
        ("TOKEN_LIFETIME_SECONDS", "2592000"),
    ]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    let picture = license(&server, &apps[0]);
    assert_eq!(picture["network"]["standing"], "probation", "{picture}");
    assert_eq!(picture["network"]["since"], picture["createdAt"]);
    assert!(picture["network"]["until"].is_string());
    reported_by(&server, &apps[..4], "82.5.0.1");
    assert!(
        !global(&apps[4], "82.5.0.1"),
        "on probation, their reports wait"
    );
    let seen = reports(&server, "82.5.0.1");
    assert_eq!(
        (&seen["licenses"], &seen["reporters"][0]["standing"]),
        (&json!(0), &json!("probation")),
        "a license on probation counts for nothing yet"
    );
    // Of age within the window: their reports count, with no new one.
    server.advance(86_400);
    server.run_report_shards();
    assert!(global(&apps[4], "82.5.0.1"));
    assert_eq!(
        license(&server, &apps[0])["network"]["standing"],
        "counting"
    );
}

/// The promotions waiting for review, as the operator's page lists them.
fn pending(server: &Server) -> Value {
    let resp = server.admin("GET", "/admin/promotions?state=pending", None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

/// The addresses waiting for review.
fn pending_ips(server: &Server) -> Vec<Value> {
    let queue = pending(server);
    let promotions = queue["promotions"].as_array().unwrap().iter();
    promotions.map(|p| p["ip"].clone()).collect()
}

/// The detail of the newest audit row of `kind`.
fn last_audit(server: &Server, kind: &str) -> Value {
    let audit = server
        .admin("GET", &format!("/admin/audit?kind={kind}"), None)
        .json();
    audit["entries"][0]["detail"].clone()
}

fn review(server: &Server, approve: &[&str], reject: &[&str]) -> crate::helpers::Resp {
    server.admin(
        "POST",
        "/admin/promotions",
        Some(json!({ "approve": approve, "reject": reject })),
    )
}

#[test]
fn under_review_a_consensus_waits_for_the_operator() {
    let server = Server::own(&[("PROMOTION_REVIEW", "on")]);
    let apps: Vec<TestApp> = (0..6).map(|_| TestApp::on(&server)).collect();
    let labelled = server.admin(
        "PATCH",
        &format!("/admin/licenses/{}", apps[0].license),
        Some(json!({ "label": "Acme GmbH" })),
    );
    assert_eq!(labelled.status, 200);
    for ip in ["82.6.0.1", "82.6.0.2", "82.6.0.3"] {
        reported_by(&server, &apps[..4], ip);
    }
    let other = &apps[5];
    assert!(!global(other, "82.6.0.1"), "waiting for the operator");
    let queue = pending(&server);
    assert_eq!(queue["review"], "on");
    assert_eq!(
        pending_ips(&server),
        [json!("82.6.0.1"), json!("82.6.0.2"), json!("82.6.0.3")]
    );
    let first = &queue["promotions"][0]["reports"];
    assert_eq!(
        (&first["licenses"], &first["networks"]),
        (&json!(4), &json!(4)),
        "{first}"
    );
    let acme = first["reporters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["license"] == apps[0].license.as_str())
        .unwrap();
    assert_eq!(acme["label"], "Acme GmbH");
    assert_eq!(
        acme["network"],
        format!("{}.0/24", apps[0].own_client().rsplit_once('.').unwrap().0)
    );
    assert_eq!(server.status()["pendingPromotions"], 3);
    // One not waiting refuses the whole review, and so does one named twice.
    let refused = review(&server, &["82.6.0.1"], &["82.6.0.9"]);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("82.6.0.9"), "{}", refused.body);
    let twice = review(&server, &["82.6.0.1"], &["82.6.0.1"]);
    assert_eq!(
        twice.status, 400,
        "a review naming an address both to approve and to reject is refused whole: {}",
        twice.body
    );
    assert!(
        twice.body.contains("to approve and to reject"),
        "{}",
        twice.body
    );
    assert_eq!(pending_ips(&server).len(), 3);
    let reviewed = review(&server, &["82.6.0.1"], &["82.6.0.2"]);
    assert_eq!(
        reviewed.json(),
        json!({ "approved": 1, "rejected": 1 }),
        "{}",
        reviewed.body
    );
    server.run_report_shards();
    assert!(global(other, "82.6.0.1"), "approved: promoted");
    assert!(!global(other, "82.6.0.2"));
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    assert!(
        promoted.body.lines().any(|line| line == "82.6.0.1"),
        "{}",
        promoted.body
    );
    // Rejected: its reports until then are forgotten, so three new ones queue nothing.
    reported_by(&server, &apps[..3], "82.6.0.2");
    assert_eq!(pending_ips(&server), [json!("82.6.0.3")]);
    // A consensus lost leaves the queue, and the list: once made again it waits
    // for the operator again.
    set_network(&server, &apps[1], "suspended");
    settle(&server, &apps[1..2]);
    assert_eq!(pending_ips(&server), Vec::<Value>::new());
    assert!(!global(other, "82.6.0.1"));
    set_network(&server, &apps[1], "counting");
    settle(&server, &apps[1..2]);
    assert_eq!(pending_ips(&server), [json!("82.6.0.1"), json!("82.6.0.3")]);
    assert_eq!(
        last_audit(&server, "promotions.reviewed"),
        "approved 1, rejected 1"
    );
    // Review turned off: what still waits is promoted.
    server.kill();
    let server = server.restart_with(&[("PROMOTION_REVIEW", "off")]);
    let other = other.with_server(&server);
    let drained = poll(
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            server.run_report_shards();
            (global(&other, "82.6.0.1"), global(&other, "82.6.0.3"))
        },
        |&listed| listed == (true, true),
    );
    assert_eq!(drained, Ok((true, true)));
    assert_eq!(pending(&server)["review"], "off");
    assert_eq!(pending_ips(&server), Vec::<Value>::new());
}

#[test]
fn every_form_of_a_globally_allowed_address_is_allowed_and_never_promoted() {
    let server = Server::own(&[("IPV6", "on")]);
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    assert_eq!(server.edit_allow_list(&["104.16.0.0/13"], &[]).status, 200);
    for app in &apps[..4] {
        assert_eq!(
            report_own(app, &[("ip", "64:ff9b::6810:101")]),
            "[64:ff9b::6810:101] is on the global allow list, no action was taken",
            "an IPv6 form carrying an allowed IPv4 address is allowed for a report"
        );
    }
    settle(&server, &apps[..4]);
    assert_eq!(
        apps[4].check("64:ff9b::6810:101"),
        "[64:ff9b::6810:101] is on the global allow list, no action was taken"
    );
    assert_eq!(
        apps[4].add("::ffff:0:6810:101"),
        "[::ffff:0:6810:101] is on the global allow list, no action was taken"
    );
    // Nor does the writer promote it, however a shard's batch names it.
    let batch = server.promote(&["64:ff9b::6810:102", "64:ff9b::808:808"], &[]);
    assert_eq!(
        (&batch["allowed"], &batch["added"]),
        (&json!(1), &json!(1)),
        "the writer weighs a promoted IPv6 address as the IPv4 address it carries: {batch}"
    );
    // Not carrying an allowed address, the form is itself, and is promoted as itself.
    reported_by(&server, &apps[..4], "64:ff9b::5206:1");
    assert_eq!(
        apps[4].check("64:ff9b::5206:1"),
        "[64:ff9b::5206:1] is on global greylist"
    );
}
