//! Revocation in one step: the license's record first, which every path consults
//! within the bound (feed tokens included), then the holder's object, told by the
//! revocations' object, with retries when telling it fails; a login asks the
//! holder's object, which KV's caches cannot delay.

use serde_json::Value;

use crate::helpers::*;

fn revoke(server: &Server, license: &str) -> Resp {
    server.admin("DELETE", &format!("/admin/licenses/{license}"), None)
}

fn hook(server: &Server, path: &str) -> Resp {
    let resp = send("POST", &format!("{}{path}", server.base), &[], None);
    assert_eq!(resp.status, 200, "{path}: {}", resp.body);
    resp
}

#[test]
fn a_revocation_whose_notice_fails_still_refuses_feed_tokens_and_is_told_later() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("82.0.0.1");
    let token = app.create_feed_token().json()["feedToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let feed = || app.feed_with(&format!("Bearer {token}"), "", None);
    assert_eq!(feed().status, 200);

    hook(&server, "/__test/revocations/fail-next-notice");
    assert_eq!(
        revoke(&server, &app.license).status,
        204,
        "the revocation is in force; telling the holder's object is retried"
    );
    let refused = feed();
    assert_eq!(
        (refused.status, refused.body.as_str()),
        (401, UNAUTHORIZED),
        "the feed token dies with its license though the holder's object was not told"
    );
    assert_eq!(
        app.check_with(Some(format!("Bearer {}", app.token)), Mode::Json)
            .status,
        401
    );

    let pending = |resp: Resp| resp.json()["pending"].clone();
    assert_eq!(
        pending(hook(&server, "/__test/revocations/alarm")),
        Value::from(1),
        "not due again yet"
    );
    server.advance(6);
    assert_eq!(
        pending(hook(&server, "/__test/revocations/alarm")),
        Value::from(0),
        "told on the retry"
    );
    assert_eq!(
        revoke(&server, &app.license).status,
        204,
        "DELETE is idempotent"
    );
    server.kill();
}

#[test]
fn a_login_asks_the_holders_object_so_a_key_record_kv_still_shows_logs_nothing_in() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(revoke(&server, &app.license).status, 204);
    assert_eq!(server.login(&app.license_key).status, 401);
    server.kill();
    // An edge cache that still holds the key's record, as KV's may for 30 seconds.
    let digest = {
        use std::io::Write;
        let mut sum = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        sum.stdin
            .take()
            .unwrap()
            .write_all(app.license_key.as_bytes())
            .unwrap();
        let out = sum.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap()[..64].to_owned()
    };
    kv_put_local(
        &server.state_dir,
        "LICENSES",
        &format!("key:{digest}"),
        &app.license,
    );
    let restarted = server.restart_from();
    let login = restarted.login(&app.license_key);
    assert_eq!(
        login.status, 401,
        "a revoked license's key logs in no more, whatever KV's edge still holds: {}",
        login.body
    );
    restarted.kill();
}

/// The rows of the audit log that record `license`'s revocation.
fn revocation_rows(server: &Server, license: &str) -> Vec<Value> {
    let resp = server.admin("GET", "/admin/audit?limit=100", None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let rows = resp.json()["entries"].as_array().unwrap().clone();
    rows.into_iter()
        .filter(|row| row["action"] == "license.revoked" && row["target"] == license)
        .collect()
}

#[test]
fn a_revocation_is_in_force_while_the_directory_fails_and_filed_once_it_answers() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let failing = |failing: bool| {
        let resp = send(
            "POST",
            &format!("{}/__test/revocations/fail-filings", server.base),
            &[],
            Some(
                serde_json::json!({ "failing": failing })
                    .to_string()
                    .as_bytes(),
            ),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
    };
    failing(true);
    assert_eq!(
        revoke(&server, &app.license).status,
        204,
        "in force without the directory: the record in KV and the holder's object"
    );
    let bearer = format!("Bearer {}", app.token);
    assert_eq!(app.check_with(Some(bearer.clone()), Mode::Json).status, 401);
    assert_eq!(server.login(&app.license_key).status, 401);
    let picture = |server: &Server| {
        let path = format!("/admin/licenses/{}", app.license);
        server.admin("GET", &path, None).json()["revokedAt"].clone()
    };
    assert_eq!(
        picture(&server),
        Value::Null,
        "not filed in the directory yet"
    );
    assert!(revocation_rows(&server, &app.license).is_empty());

    failing(false);
    server.advance(6);
    hook(&server, "/__test/revocations/alarm");
    assert!(picture(&server).is_string(), "filed by the alarm's retry");
    let rows = revocation_rows(&server, &app.license);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["actor"], "ADMIN_TOKEN");
    assert_eq!(revoke(&server, &app.license).status, 204);
    assert_eq!(
        revocation_rows(&server, &app.license).len(),
        1,
        "a revocation is filed once"
    );
    server.kill();
}
