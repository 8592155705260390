//! Unknown paths, wrong methods, oversized and odd bodies: each a clear answer, never a 5xx.

use serde_json::json;

use crate::helpers::{send, Mode, Server, TestApp};

#[test]
fn unknown_paths_are_404_in_the_requested_mode() {
    let base = &Server::shared().base;
    let json_mode = send(
        "POST",
        &format!("{base}/api/nope?result_mode=json"),
        &[],
        Some(b""),
    );
    assert_eq!(json_mode.status, 404);
    assert_eq!(
        json_mode.json(),
        json!({ "result": "Not found: no such endpoint" })
    );
    let plain = send("GET", &format!("{base}/nope"), &[], None);
    assert_eq!(
        (plain.status, plain.body.as_str()),
        (404, "Not found: no such endpoint")
    );
}

#[test]
fn the_dashboard_is_served_beside_the_api_with_a_policy_that_allows_only_its_own_files() {
    let base = &Server::shared().base;
    for path in ["/", "/admin/"] {
        let page = send("GET", &format!("{base}{path}"), &[], None);
        assert_eq!(page.status, 200, "{path}");
        assert!(
            page.header("Content-Type")
                .unwrap()
                .starts_with("text/html")
                && page.body.contains("<script type=\"module\""),
            "{path}"
        );
        let policy = page.header("Content-Security-Policy").unwrap_or_default();
        assert!(
            policy.contains("default-src 'none'")
                && policy.contains("script-src 'self'")
                && !policy.contains("unsafe"),
            "{policy}"
        );
    }
    assert_eq!(
        send("GET", &format!("{base}/admin"), &[], None).status,
        307,
        "to /admin/"
    );
    assert_eq!(
        send("GET", &format!("{base}/_headers"), &[], None).status,
        404,
        "the headers file is not served"
    );
    assert_eq!(
        send("GET", &format!("{base}/admin/status"), &[], None).status,
        401,
        "API paths under /admin/ still reach the Worker"
    );
}

#[test]
fn other_methods_are_405_with_allow() {
    let base = &Server::shared().base;
    for method in ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let resp = send(
            method,
            &format!("{base}/api/addIpToGreylist?result_mode=json"),
            &[],
            None,
        );
        assert_eq!(resp.status, 405, "{method}");
        assert_eq!(resp.header("Allow"), Some("POST"));
        assert_eq!(
            resp.json(),
            json!({ "result": "Method not allowed: use POST" })
        );
    }
    let resp = send(
        "POST",
        &format!("{base}/admin/licenses/lic_000000000000000000000000"),
        &[],
        None,
    );
    assert_eq!(
        (resp.status, resp.header("Allow")),
        (405, Some("GET, PATCH, DELETE"))
    );
    let resp = send("DELETE", &format!("{base}/admin/global-list"), &[], None);
    assert_eq!(
        (resp.status, resp.header("Allow")),
        (405, Some("POST, PUT, GET"))
    );
    assert_eq!(
        resp.json(),
        json!({ "message": "Method not allowed: use POST, PUT, GET" })
    );
}

#[test]
fn bodies_over_16_kib_are_413() {
    let app = TestApp::new();
    let mut body = b"ip=8.8.8.8&pad=".to_vec();
    body.resize(16 * 1024 + 1, b'x');
    let resp = app.post(
        "/api/addIpToGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        &body,
    );
    assert_eq!(resp.status, 413);
    assert_eq!(
        resp.json(),
        json!({ "result": "Payload too large: the body may be at most 16 KiB" })
    );
    body.truncate(16 * 1024);
    let resp = app.post(
        "/api/addIpToGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        &body,
    );
    assert_eq!(
        resp.result(),
        "[8.8.8.8] has been added to greylist",
        "exactly 16 KiB is accepted"
    );
}

#[test]
fn the_first_of_repeated_ip_fields_wins() {
    let app = TestApp::new();
    let resp = app.post(
        "/api/addIpToGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        b"ip=2.2.2.2&ip=3.3.3.3",
    );
    assert_eq!(resp.result(), "[2.2.2.2] has been added to greylist");
    assert_eq!(
        app.check("3.3.3.3"),
        "[3.3.3.3] is currently not on global greylist"
    );
}

#[test]
fn bodies_that_carry_no_ip_field_are_invalid_not_errors() {
    let app = TestApp::new();
    let cases: [(&str, &[u8]); 5] = [
        ("application/json", br#"{"ip":"8.8.8.8"}"#),
        ("text/plain", b"ip=8.8.8.8"),
        (
            "multipart/form-data; boundary=xyz",
            b"--xyz\r\nContent-Disposition: form-data; name=\"ip\"\r\n\r\n8.8.8.8",
        ),
        ("multipart/form-data", b"garbage"),
        ("application/x-www-form-urlencoded", b""),
    ];
    for (content_type, body) in cases {
        let resp = app.post(
            "/api/checkIpOnGreylist",
            Mode::Json,
            &[("Content-Type", content_type.into())],
            body,
        );
        assert_eq!(resp.result(), "[] is invalid", "{content_type}");
    }
    let non_utf8 = app.post(
        "/api/checkIpOnGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        b"ip=8.8.8.%FF",
    );
    assert_eq!(non_utf8.result(), "[8.8.8.\u{fffd}] is invalid");
    let long = format!("ip={}", "9".repeat(10_000));
    let resp = app.post(
        "/api/checkIpOnGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        long.as_bytes(),
    );
    assert_eq!(
        resp.result(),
        format!("[{}] is invalid", "9".repeat(10_000))
    );
}
