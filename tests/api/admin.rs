//! The operator API.

use serde_json::json;

use crate::helpers::{send, unique_ip, Server, TestApp};

#[test]
fn licenses_are_created_with_a_key_shown_once_and_revoked_by_id() {
    let server = Server::shared();
    let (license, key) = server.create_license();
    assert!(license.starts_with("lic_"), "{license}");
    let secret = key.strip_prefix("glk_").unwrap_or_else(|| panic!("{key}"));
    assert!(
        secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit()),
        "256 random bits in hex: {key}"
    );
    assert_eq!(server.login(&key).status, 200);

    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{license}"), None)
            .status,
        204
    );
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{license}"), None)
            .status,
        204,
        "revoking twice is harmless"
    );
    let unknown = server.admin(
        "DELETE",
        "/admin/licenses/lic_000000000000000000000000",
        None,
    );
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.json(),
        json!({ "message": "Not found: no such license" })
    );
}

#[test]
fn global_list_edits_count_only_changes() {
    let server = Server::shared();
    let (a, b) = (unique_ip(), unique_ip());
    let _cleanup = server.taken_off_at_end("global-list", &[&a, &b]);
    assert_eq!(
        server.edit_global_list(&[&a, &b], &[]).json(),
        json!({ "added": 2, "removed": 0 })
    );
    assert_eq!(
        server.edit_global_list(&[&a], &[&b, &unique_ip()]).json(),
        json!({ "added": 0, "removed": 1 })
    );
    assert_eq!(
        TestApp::new().check(&a),
        format!("[{a}] is on global greylist")
    );
    assert_eq!(
        server.edit_global_list(&[], &[&a]).json(),
        json!({ "added": 0, "removed": 1 })
    );
}

#[test]
fn allow_list_takes_addresses_and_cidr_ranges() {
    let server = Server::shared();
    let _cleanup = server.taken_off_at_end("allow-list", &["101.0.0.0/24", "101.1.1.1"]);
    let resp = server.edit_allow_list(&["101.0.0.0/24", "101.1.1.1"], &[]);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), json!({ "added": 2, "removed": 0 }));
    let app = TestApp::new();
    assert_eq!(
        app.add("101.1.1.1"),
        "[101.1.1.1] is on the global allow list, no action was taken"
    );
    assert_eq!(
        server
            .edit_allow_list(&[], &["101.0.0.0/24", "101.1.1.1", "101.2.0.0/16"])
            .json(),
        json!({ "added": 0, "removed": 2 })
    );
    assert_eq!(
        app.add("101.1.1.1"),
        "[101.1.1.1] has been added to greylist"
    );
}

#[test]
fn one_bad_entry_refuses_the_whole_edit_and_is_named() {
    let server = Server::shared();
    let good = unique_ip();
    let resp = server.edit_global_list(&[&good, "300.1.1.1"], &[]);
    assert_eq!(resp.status, 400);
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("\"300.1.1.1\""),
        "{}",
        resp.body
    );
    assert_eq!(
        TestApp::new().check(&good),
        format!("[{good}] is currently not on global greylist")
    );

    let private = server.edit_global_list(&["10.1.1.1"], &[]);
    assert_eq!(
        private.status, 400,
        "a private address can never be looked up"
    );
    let host_bits = server.edit_allow_list(&["203.0.113.5/24"], &[]);
    assert_eq!(host_bits.status, 400);
    assert!(host_bits.json()["message"]
        .as_str()
        .unwrap()
        .contains("203.0.113.5/24"));
    let not_json = server.admin("POST", "/admin/allow-list", None);
    assert_eq!(not_json.status, 400);
}

#[test]
fn every_admin_route_needs_the_admin_token() {
    let server = Server::shared();
    let app = TestApp::new();
    let routes = [
        ("POST", "/admin/licenses"),
        ("DELETE", "/admin/licenses/lic_000000000000000000000000"),
        ("POST", "/admin/global-list"),
        ("PUT", "/admin/global-list"),
        ("GET", "/admin/global-list"),
        ("POST", "/admin/allow-list"),
        ("PUT", "/admin/allow-list"),
        ("GET", "/admin/allow-list"),
        ("GET", "/admin/status"),
        ("GET", "/admin/licenses"),
    ];
    for (method, path) in routes {
        for authorization in [
            None,
            Some(format!("Bearer {}", app.token)),
            Some("Bearer wrong".to_owned()),
        ] {
            let headers: Vec<(&str, String)> = authorization
                .into_iter()
                .map(|a| ("Authorization", a))
                .collect();
            let resp = send(
                method,
                &format!("{}{path}", server.base),
                &headers,
                Some(br#"{"add":["8.8.8.8"]}"#),
            );
            assert_eq!(resp.status, 401, "{method} {path}: {}", resp.body);
            assert_eq!(resp.header("WWW-Authenticate"), Some("Bearer"));
            assert_eq!(
                resp.json(),
                json!({ "message": "Unauthorized: the admin token or operator key is missing or invalid" })
            );
        }
    }
    assert_eq!(
        app.check("8.8.8.8"),
        "[8.8.8.8] is currently not on global greylist"
    );
}

#[test]
fn licenses_are_listed_a_page_at_a_time_with_when_each_was_created_and_revoked() {
    let server = Server::shared();
    let (kept, _) = server.create_license();
    let (revoked, _) = server.create_license();
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{revoked}"), None)
            .status,
        204
    );

    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let resp = server.admin(
            "GET",
            &format!("/admin/licenses?limit=7&cursor={cursor}"),
            None,
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        let page = resp.json();
        let licenses = page["licenses"].as_array().unwrap();
        assert!(licenses.len() <= 7, "{page}");
        seen.extend(licenses.iter().cloned());
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    let find = |id: &str| {
        seen.iter()
            .find(|l| l["license"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"))
            .clone()
    };
    let (kept, revoked) = (find(&kept), find(&revoked));
    assert!(
        kept["createdAt"].as_str().unwrap().ends_with('Z') && kept["revokedAt"].is_null(),
        "{kept}"
    );
    assert!(
        revoked["revokedAt"].as_str().unwrap() >= revoked["createdAt"].as_str().unwrap(),
        "{revoked}"
    );
    assert!(
        seen.iter().all(|l| l.get("licenseKey").is_none()),
        "keys are never listed"
    );
    let created: Vec<&str> = seen
        .iter()
        .map(|l| l["createdAt"].as_str().unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first");
    let mut ids: Vec<&str> = seen
        .iter()
        .map(|l| l["license"].as_str().unwrap())
        .collect();
    let listed = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), listed, "each once");

    assert_eq!(
        server.admin("GET", "/admin/licenses?limit=0", None).status,
        400
    );
    assert!(
        server
            .admin("GET", "/admin/licenses?cursor=not-a-cursor", None)
            .status
            < 500,
        "a made-up cursor is not our fault"
    );
    assert_eq!(
        send("GET", &format!("{}/admin/licenses", server.base), &[], None).status,
        401
    );
}

#[test]
fn the_admin_token_is_rotated_with_no_moment_that_refuses_both() {
    const NEXT: &str = "e2e-admin-token-next-0123456789abcdef";
    let status = |server: &Server, token: &str| {
        send(
            "GET",
            &format!("{}/admin/status", server.base),
            &[("Authorization", format!("Bearer {token}"))],
            None,
        )
        .status
    };
    let rotating = Server::own(&[("ADMIN_TOKEN_NEXT", NEXT)]);
    assert_eq!(
        status(&rotating, crate::helpers::ADMIN_TOKEN),
        200,
        "the token in use"
    );
    assert_eq!(
        status(&rotating, NEXT),
        200,
        "the next token opens beside the one in use"
    );
    assert_eq!(status(&rotating, &NEXT[1..]), 401);
    assert_eq!(
        status(&Server::shared(), NEXT),
        401,
        "without ADMIN_TOKEN_NEXT only ADMIN_TOKEN opens"
    );
}
