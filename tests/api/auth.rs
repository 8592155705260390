//! Login and access tokens.

use greylist::domain::access::license::LicenseId;
use greylist::domain::access::token::TokenKey;
use greylist::domain::time::UnixTime;

use crate::helpers::{send, Encoding, Mode, Resp, Server, TestApp, JWT_SECRET, UNAUTHORIZED};

fn assert_unauthorized(resp: &Resp) {
    assert_eq!(
        resp.status, 401,
        "the caller is refused as unauthorized: {}",
        resp.body
    );
    assert_eq!(resp.header("WWW-Authenticate"), Some("Bearer"));
    assert_eq!(resp.json(), serde_json::json!({ "result": UNAUTHORIZED }));
}

#[test]
fn login_answers_a_bearer_token_for_json_and_form_bodies() {
    let server = Server::shared();
    let (license, key) = server.create_license();
    let resp = server.login(&key);
    assert_eq!(resp.status, 200);
    let body = resp.json();
    assert_eq!(body["tokenType"], "Bearer");
    assert_eq!(body["expiresIn"], 3600);
    let token = body["accessToken"].as_str().unwrap();
    let subject = TokenKey::new(JWT_SECRET)
        .verify(token, UnixTime(server.now()))
        .unwrap();
    assert_eq!(subject.as_str(), license);

    let form = send(
        "POST",
        &format!("{}/v2/authentication/login/license", server.base),
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        Some(format!("licenseKey={key}").as_bytes()),
    );
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.json()["accessToken"].is_string());
}

#[test]
fn login_refuses_unknown_keys_and_missing_keys() {
    let server = Server::shared();
    let unknown =
        server.login("glk_0000000000000000000000000000000000000000000000000000000000000000");
    assert_eq!(unknown.status, 401);
    assert_eq!(
        unknown.json(),
        serde_json::json!({ "message": "Unauthorized: the license key is unknown or revoked" })
    );
    assert_eq!(
        unknown.header("WWW-Authenticate"),
        None,
        "login takes a key in the body, not a bearer token"
    );
    let missing = send(
        "POST",
        &format!("{}/v2/authentication/login/license", server.base),
        &[("Content-Type", "application/json".into())],
        Some(b"{}"),
    );
    assert_eq!(missing.status, 400);
    assert!(missing.json()["message"]
        .as_str()
        .unwrap()
        .contains("licenseKey"));
}

#[test]
fn list_operations_refuse_missing_and_malformed_authorization() {
    let app = TestApp::new();
    assert_unauthorized(&app.check_with(None, Mode::Json));
    for header in [
        "",
        "Bearer",
        "Bearer ",
        format!("Basic {}", app.token).as_str(),
        &app.token,
        "Bearer not.a.token",
    ] {
        assert_unauthorized(&app.check_with(Some(header.to_owned()), Mode::Json));
    }
    let plain = app.check_with(None, Mode::Plain);
    assert_eq!(plain.status, 401);
    assert_eq!(plain.content_type, "text/plain; charset=utf-8");
    assert_eq!(plain.body, UNAUTHORIZED);
}

#[test]
fn tokens_signed_with_another_secret_or_expired_are_refused() {
    let app = TestApp::new();
    let license = LicenseId::parse(&app.license).unwrap();
    let foreign = TokenKey::new("some-other-secret-0123456789abcdef").issue(
        &license,
        UnixTime(app.server.now()),
        3600,
    );
    assert_unauthorized(&app.check_with(Some(format!("Bearer {foreign}")), Mode::Json));
    let expired =
        TokenKey::new(JWT_SECRET).issue(&license, UnixTime(app.server.now() - 7200), 3600);
    assert_unauthorized(&app.check_with(Some(format!("Bearer {expired}")), Mode::Json));
    let fresh = TokenKey::new(JWT_SECRET).issue(&license, UnixTime(app.server.now()), 3600);
    assert_eq!(
        app.check_with(Some(format!("Bearer {fresh}")), Mode::Json)
            .result(),
        "[8.8.8.8] is currently not on global greylist"
    );
}

#[test]
fn a_revoked_license_can_neither_call_nor_log_in() {
    let app = TestApp::new();
    assert_eq!(app.add("8.8.8.8"), "[8.8.8.8] has been added to greylist");
    let revoked = app
        .server
        .admin("DELETE", &format!("/admin/licenses/{}", app.license), None);
    assert_eq!(revoked.status, 204);
    assert_unauthorized(&app.check_with(Some(format!("Bearer {}", app.token)), Mode::Json));
    assert_eq!(app.server.login(&app.license_key).status, 401);
}

#[test]
fn revocation_reaches_the_personal_list_at_once_even_through_a_warm_cache() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    assert_eq!(
        app.add("8.8.8.8"),
        "[8.8.8.8] has been added to greylist",
        "the license's standing is now cached as active"
    );
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{}", app.license), None)
            .status,
        204
    );
    // The Worker still takes the license (its isolate read it moments ago), so every
    // refusal below is the holder's object's own.
    assert_eq!(
        app.check("not-an-ip"),
        "[not-an-ip] is invalid",
        "the Worker's check is passed"
    );
    for path in [
        "/api/checkIpOnGreylist",
        "/api/addIpToGreylist",
        "/api/deleteIpFromGreylist",
        "/api/listGreylist",
        "/api/greylistHistory",
    ] {
        assert_unauthorized(&app.call(path, "8.8.8.8", Encoding::Multipart, Mode::Json));
    }
    assert_eq!(app.get("/api/quota").status, 401);
}

#[test]
fn a_revoked_license_is_refused_within_the_bound_on_answers_that_need_no_list() {
    // The shipped setting: 30 seconds at KV's edge (which the local server does not
    // keep; `store::licenses` tests that half with a fake KV) and 30 in the isolate.
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    let global = "198.51.99.7";
    assert_eq!(server.edit_global_list(&[global], &[]).status, 200);
    let answers_needing_no_list = || {
        [
            app.call(
                "/api/checkIpOnGreylist",
                "not-an-ip",
                Encoding::Multipart,
                Mode::Json,
            ),
            app.call(
                "/api/checkIpOnGreylist",
                global,
                Encoding::Multipart,
                Mode::Json,
            ),
        ]
    };
    for resp in answers_needing_no_list() {
        assert_eq!(
            resp.status, 200,
            "the license's standing is now cached as active: {}",
            resp.body
        );
    }
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{}", app.license), None)
            .status,
        204
    );
    // Well inside the isolate's 30 seconds, with room for a slow machine: still answered.
    server.advance(25);
    for resp in answers_needing_no_list() {
        assert_eq!(
            resp.status, 200,
            "the isolate's cache is in play, so the bound is what is tested: {}",
            resp.body
        );
    }
    // Past them: refused, by every answer.
    server.advance(6);
    for resp in answers_needing_no_list() {
        assert_unauthorized(&resp);
    }
}

#[test]
fn an_access_token_is_refused_from_its_expiry_on() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    // Thirty seconds before `exp` by the test clock, less the real time since the
    // login: still good.
    server.advance(3600 - 30);
    assert_eq!(
        app.check("8.8.8.8"),
        "[8.8.8.8] is currently not on global greylist",
        "before its expiry"
    );
    // At `exp` or past it, whatever real time has passed: no leeway.
    server.advance(30);
    assert_unauthorized(&app.check_with(Some(format!("Bearer {}", app.token)), Mode::Json));
    assert_eq!(
        server.login(&app.license_key).status,
        200,
        "a new login gives a new hour"
    );
}
