//! Bounded work per request and safe settings: a body is refused at its limit
//! however it is sent, answers are never cached, unsafe settings are refused,
//! and a flood of logins is cut off.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{
    send, status_before_the_body_ends, Encoding, Mode, Server, TestApp, ADMIN_TOKEN, INTERNAL_ERROR,
};

#[test]
fn a_chunked_body_is_refused_at_the_limit_before_it_ends() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (bearer, admin) = (
        format!("Bearer {}", app.token),
        format!("Bearer {ADMIN_TOKEN}"),
    );
    let urlencoded = ("Content-Type", "application/x-www-form-urlencoded");
    // Each route with a little more than its limit: 16 KiB for logins and holders,
    // 64 KiB for a CrowdSec engine's login, 1 MiB for list edits.
    type Route<'a> = (&'a str, Vec<(&'a str, &'a str)>, usize);
    let routes: [Route; 4] = [
        (
            "/v2/authentication/login/license",
            vec![("Content-Type", "application/json")],
            20 << 10,
        ),
        (
            "/api/addIpToGreylist",
            vec![urlencoded, ("Authorization", &bearer)],
            20 << 10,
        ),
        (
            "/v1/watchers/login",
            vec![("Content-Type", "application/json")],
            68 << 10,
        ),
        (
            "/admin/global-list",
            vec![
                ("Content-Type", "application/json"),
                ("Authorization", &admin),
            ],
            (1 << 20) + (4 << 10),
        ),
    ];
    for (path, headers, total) in routes {
        // No Content-Length, and the status line is awaited before the body ends: only a
        // server that reads the body as a stream and stops at the limit answers in time.
        let status = status_before_the_body_ends(
            &server.base,
            path,
            &headers,
            (b'x', total),
            Duration::from_secs(20),
        );
        assert_eq!(
            status.as_deref(),
            Some("HTTP/1.1 413 Payload Too Large"),
            "{path}"
        );
    }
    assert_eq!(
        app.check("8.8.4.4"),
        "[8.8.4.4] is currently not on global greylist",
        "the server goes on answering"
    );
}

#[test]
fn a_multipart_boundary_over_70_characters_carries_no_field() {
    let app = TestApp::new();
    for (length, expected) in [
        (70, "[8.8.8.8] is currently not on global greylist"),
        (71, "[] is invalid"),
    ] {
        let boundary = "b".repeat(length);
        let body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"ip\"\r\n\r\n8.8.8.8\r\n--{boundary}--\r\n");
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let resp = app.post(
            "/api/checkIpOnGreylist",
            Mode::Json,
            &[("Content-Type", content_type)],
            body.as_bytes(),
        );
        assert_eq!(resp.result(), expected, "a boundary of {length} characters");
    }
}

#[test]
fn no_answer_may_be_cached_or_sniffed() {
    let server = Server::shared();
    let app = TestApp::new();
    let admin = [("Authorization", format!("Bearer {ADMIN_TOKEN}"))];
    let answers = [
        ("login", server.login(&app.license_key)),
        (
            "license creation",
            send(
                "POST",
                &format!("{}/admin/licenses", server.base),
                &admin,
                None,
            ),
        ),
        (
            "holder answer",
            app.call(
                "/api/checkIpOnGreylist",
                "8.8.8.8",
                Encoding::Multipart,
                Mode::Json,
            ),
        ),
        ("refused login", server.login("not-a-key")),
        (
            "unknown path",
            send("GET", &format!("{}/nowhere", server.base), &[], None),
        ),
    ];
    for (what, resp) in answers {
        assert_eq!(resp.header("Cache-Control"), Some("no-store"), "{what}");
        assert_eq!(
            resp.header("X-Content-Type-Options"),
            Some("nosniff"),
            "{what}"
        );
    }
}

#[test]
fn unsafe_settings_refuse_every_request_with_a_logged_500() {
    let cases = [
        (
            "JWT_SECRET",
            "0123456789abcdef0123456789abcde",
            "the secret JWT_SECRET must be at least 32 bytes",
        ),
        (
            "TOKEN_LIFETIME_SECONDS",
            "99999999999999",
            "TOKEN_LIFETIME_SECONDS must be whole seconds from 60 to 2592000",
        ),
        (
            "DAILY_ADDITIONS",
            "lots",
            "DAILY_ADDITIONS must be a whole number, not \\\"lots\\\"",
        ),
    ];
    for (name, value, logged) in cases {
        let server = Server::own(&[(name, value)]);
        let login = server.login("any-key");
        assert_eq!(
            (login.status, login.json()),
            (500, json!({ "message": INTERNAL_ERROR })),
            "{name}"
        );
        assert_eq!(
            server.admin("POST", "/admin/licenses", None).status,
            500,
            "{name}"
        );
        let log = server.log_once(|line| line.contains(logged));
        assert!(
            log.contains(logged),
            "{name}: the log names the setting:\n{log}"
        );
        server.kill();
    }
}

#[test]
fn a_flood_of_logins_from_one_address_is_refused_with_429() {
    // Its own server: the flood must not lock the other tests out of logging in.
    let server = Server::own(&[]);
    let (_, key) = server.create_license();
    // The limit counts per fixed 60-second window, and the flood may straddle two.
    let (answered, refusal) = (0..300)
        .find_map(|n| {
            Some(server.login("not-a-key"))
                .filter(|resp| resp.status != 401)
                .map(|resp| (n, resp))
        })
        .expect("300 logins in a row, and none refused");
    assert!(
        (100..=200).contains(&answered),
        "refused after {answered} logins, not after 100 in a window"
    );
    assert_eq!(refusal.status, 429, "{}", refusal.body);
    assert_eq!(refusal.header("Retry-After"), Some("60"));
    assert_eq!(
        refusal.json(),
        json!({ "message": "Too many requests: try again in 60 seconds" })
    );
    assert_eq!(
        server.login(&key).status,
        429,
        "a valid key too: the limit comes before the key is looked up"
    );
    server.kill();
}

#[test]
fn a_flood_of_feed_polls_with_one_token_is_refused_with_429_and_others_poll_on() {
    let app = TestApp::new();
    let token = |app: &TestApp| {
        let created = app.create_feed_token();
        format!("Bearer {}", created.json()["feedToken"].as_str().unwrap())
    };
    let (flooding, other) = (token(&app), token(&app));
    // The limit counts per fixed 60-second window, and the flood may straddle two.
    let (answered, refusal) = (0..400)
        .find_map(|n| {
            Some(app.feed_with(&flooding, "", None))
                .filter(|resp| resp.status != 200)
                .map(|resp| (n, resp))
        })
        .expect("400 polls in a row, and none refused");
    assert!(
        (120..=240).contains(&answered),
        "refused after {answered} polls, not after 120 in a window: room for one a second"
    );
    assert_eq!(refusal.status, 429, "{}", refusal.body);
    assert_eq!(refusal.header("Retry-After"), Some("60"));
    assert_eq!(
        app.feed_with(&other, "", None).status,
        200,
        "the limit is the token's, not the holder's"
    );
}

#[test]
fn production_publishes_no_workers_dev_address() {
    let config =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/wrangler.toml")).unwrap();
    assert!(
        config
            .lines()
            .any(|line| line.trim() == "workers_dev = false"),
        "wrangler.toml must set workers_dev = false"
    );
}
