//! `POST /v1/usage-metrics`: what CrowdSec's bouncers and engines report of
//! themselves, as the Local API takes it. A bouncer's report (the body
//! crowdsec-firewall-bouncer 0.0.30 posts) kept on its feed token and shown to
//! its holder and in the license's picture; an engine's on its machine; a body
//! that does not parse refused with 400 before the key is looked up; a missing,
//! malformed, unknown or revoked key 403 as the stream answers; the body
//! bounded; reports counted in the token's poll limit as they arrive, each one
//! object call.

use std::time::Duration;

use serde_json::{json, Value};

use crate::costs::{count, spent};
use crate::helpers::{gzip, send, status_before_the_body_ends, Resp, Server, TestApp};

const BOUNCER: &str = "crowdsec-firewall-bouncer/v0.0.30-debian-pragmatic-amd64";
/// When the bouncer says it started: 2026-11-21 12:00:00 UTC.
const STARTED: u64 = 1_795_262_400;

/// The body crowdsec-firewall-bouncer 0.0.30 posts every 15 minutes, as Go's
/// `encoding/json` writes the Local API's `AllMetrics` (go-cs-bouncer's metrics
/// provider, the bouncer's updater): `log_processors` null, no `name`, each
/// counter's change since the previous report by origin and IP family.
fn firewall_bouncer_report(packets: [u64; 2], bytes: [u64; 2]) -> Value {
    let dropped = |unit: &str, family: &str, value: u64| {
        json!({
            "labels": { "ip_type": family, "origin": "greylist" },
            "name": "dropped",
            "unit": unit,
            "value": value
        })
    };
    json!({
        "log_processors": null,
        "remediation_components": [{
            "feature_flags": [],
            "metrics": [{
                "items": [
                    {
                        "labels": { "ip_type": "ipv4", "origin": "greylist" },
                        "name": "active_decisions",
                        "unit": "ip",
                        "value": 3
                    },
                    dropped("byte", "ipv4", bytes[0]),
                    dropped("packet", "ipv4", packets[0]),
                    dropped("byte", "ipv6", bytes[1]),
                    dropped("packet", "ipv6", packets[1]),
                    {
                        "labels": { "ip_type": "ipv4" },
                        "name": "processed",
                        "unit": "packet",
                        "value": 90_000
                    }
                ],
                "meta": { "utc_now_timestamp": STARTED + 900, "window_size_seconds": 900 }
            }],
            "os": { "name": "debian", "version": "12" },
            "type": "crowdsec-firewall-bouncer",
            "utc_startup_timestamp": STARTED,
            "version": "v0.0.30-debian-pragmatic-amd64"
        }]
    })
}

/// A report sent with these headers, as the bouncer's client sends it.
fn report_with(server: &Server, headers: &[(&str, String)], body: &[u8]) -> Resp {
    let mut all = vec![
        ("User-Agent", BOUNCER.to_owned()),
        ("Content-Type", "application/json".to_owned()),
    ];
    all.extend(headers.iter().cloned());
    send(
        "POST",
        &format!("{}/v1/usage-metrics", server.base),
        &all,
        Some(body),
    )
}

/// A bouncer's report with its key.
fn report(server: &Server, key: &str, body: &Value) -> Resp {
    let key = [("X-Api-Key", key.to_owned())];
    report_with(server, &key, body.to_string().as_bytes())
}

/// A feed token's row, as its holder lists it.
fn token_row(app: &TestApp, id: &str) -> Value {
    let listed = app.get("/api/feedTokens");
    assert_eq!(listed.status, 200, "{}", listed.body);
    listed.json()["feedTokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|token| token["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

/// A key of a feed token's shape that no holder has.
fn made_up_key() -> String {
    format!("glf_{}", "0123456789abcdef".repeat(4))
}

/// The answer's JSON `message`, after checking its status.
fn refused(resp: &Resp, status: u16) -> String {
    assert_eq!(resp.status, status, "{}", resp.body);
    assert_eq!(resp.content_type, "application/json", "{}", resp.body);
    resp.json()["message"].as_str().unwrap().to_owned()
}

#[test]
fn a_firewall_bouncers_report_is_kept_on_its_token_and_shown_in_the_licenses_picture() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (id, key) = app.feed_token(json!({ "scope": "all" }));
    assert_eq!(
        token_row(&app, &id)["usage"],
        Value::Null,
        "before a report"
    );
    let first = report(
        &app.server,
        &key,
        &firewall_bouncer_report([80, 16], [5_120, 1_024]),
    );
    assert_eq!((first.status, first.body.as_str()), (201, ""));
    // The next a minute later, as a bouncer sends them (one within the minute
    // would wait for the minute's end: the next test).
    server.advance(60);
    let second = report(
        &app.server,
        &key,
        &firewall_bouncer_report([3, 1], [180, 60]),
    );
    assert_eq!(second.status, 201, "{}", second.body);
    let usage = token_row(&app, &id)["usage"].clone();
    assert_eq!(
        (
            &usage["type"],
            &usage["version"],
            &usage["os"],
            &usage["startedAt"],
            &usage["windowSeconds"]
        ),
        (
            &json!("crowdsec-firewall-bouncer"),
            &json!("v0.0.30-debian-pragmatic-amd64"),
            &json!("debian 12"),
            &json!("2026-11-21T12:00:00Z"),
            &json!(900)
        )
    );
    assert_eq!(
        usage["dropped"],
        json!({ "packets": 4, "bytes": 240 }),
        "the last report's, as reported"
    );
    let days = usage["days"].as_array().unwrap();
    assert_eq!(days.len(), 30);
    assert_eq!(
        (&days[29]["packets"], &days[29]["bytes"]),
        (&json!(100), &json!(6_384)),
        "today's reports added up"
    );
    assert!(days[..29].iter().all(|day| day["packets"] == 0));
    assert!(usage["reportedAt"].is_string());
    // The operator sees the same on the license's picture.
    let picture = app
        .server
        .admin("GET", &format!("/admin/licenses/{}", app.license), None);
    assert_eq!(picture.status, 200, "{}", picture.body);
    let shown = picture.json()["feedTokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|token| token["id"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(shown["usage"], usage);
}

#[test]
fn unknown_fields_are_ignored_and_a_body_that_does_not_parse_is_400_whatever_the_key() {
    let app = TestApp::new();
    let (_, key) = app.feed_token(json!({}));
    let mut extended = firewall_bouncer_report([1, 0], [60, 0]);
    extended["lapi"] = json!({ "anything": [1, 2, 3] });
    extended["remediation_components"][0]["last_pull"] = json!(STARTED);
    extended["remediation_components"][0]["future_field"] = json!({ "nested": true });
    assert_eq!(report(&app.server, &key, &extended).status, 201);
    let not_metrics = [
        b"not json".to_vec(),
        br#"{"remediation_components": [{"version": 30}]}"#.to_vec(),
        br#"{"remediation_components": [{"metrics": [{"items": [{"name": "dropped", "value": "1"}]}]}]}"#
            .to_vec(),
        br#"{"remediation_components": []}"#.to_vec(),
        br#"{"remediation_components": [{}, {}]}"#.to_vec(),
        br#"{"log_processors": [{"version": "v1.6.3"}]}"#.to_vec(),
    ];
    for body in &not_metrics {
        for key in [key.clone(), made_up_key()] {
            let key = [("X-Api-Key", key)];
            let answer = report_with(&app.server, &key, body);
            assert_eq!(
                answer.status, 400,
                "a body that does not parse is refused before its key is looked up: {}",
                answer.body
            );
            let message = refused(&answer, 400);
            assert!(
                message.starts_with("Bad request: the body"),
                "{}: {message}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

#[test]
fn a_missing_malformed_unknown_or_revoked_key_is_access_forbidden_as_on_the_stream() {
    let app = TestApp::new();
    let (id, key) = app.feed_token(json!({}));
    let body = firewall_bouncer_report([1, 0], [60, 0]);
    let forbidden = |resp: Resp| assert_eq!(refused(&resp, 403), "access forbidden");
    forbidden(report_with(&app.server, &[], body.to_string().as_bytes()));
    // A key of a shape never issued is refused before its body is even read.
    forbidden(report_with(
        &app.server,
        &[("X-Api-Key", "glf_x".to_owned())],
        b"not json",
    ));
    forbidden(report(&app.server, &made_up_key(), &body));
    assert_eq!(report(&app.server, &key, &body).status, 201);
    let revoked = send(
        "DELETE",
        &format!("{}/api/feedTokens/{id}", app.server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    forbidden(report(&app.server, &key, &body));
    // A license revoked: its object refuses at once, whatever an edge cache says.
    let other = TestApp::on(&app.server);
    let (_, other_key) = other.feed_token(json!({}));
    assert_eq!(report(&other.server, &other_key, &body).status, 201);
    let path = format!("/admin/licenses/{}", other.license);
    assert_eq!(other.server.admin("DELETE", &path, None).status, 204);
    forbidden(report(&other.server, &other_key, &body));
}

#[test]
fn a_report_is_bounded_in_size() {
    let app = TestApp::new();
    let (_, key) = app.feed_token(json!({}));
    let mut large = firewall_bouncer_report([1, 0], [60, 0]);
    large["remediation_components"][0]["padding"] = json!("x".repeat(257 * 1024));
    // Gzipped, so that it is refused as it streams in once it has been sent
    // whole: a plain body over its declared bound is refused before it is read,
    // and the client may meet a closed connection while it still writes.
    let gzipped = [
        ("X-Api-Key", key.clone()),
        ("Content-Encoding", "gzip".to_owned()),
    ];
    let large = gzip(large.to_string().as_bytes());
    let answer = report_with(&app.server, &gzipped, &large);
    assert_eq!(
        answer.status, 413,
        "a report past its bound is refused: {}",
        answer.body
    );
    let message = refused(&answer, 413);
    assert!(message.contains("256 KiB"), "{message}");
    // Sent without a length, it is refused as it passes the bound, before it ends.
    let headers = [
        ("X-Api-Key", key.as_str()),
        ("Content-Type", "application/json"),
    ];
    let status = status_before_the_body_ends(
        &app.server.base,
        "/v1/usage-metrics",
        &headers,
        (b'x', (256 << 10) + (4 << 10)),
        Duration::from_secs(20),
    );
    assert_eq!(status.as_deref(), Some("HTTP/1.1 413 Payload Too Large"));
}

#[test]
fn gzip_bombs_with_made_up_credentials_are_refused_at_the_limit_and_the_service_answers_on() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({}));
    let body = firewall_bouncer_report([1, 0], [60, 0]);
    // 160 MiB of zeros gzipped into about 160 KB: under the limit as sent, and
    // in several chunks, refused in the first.
    let bomb = gzip(&vec![0; 160 << 20]);
    assert!(bomb.len() < 256 << 10, "{} bytes", bomb.len());
    for credential in [
        ("X-Api-Key", made_up_key()),
        ("Authorization", "Bearer made-up".to_owned()),
    ] {
        for _ in 0..3 {
            let headers = [credential.clone(), ("Content-Encoding", "gzip".to_owned())];
            let answer = report_with(&server, &headers, &bomb);
            assert_eq!(
                answer.status, 413,
                "a gzip bomb was inflated past the limit of a report: {}",
                answer.body
            );
            let next = report(&server, &key, &body);
            assert_eq!(
                next.status, 201,
                "the request after a refused gzip bomb was lost: {}",
                next.body
            );
        }
    }
}

#[test]
fn a_flood_of_reports_from_one_client_is_refused_with_429_before_its_body_is_read() {
    let server = Server::own(&[]);
    // Each with a made-up key of its own, so that no key's budget binds first.
    let from = |client: &str, n: u32| {
        let headers = [
            ("X-Api-Key", format!("glf_{n:064x}")),
            ("CF-Connecting-IP", client.to_owned()),
        ];
        report_with(&server, &headers, b"{]")
    };
    // Bodies that do not parse, with a key of the right shape: each is read
    // before the key is proved, so its client is counted first. The limit
    // counts per fixed 60-second window, and the flood may straddle two.
    let limited = (0..1_300).find(|&n| from("198.18.40.1", n).status == 429);
    let answered = limited.expect("1 300 reports from one client, and none refused with 429");
    assert!(
        (600..=1200).contains(&answered),
        "refused after {answered} reports, not after 600 in a window"
    );
    assert_eq!(
        from("198.18.40.2", 0).status,
        400,
        "another client is counted on its own"
    );
}

#[test]
fn reports_share_the_tokens_poll_limit_counted_as_they_arrive_and_each_is_one_object_call() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({}));
    let body = firewall_bouncer_report([2, 0], [120, 0]);
    // Warm: the isolate holds the token's record and the license's standing.
    assert_eq!(report(&server, &key, &body).status, 201);
    let one = spent(&app, || {
        assert_eq!(report(&server, &key, &body).status, 201);
    });
    assert_eq!(count(&one, "durableObjectRequests"), 1, "{one}");
    assert_eq!(count(&one, "kvWrites"), 0, "{one}");
    // A report is counted in its token's budget as it arrives, before its
    // body is read (the edge counts what the management Worker answers):
    // bodies that do not parse spend it too, and past 120 a minute (the flood
    // may straddle two windows) one is refused with 429 before it is read.
    let key_header = [("X-Api-Key", key.clone())];
    let mut answered = Vec::new();
    let first_refused = (0..250).find(|_| {
        let status = report_with(&server, &key_header, b"{]").status;
        answered.push(status);
        status == 429
    });
    let first_refused = first_refused.unwrap_or_else(|| {
        panic!("reports that do not parse are not counted in the token's budget: {answered:?}")
    });
    assert!(
        answered[..first_refused]
            .iter()
            .all(|&status| status == 400),
        "{answered:?}"
    );
    assert!(
        first_refused >= 117,
        "refused after {first_refused} reports"
    );
    assert_eq!(report(&server, &key, &body).status, 429);
    let stream = send(
        "GET",
        &format!("{}/v1/decisions/stream", server.base),
        &[("X-Api-Key", key)],
        None,
    );
    assert_eq!(stream.status, 429, "the same limit as the token's pulls");
}

/// What a feed token's bouncer dropped today, as its holder sees it.
fn dropped_today(app: &TestApp, id: &str) -> Value {
    let usage = token_row(app, id)["usage"].clone();
    usage["days"][29]["packets"].clone()
}

#[test]
fn reports_within_a_minute_are_one_write_the_first_at_once_the_rest_at_the_minutes_end() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (id, key) = app.feed_token(json!({}));
    // At a minute's first second, so that the reports below share it.
    server.advance(60 - server.now() % 60);
    let minute_ends = server.now() - server.now() % 60 + 60;
    assert_eq!(
        report(&server, &key, &firewall_bouncer_report([2, 0], [120, 0])).status,
        201
    );
    assert_eq!(
        dropped_today(&app, &id),
        2,
        "the minute's first report is not shown at once"
    );
    let more = firewall_bouncer_report([3, 1], [300, 100]);
    let gathered = spent(&app, || {
        for _ in 0..4 {
            assert_eq!(report(&server, &key, &more).status, 201);
        }
    });
    assert_eq!(
        count(&gathered, "rowsWritten"),
        0,
        "reports after the minute's first were each written: {gathered}"
    );
    assert_eq!(dropped_today(&app, &id), 2, "gathered, not yet written");
    // The alarm the object set for the minute's end writes them as one.
    let alarm = server.holder_alarm_at(&app.license);
    assert!(
        alarm.is_some_and(|at| at <= minute_ends),
        "no alarm set for the minute's end ({minute_ends}): {alarm:?}"
    );
    server.advance(60);
    let written = spent(&app, || server.run_holder_alarm(&app.license));
    assert!(count(&written, "rowsWritten") > 0, "{written}");
    assert_eq!(
        dropped_today(&app, &id),
        2 + 4 * 4,
        "what the gathered reports dropped was lost"
    );
}

#[test]
fn a_holder_whose_bouncers_only_report_has_its_usage_days_cut_by_its_own_alarm() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({}));
    let body = firewall_bouncer_report([2, 0], [120, 0]);
    assert_eq!(report(&server, &key, &body).status, 201);
    // Nothing else: no entry, no history. The report set the daily alarm.
    let daily = server.holder_alarm_at(&app.license);
    assert!(
        daily.is_some_and(|at| at <= server.now() + 86_400),
        "a holder whose only activity is usage reports has no alarm: {daily:?}"
    );
    server.advance(86_400);
    server.run_holder_alarm(&app.license);
    assert!(
        server.holder_alarm_at(&app.license).is_some(),
        "the daily alarm stopped while usage days were kept"
    );
    // Past the window, the alarm cuts the day's row; nothing else is written.
    server.advance(31 * 86_400);
    let cut = spent(&app, || server.run_holder_alarm(&app.license));
    assert_eq!(
        count(&cut, "rowsWritten"),
        1,
        "the alarm did not cut the usage day past the window: {cut}"
    );
    let again = spent(&app, || server.run_holder_alarm(&app.license));
    assert_eq!(count(&again, "rowsWritten"), 0, "{again}");
}

/// A machine of `app`'s, logged in: its id and its token.
fn logged_in_machine(app: &TestApp) -> (String, String) {
    let made = send(
        "POST",
        &format!("{}/api/machines", app.server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let login = json!({
        "machine_id": made["machineId"],
        "password": made["password"],
        "scenarios": ["crowdsecurity/ssh-bf"],
    });
    let logged_in = send(
        "POST",
        &format!("{}/v1/watchers/login", app.server.base),
        &[("Content-Type", "application/json".to_owned())],
        Some(login.to_string().as_bytes()),
    );
    assert_eq!(logged_in.status, 200, "{}", logged_in.body);
    (
        made["id"].as_str().unwrap().to_owned(),
        logged_in.json()["token"].as_str().unwrap().to_owned(),
    )
}

/// The body an engine from CrowdSec 1.6.3 posts at start and every 30 minutes.
fn engine_report() -> Value {
    json!({
        "log_processors": [{
            "datasources": { "file": 2, "journalctl": 1 },
            "feature_flags": [],
            "hub_items": {
                "parsers": [{ "name": "crowdsecurity/sshd-logs", "status": "official", "version": "2.9" }],
                "scenarios": [{ "name": "crowdsecurity/ssh-bf", "status": "official", "version": "0.3" }]
            },
            "metrics": [{
                "items": [{
                    "labels": { "datasource_type": "file", "source": "/var/log/auth.log" },
                    "name": "read",
                    "unit": "line",
                    "value": 1_204
                }],
                "meta": { "utc_now_timestamp": STARTED + 1_800, "window_size_seconds": 1_800 }
            }],
            "os": { "name": "ubuntu", "version": "24.04" },
            "utc_startup_timestamp": STARTED,
            "version": "v1.6.3-debian-pragmatic-amd64"
        }],
        "remediation_components": null
    })
}

#[test]
fn an_engines_report_is_kept_on_its_machine_with_its_token() {
    let app = TestApp::new();
    let (id, token) = logged_in_machine(&app);
    let bearer = [("Authorization", format!("Bearer {token}"))];
    let sent = report_with(&app.server, &bearer, engine_report().to_string().as_bytes());
    assert_eq!((sent.status, sent.body.as_str()), (201, ""));
    let listed = app.get("/api/machines");
    let machine = listed.json()["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|machine| machine["id"] == id.as_str())
        .cloned()
        .unwrap();
    let usage = &machine["usage"];
    assert_eq!(
        (
            &usage["version"],
            &usage["os"],
            &usage["startedAt"],
            &usage["datasources"]
        ),
        (
            &json!("v1.6.3-debian-pragmatic-amd64"),
            &json!("ubuntu 24.04"),
            &json!("2026-11-21T12:00:00Z"),
            &json!(3)
        )
    );
    // An engine's token with a bouncer's body: not its part.
    let bouncers = firewall_bouncer_report([1, 0], [60, 0]).to_string();
    let message = refused(&report_with(&app.server, &bearer, bouncers.as_bytes()), 400);
    assert!(message.contains("no log processor"), "{message}");
    // A token that is no machine's: the machine routes' own 401.
    let forged = [("Authorization", "Bearer not.a.token".to_owned())];
    let body = engine_report().to_string();
    refused(&report_with(&app.server, &forged, body.as_bytes()), 401);
    // Once the machine is revoked, its object refuses its reports.
    let revoked = send(
        "DELETE",
        &format!("{}/api/machines/{id}", app.server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    refused(&report_with(&app.server, &bearer, body.as_bytes()), 401);
}
