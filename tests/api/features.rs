//! Beyond check, add and remove: list, expiry, comments, history, quota and outcome headers, OpenAPI.
use serde_json::{json, Value};

use crate::helpers::{send, Encoding, Mode, Server, TestApp};

fn ips(page: &Value) -> Vec<&str> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["ip"].as_str().unwrap())
        .collect()
}

#[test]
fn list_pages_newest_first_with_cursor_prefix_and_plain_mode() {
    // Its own server: three adds a second apart, on a clock it moves.
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("203.0.114.1");
    server.advance(1);
    app.add("203.0.114.2");
    server.advance(1);
    app.add("198.252.206.1");

    let first = app.list(&[("limit", "2")]);
    assert_eq!(first["result"], "3 addresses");
    assert_eq!(ips(&first), ["198.252.206.1", "203.0.114.2"]);
    let cursor = first["cursor"].as_str().expect("a next page");
    let second = app.list(&[("limit", "2"), ("cursor", cursor)]);
    assert_eq!(ips(&second), ["203.0.114.1"]);
    assert_eq!(second["cursor"], Value::Null);

    let filtered = app.list(&[("prefix", "203.0.")]);
    assert_eq!(filtered["result"], "2 addresses");
    assert_eq!(ips(&filtered), ["203.0.114.2", "203.0.114.1"]);

    let plain = app.form("/api/listChallengeList", &[("limit", "2")], Mode::Plain);
    assert_eq!(plain.content_type, "text/plain; charset=utf-8");
    assert_eq!(plain.body, "198.252.206.1\n203.0.114.2\n");
    assert_eq!(plain.header("X-Greylist-Cursor"), Some(cursor));

    for bad in [
        ("limit", "1001"),
        ("limit", "0"),
        ("cursor", "bogus"),
        ("prefix", "203.%"),
    ] {
        let resp = app.form("/api/listGreylist", &[bad], Mode::Json);
        assert_eq!(resp.status, 400, "{bad:?}");
        assert!(resp.json()["result"]
            .as_str()
            .unwrap()
            .starts_with("Bad request: "));
    }
    assert_eq!(
        TestApp::on(&server).list(&[])["result"],
        "0 addresses",
        "another holder's list is their own"
    );
}

#[test]
fn entries_carry_their_comment_and_expiry() {
    let app = TestApp::new();
    assert_eq!(
        app.add_with(&[
            ("ip", "203.0.114.10"),
            ("comment", "scanner, ticket #42"),
            ("ttl", "3600")
        ])
        .result(),
        "[203.0.114.10] has been added to greylist"
    );
    assert_eq!(
        app.add_with(&[
            ("ip", "203.0.114.11"),
            ("expiresAt", "2099-01-01T00:00:00Z")
        ])
        .status,
        400,
        "over a year away"
    );
    let entry = &app.list(&[])["entries"][0];
    assert_eq!(entry["comment"], "scanner, ticket #42");
    let added = chrono_seconds(entry["addedAt"].as_str().unwrap());
    assert_eq!(
        chrono_seconds(entry["expiresAt"].as_str().unwrap()) - added,
        3600
    );

    let again = app.add_with(&[("ip", "203.0.114.10"), ("comment", "other"), ("ttl", "60")]);
    assert_eq!(again.result(), "[203.0.114.10] is already on your greylist");
    assert_eq!(
        app.list(&[])["entries"][0],
        *entry,
        "re-adding leaves the entry as it was"
    );

    let long = "x".repeat(256);
    let refused = app.add_with(&[("ip", "203.0.114.12"), ("comment", &long)]);
    assert_eq!(
        (refused.status, refused.json()),
        (
            400,
            json!({ "result": "Bad request: comment must be at most 255 characters" })
        )
    );
    assert_eq!(
        app.add_with(&[("ip", "203.0.114.12"), ("ttl", "59")])
            .status,
        400
    );
    assert_eq!(
        app.check("203.0.114.12"),
        "[203.0.114.12] is currently not on global greylist"
    );
}

/// Seconds since the epoch of an RFC 3339 UTC timestamp as the service writes them.
fn chrono_seconds(text: &str) -> u64 {
    greylist::domain::time::UnixTime::parse_rfc3339(text)
        .unwrap()
        .0
}

#[test]
fn expired_entries_are_gone_for_every_operation_and_swept_by_the_alarm() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let ips = [
        "203.0.114.20",
        "203.0.114.21",
        "203.0.114.22",
        "203.0.114.23",
    ];
    for ip in ips {
        assert_eq!(
            app.add_with(&[("ip", ip), ("ttl", "60")]).result(),
            format!("[{ip}] has been added to greylist")
        );
    }
    let listed = app.list(&[]);
    assert_eq!(listed["result"], "4 addresses");
    // The alarm that sweeps them is set for the first expiry, whatever touches them.
    let first_expiry = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let at = entry["expiresAt"].as_str().unwrap();
            chrono::DateTime::parse_from_rfc3339(at)
                .unwrap()
                .timestamp() as u64
        })
        .min()
        .unwrap();
    assert_eq!(
        server.holder_alarm_at(&app.license),
        Some(first_expiry),
        "an alarm stands for the first expiry"
    );
    // Real time goes on beside the moves, so the margin is generous; the second itself is
    // tested natively (`store::holder::list::tests`).
    server.advance(50);
    assert_eq!(
        app.list(&[])["result"],
        "4 addresses",
        "ten seconds before their expiry"
    );
    server.advance(10);

    assert_eq!(
        app.check(ips[0]),
        format!("[{}] is currently not on global greylist", ips[0])
    );
    assert_eq!(
        app.remove(ips[1]),
        format!("[{}] is not on greylist", ips[1])
    );
    assert_eq!(
        app.add(ips[2]),
        format!("[{}] has been added to greylist", ips[2])
    );
    assert_eq!(app.list(&[])["result"], "1 address");
    let expired = |history: &Value| -> Vec<String> {
        let entries = history["entries"].as_array().unwrap().iter();
        entries
            .filter(|e| e["change"] == "expired")
            .map(|e| e["ip"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        !expired(&app.history()).contains(&ips[3].to_owned()),
        "nothing touched the fourth entry yet"
    );
    server.run_holder_alarm(&app.license);
    let history = app.history();
    let expired_ips = expired(&history);
    assert!(
        expired_ips.contains(&ips[3].to_owned()),
        "the alarm swept the untouched entry: {history}"
    );
    assert_eq!(expired_ips.len(), 4, "each expiry recorded once: {history}");
    // With nothing left to expire, the next alarm tidies the history a day on.
    let next = server.holder_alarm_at(&app.license);
    assert!(
        next.is_some_and(|at| at >= first_expiry + 86_400 - 60),
        "the next alarm, a day on: {next:?}"
    );
}

#[test]
fn history_records_changes_refusals_and_the_client() {
    let app = TestApp::on(&Server::limited());
    for n in 1..=4 {
        app.add(&format!("203.0.114.{}", 30 + n));
    }
    app.remove("203.0.114.31");
    app.check("203.0.114.32");
    let history = app.history();
    assert_eq!(history["result"], "5 changes");
    let changes: Vec<(&str, &str)> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["change"].as_str().unwrap(), e["ip"].as_str().unwrap()))
        .collect();
    assert_eq!(
        changes,
        [
            ("removed", "203.0.114.31"),
            ("limit_refused", "203.0.114.34"),
            ("added", "203.0.114.33"),
            ("added", "203.0.114.32"),
            ("added", "203.0.114.31")
        ]
    );
    let client = &history["entries"][0]["client"];
    // Miniflare's entry worker sets CF-Connecting-IP to the caller's loopback address.
    assert!(
        client
            .as_str()
            .is_some_and(|c| c.parse::<std::net::IpAddr>().is_ok()),
        "{client}"
    );

    let plain = app.form("/api/challengeListHistory", &[("limit", "1")], Mode::Plain);
    let line = plain.body.trim_end();
    assert!(line.contains(" removed 203.0.114.31 "), "{line}");
    assert!(plain.header("X-Greylist-Cursor").is_some());
}

#[test]
fn add_and_remove_answers_carry_the_days_quota() {
    let app = TestApp::on(&Server::limited());
    let added = app.call(
        "/api/addIpToGreylist",
        "203.0.114.40",
        Encoding::Multipart,
        Mode::Json,
    );
    assert_eq!(
        added.header("RateLimit-Policy"),
        Some("\"additions\";q=3;w=86400, \"removals\";q=2;w=86400")
    );
    let remaining = added.header("RateLimit").unwrap();
    assert!(
        remaining.starts_with("\"additions\";r=2;t=")
            && remaining.contains(", \"removals\";r=2;t="),
        "{remaining}"
    );
    let removed = app.call(
        "/api/deleteIpFromGreylist",
        "203.0.114.40",
        Encoding::Multipart,
        Mode::Json,
    );
    assert!(removed
        .header("RateLimit")
        .unwrap()
        .contains("\"removals\";r=1;t="));
    let check = app.call(
        "/api/checkIpOnGreylist",
        "203.0.114.40",
        Encoding::Multipart,
        Mode::Json,
    );
    assert_eq!(check.header("RateLimit"), None, "check costs nothing");
}

#[test]
fn every_answer_names_its_outcome_in_a_header() {
    let app = TestApp::new();
    let server = Server::shared();
    let global = crate::helpers::unique_ip();
    let _global = server.listed("global-list", &[&global]);
    let _allowed = server.listed("allow-list", &["104.200.0.0/24"]);
    let outcome = |path: &str, ip: &str| {
        app.call(path, ip, Encoding::Multipart, Mode::Plain)
            .header("X-Greylist-Outcome")
            .map(str::to_owned)
    };
    let (check, add, remove) = (
        "/api/checkIpOnGreylist",
        "/api/addIpToGreylist",
        "/api/deleteIpFromGreylist",
    );
    let expected = [
        (check, "203.0.114.50", "not_listed"),
        (add, "203.0.114.50", "added"),
        (add, "203.0.114.50", "already_personal"),
        (check, "203.0.114.50", "listed_personal"),
        (remove, "203.0.114.50", "removed"),
        (remove, "203.0.114.50", "not_on_list"),
        (check, global.as_str(), "listed_global"),
        (add, global.as_str(), "already_global"),
        (check, "nope", "invalid"),
        (check, "10.1.1.1", "private"),
        (check, "104.200.0.5", "allow_listed"),
    ];
    for (path, ip, code) in expected {
        assert_eq!(outcome(path, ip).as_deref(), Some(code), "{path} {ip}");
    }
    let limited = TestApp::on(&Server::limited());
    for n in 1..=3 {
        limited.add(&format!("203.0.114.{}", 60 + n));
    }
    let refused = limited.call(add, "203.0.114.64", Encoding::Multipart, Mode::Json);
    assert_eq!(refused.header("X-Greylist-Outcome"), Some("limit_reached"));
    let unauthorized = send("POST", &format!("{}{check}", server.base), &[], Some(b""));
    assert_eq!(
        unauthorized.header("X-Greylist-Outcome"),
        Some("unauthorized")
    );
}

/// A static asset, outside the Worker's module: cached at the edge and revalidated
/// by its ETag, with the same protection headers as the dashboard's files.
#[test]
fn the_openapi_document_is_served() {
    let resp = send(
        "GET",
        &format!("{}/openapi.json", Server::shared().base),
        &[],
        None,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(
        resp.content_type.starts_with("application/json"),
        "{}",
        resp.content_type
    );
    assert!(resp.header("ETag").is_some());
    assert_eq!(resp.header("X-Content-Type-Options"), Some("nosniff"));
    let doc = resp.json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/addIpToGreylist"]["post"].is_object());
}
