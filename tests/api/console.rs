//! The operator's console: named licenses and their whole picture, named
//! operator keys and their roles on every admin route, the audit log, and the
//! lookup of why an address is listed.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::helpers::{real_now, send, Mode, Resp, Server, TestApp, ADMIN_TOKEN};

/// A call with a bearer token of the caller's choosing.
fn call(server: &Server, token: &str, method: &str, path: &str, body: Option<Value>) -> Resp {
    let body = body.map(|b| b.to_string().into_bytes());
    send(
        method,
        &format!("{}{path}", server.base),
        &[
            ("Authorization", format!("Bearer {token}")),
            ("Content-Type", "application/json".to_owned()),
        ],
        body.as_deref(),
    )
}

/// A new operator key, made with `ADMIN_TOKEN`: its id and the key.
fn operator_key(server: &Server, name: &str, role: &str) -> (String, String) {
    let resp = server.admin(
        "POST",
        "/admin/keys",
        Some(json!({ "name": name, "role": role })),
    );
    assert_eq!(resp.status, 201, "{}", resp.body);
    let v = resp.json();
    (
        v["id"].as_str().unwrap().to_owned(),
        v["key"].as_str().unwrap().to_owned(),
    )
}

/// A label no other test uses.
fn unique_label(name: &str) -> String {
    format!("{name} {}-{}", real_now(), rand_suffix())
}

fn rand_suffix() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::SeqCst) * 7919 + std::process::id()
}

#[test]
fn licenses_carry_a_label_and_a_note_and_are_found_by_label_newest_first() {
    let server = Server::shared();
    let brand = unique_label("Acme");
    let mut made = Vec::new();
    for (suffix, note) in [(" GmbH", "Berlin office"), (" Corp", ""), (" Labs", "")] {
        let resp = server.admin(
            "POST",
            "/admin/licenses",
            Some(json!({ "label": format!("{brand}{suffix}"), "note": note })),
        );
        assert_eq!(resp.status, 201, "{}", resp.body);
        let v = resp.json();
        assert!(v["licenseKey"].as_str().unwrap().starts_with("glk_"));
        assert_eq!(
            (&v["label"], &v["note"]),
            (&json!(format!("{brand}{suffix}")), &json!(note))
        );
        made.push(v["license"].as_str().unwrap().to_owned());
    }
    let (plain, _) = server.create_license();
    let search = |q: &str, extra: &str| {
        let q: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let resp = server.admin("GET", &format!("/admin/licenses?q={q}{extra}"), None);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    };
    let ids = |page: &Value| -> Vec<String> {
        page["licenses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["license"].as_str().unwrap().to_owned())
            .collect()
    };
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    assert_eq!(
        ids(&search(&brand.to_uppercase(), "")),
        newest_first,
        "a label prefix is found in any case, newest first"
    );
    let first = search(&brand.to_lowercase(), "&limit=2");
    assert_eq!(ids(&first), newest_first[..2]);
    let cursor = first["cursor"].as_str().expect("a second page").to_owned();
    let rest = search(&brand, &format!("&limit=2&cursor={cursor}"));
    assert_eq!(
        (ids(&rest), &rest["cursor"]),
        (vec![made[0].clone()], &Value::Null)
    );
    assert_eq!(ids(&search(&format!("{brand} C"), "")), [made[1].clone()]);

    let relabelled = server.admin(
        "PATCH",
        &format!("/admin/licenses/{plain}"),
        Some(json!({ "label": format!("  {brand} Late  ") })),
    );
    assert_eq!(relabelled.status, 200, "{}", relabelled.body);
    assert_eq!(
        relabelled.json()["label"],
        format!("{brand} Late"),
        "trimmed"
    );
    assert_eq!(relabelled.json()["note"], "", "the note untouched");
    assert_eq!(
        ids(&search(&brand, "&limit=1")),
        [plain.as_str()],
        "found by its new label"
    );
    let noted = server.admin(
        "PATCH",
        &format!("/admin/licenses/{plain}"),
        Some(json!({ "note": "renewed\nyearly" })),
    );
    assert_eq!(
        noted.json()["label"],
        format!("{brand} Late"),
        "the label untouched"
    );
    assert_eq!(noted.json()["note"], "renewed\nyearly");

    let refused = |body: Value| {
        let resp = server.admin("PATCH", &format!("/admin/licenses/{plain}"), Some(body));
        assert_eq!(resp.status, 400, "{}", resp.body);
        resp.json()["message"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        refused(json!({ "label": "x".repeat(101) })),
        "Bad request: label may be at most 100 characters, not 101"
    );
    assert_eq!(
        refused(json!({ "note": "é".repeat(501) })),
        "Bad request: note may be at most 500 characters, not 501"
    );
    assert!(refused(json!({})).starts_with("Bad request: expected {\"label\""));
    assert!(refused(json!({ "lable": "x" })).contains("unknown field"));
    assert_eq!(
        server
            .admin(
                "PATCH",
                "/admin/licenses/lic_000000000000000000000000",
                Some(json!({ "label": "x" }))
            )
            .status,
        404
    );
}

#[test]
fn a_licenses_whole_picture_shows_its_entries_usage_agents_and_last_change() {
    let app = TestApp::new();
    let server = &app.server;
    let picture = || {
        let resp = server.admin("GET", &format!("/admin/licenses/{}", app.license), None);
        assert_eq!(
            resp.status, 200,
            "the operator is shown a license's picture, revoked or not: {}",
            resp.body
        );
        resp.json()
    };
    let fresh = picture();
    assert_eq!(fresh["entries"], 0);
    assert_eq!(fresh["lastChange"], Value::Null);
    assert_eq!(fresh["feedTokens"], json!([]));
    assert_eq!(
        fresh["limits"],
        json!({ "dailyAdditions": 6000, "dailyRemovals": 1000, "entries": 1_000_000 })
    );

    for ip in ["11.200.0.1", "11.200.0.2", "11.200.0.3"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
    }
    assert!(app.remove("11.200.0.2").contains("removed"));
    let token = send(
        "POST",
        &format!("{}/api/feedTokens", server.base),
        &[
            ("Authorization", format!("Bearer {}", app.token)),
            ("Content-Type", "application/json".to_owned()),
        ],
        Some(br#"{"scope":"personal"}"#),
    );
    assert_eq!(token.status, 201, "{}", token.body);
    let feed_token = token.json()["feedToken"].as_str().unwrap().to_owned();
    let pulled = send(
        "GET",
        &format!("{}/api/greylistFeed?format=text", server.base),
        &[
            ("Authorization", format!("Bearer {feed_token}")),
            ("User-Agent", "edge-firewall/2.1".to_owned()),
        ],
        None,
    );
    assert_eq!(pulled.status, 200, "{}", pulled.body);

    let seen = picture();
    assert_eq!(seen["entries"], 2);
    assert_eq!(
        (
            &seen["today"]["added"],
            &seen["today"]["removed"],
            &seen["today"]["refused"]
        ),
        (&json!(3), &json!(1), &json!(0))
    );
    let tokens = seen["feedTokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["scope"], "personal");
    assert_eq!(tokens[0]["userAgent"], "edge-firewall/2.1");
    assert!(tokens[0]["lastUsed"].is_string(), "{seen}");
    assert!(
        seen["lastChange"].as_str().unwrap().ends_with('Z'),
        "{seen}"
    );
    assert!(seen.get("licenseKey").is_none() && tokens[0].get("feedToken").is_none());

    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/licenses/{}", app.license), None)
            .status,
        204
    );
    let revoked = picture();
    assert!(revoked["revokedAt"].is_string(), "{revoked}");
    assert_eq!(
        revoked["entries"], 2,
        "what a revoked license held is still shown"
    );
    for unknown in ["lic_000000000000000000000000", "not-a-license"] {
        assert_eq!(
            server
                .admin("GET", &format!("/admin/licenses/{unknown}"), None)
                .status,
            404
        );
    }
}

/// A request for each operator route of the OpenAPI document (which the unit
/// tests prove lists every route with the access the route table gives it): its
/// concrete path and a body it takes.
fn requests_of_every_operator_route(
    license: &str,
    key: &str,
) -> Vec<(String, String, Option<Value>, String)> {
    let doc: Value = serde_json::from_str(include_str!("../../public/openapi.json")).unwrap();
    let mut requests = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/admin/") {
            continue;
        }
        for (method, operation) in item.as_object().unwrap() {
            let access = operation["x-operator-access"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} states no access"))
                .to_owned();
            let concrete = match path.as_str() {
                "/admin/licenses/{id}" => format!("/admin/licenses/{license}"),
                "/admin/keys/{id}" => format!("/admin/keys/{key}"),
                "/admin/lookup" => "/admin/lookup?ip=11.201.0.1".to_owned(),
                other => other.to_owned(),
            };
            let body = match (path.as_str(), method.as_str()) {
                ("/admin/licenses/{id}", "patch") => Some(json!({ "label": "relabelled" })),
                ("/admin/keys", "post") => Some(json!({ "name": "made", "role": "read" })),
                (_, "post") if path.ends_with("-list") || path == "/admin/canaries" => {
                    Some(json!({ "add": [], "remove": [] }))
                }
                _ => None,
            };
            requests.push((method.to_uppercase(), concrete, body, access));
        }
    }
    assert!(requests.len() >= 17, "{requests:?}");
    requests
}

#[test]
fn every_admin_route_enforces_the_roles_the_route_table_gives_it() {
    // Its own server: an admin key replaces both lists here.
    let server = Server::own(&[]);
    let (_, reader) = operator_key(&server, "reader", "read");
    let (_, admin) = operator_key(&server, "deputy", "admin");
    let (license, _) = server.create_license();
    let (spare, _) = operator_key(&server, "spare", "read");
    for (token, name, role) in [(&reader, "reader", "read"), (&admin, "deputy", "admin")] {
        for (method, path, body, access) in requests_of_every_operator_route(&license, &spare) {
            let resp = call(&server, token, &method, &path, body);
            let allowed = access == "read" || (access == "change" && role == "admin");
            if allowed {
                assert!(
                    ![401, 403, 405].contains(&resp.status) && resp.status < 500,
                    "{name} ({role}) {method} {path}: {} {}",
                    resp.status,
                    resp.body
                );
            } else {
                assert_eq!(
                    resp.status, 403,
                    "a caller is refused what its role does not allow: {name} ({role}) {method} {path}: {}",
                    resp.body
                );
                let expected = if access == "root" {
                    format!("Forbidden: only ADMIN_TOKEN creates and revokes operator keys, not the operator key \"{name}\"")
                } else {
                    format!("Forbidden: the operator key \"{name}\" has the role read: it can see everything and change nothing")
                };
                assert_eq!(
                    resp.json(),
                    json!({ "message": expected }),
                    "the refusal names what the route needs: {method} {path}"
                );
            }
        }
    }
    // No key, a made-up one, and the admin token on every route.
    for (method, path, body, _) in requests_of_every_operator_route(&license, &spare) {
        for token in [
            "",
            "gok_0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            let resp = call(&server, token, &method, &path, body.clone());
            assert_eq!(resp.status, 401, "{method} {path} with {token:?}");
            assert_eq!(
                resp.json(),
                json!({ "message": "Unauthorized: the admin token or operator key is missing or invalid" })
            );
        }
    }
    for (method, path, body, _) in requests_of_every_operator_route(&license, &spare) {
        let resp = call(&server, ADMIN_TOKEN, &method, &path, body);
        assert!(
            ![401, 403].contains(&resp.status) && resp.status < 500,
            "ADMIN_TOKEN {method} {path}: {} {}",
            resp.status,
            resp.body
        );
    }
}

#[test]
fn a_key_is_shown_once_kept_as_a_digest_and_refused_at_once_when_revoked() {
    let server = Server::shared();
    let name = unique_label("colleague");
    let resp = server.admin(
        "POST",
        "/admin/keys",
        Some(json!({ "name": name, "role": "read" })),
    );
    assert_eq!(resp.status, 201, "{}", resp.body);
    let created = resp.json();
    let (id, key) = (
        created["id"].as_str().unwrap(),
        created["key"].as_str().unwrap(),
    );
    assert!(key.starts_with("gok_") && key.len() == 68, "{key}");
    assert_eq!(
        (&created["role"], &created["revokedAt"]),
        (&json!("read"), &Value::Null)
    );
    let listed = server.admin("GET", "/admin/keys", None);
    assert!(!listed.body.contains(key), "the key itself is never listed");
    let mine = listed.json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .cloned()
        .expect("listed");
    assert_eq!(mine["name"], json!(name));
    assert_eq!(call(&server, key, "GET", "/admin/status", None).status, 200);

    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/keys/{id}"), None)
            .status,
        204
    );
    assert_eq!(
        call(&server, key, "GET", "/admin/status", None).status,
        401,
        "refused by the very next call, with CACHE_SECONDS 0"
    );
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/keys/{id}"), None)
            .status,
        404
    );
    assert_eq!(
        server.admin("DELETE", "/admin/keys/nonsense", None).status,
        404
    );
    for bad in [
        json!({ "name": "x" }),
        json!({ "name": "", "role": "read" }),
        json!({ "name": "x", "role": "owner" }),
    ] {
        assert_eq!(
            server
                .admin("POST", "/admin/keys", Some(bad.clone()))
                .status,
            400,
            "{bad}"
        );
    }
}

/// The audit log's newest `n` rows.
fn audit(server: &Server, n: usize) -> Vec<Value> {
    let resp = server.admin("GET", &format!("/admin/audit?limit={n}"), None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["entries"].as_array().unwrap().clone()
}

#[test]
fn every_operator_change_and_every_refusal_is_in_the_audit_log() {
    let server = Server::own(&[]);
    let (key_id, deputy) = operator_key(&server, "deputy", "admin");
    let (reader_id, reader) = operator_key(&server, "reader", "read");
    let made = call(
        &server,
        &deputy,
        "POST",
        "/admin/licenses",
        Some(json!({ "label": "<b>Acme</b>" })),
    );
    assert_eq!(made.status, 201);
    let license = made.json()["license"].as_str().unwrap().to_owned();
    let path = format!("/admin/licenses/{license}");
    assert_eq!(
        call(
            &server,
            &deputy,
            "PATCH",
            &path,
            Some(json!({ "note": "n" }))
        )
        .status,
        200
    );
    let edited = call(
        &server,
        &deputy,
        "POST",
        "/admin/global-list",
        Some(json!({ "add": ["11.202.0.1", "11.202.0.2"], "remove": [] })),
    );
    assert_eq!(edited.status, 200, "{}", edited.body);
    let replaced = server.replace_list("allow-list", "11.202.1.0/24\n");
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let version = replaced.json()["version"].as_str().unwrap().to_owned();
    assert_eq!(call(&server, &reader, "DELETE", &path, None).status, 403);
    assert_eq!(
        call(&server, "wrong", "GET", "/admin/status", None).status,
        401
    );
    assert_eq!(
        call(&server, "wrong", "GET", "/admin/status", None).status,
        401
    );
    // Refusals are counted in the isolate and told a tally at a time; reading the
    // log tells what was counted, so it holds them from then on.
    audit(&server, 1);
    assert_eq!(server.admin("DELETE", &path, None).status, 204);
    assert_eq!(
        server
            .admin("DELETE", &format!("/admin/keys/{key_id}"), None)
            .status,
        204
    );

    let rows = audit(&server, 100);
    let seen: Vec<(String, String, String, String, u64)> = rows
        .iter()
        .rev()
        .map(|r| {
            (
                r["action"].as_str().unwrap().to_owned(),
                r["actor"].as_str().unwrap_or("-").to_owned(),
                r["target"].as_str().unwrap().to_owned(),
                r["detail"].as_str().unwrap().to_owned(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let row = |action: &str, actor: &str, target: &str, detail: &str, count: u64| {
        (
            action.to_owned(),
            actor.to_owned(),
            target.to_owned(),
            detail.to_owned(),
            count,
        )
    };
    assert_eq!(
        seen,
        [
            row(
                "key.created",
                "ADMIN_TOKEN",
                &key_id,
                "\"deputy\", role admin",
                1
            ),
            row(
                "key.created",
                "ADMIN_TOKEN",
                &reader_id,
                "\"reader\", role read",
                1
            ),
            row(
                "license.created",
                "deputy",
                &license,
                "label \"<b>Acme</b>\"",
                1
            ),
            row("license.labelled", "deputy", &license, "note changed", 1),
            row(
                "list.edited",
                "deputy",
                "global list",
                "added 2, removed 0",
                1
            ),
            row(
                "list.replaced",
                "ADMIN_TOKEN",
                "allow list",
                &format!("1 entries, added 1, removed 0, version {version}"),
                1
            ),
            row("refused", "reader", &format!("DELETE {path}"), "403", 1),
            row("refused", "-", "GET /admin/status", "401", 2),
            row("license.revoked", "ADMIN_TOKEN", &license, "", 1),
            row("key.revoked", "ADMIN_TOKEN", &key_id, "\"deputy\"", 1),
        ],
        "every operator change and every refusal is an audit row, in order"
    );
    let keys: Vec<&Value> = rows.iter().rev().map(|r| &r["key"]).collect();
    let (none, deputy_key, reader_key) = (Value::Null, json!(key_id), json!(reader_id));
    assert_eq!(
        keys,
        [
            &none,
            &none,
            &deputy_key,
            &deputy_key,
            &deputy_key,
            &none,
            &reader_key,
            &none,
            &none,
            &none
        ],
        "each row names the acting key's id, none for ADMIN_TOKEN"
    );
    // A revoked key's refusal is recorded under its name.
    assert_eq!(
        call(&server, &deputy, "GET", "/admin/status", None).status,
        401
    );
    let last = &audit(&server, 1)[0];
    assert_eq!(
        (&last["actor"], &last["key"], &last["detail"]),
        (&json!("deputy"), &deputy_key, &json!("401"))
    );
    assert!(
        rows.iter()
            .all(|r| r["client"].is_string() && r["at"].as_str().unwrap().ends_with('Z')),
        "every row has the client's address and its time: {rows:?}"
    );
    // A page at a time, newest first.
    let first = server.admin("GET", "/admin/audit?limit=4", None).json();
    let cursor = first["cursor"].as_str().unwrap();
    let second = server
        .admin(
            "GET",
            &format!("/admin/audit?limit=4&cursor={cursor}"),
            None,
        )
        .json();
    assert_eq!(
        second["entries"][0]["id"].as_u64().unwrap() + 1,
        first["entries"][3]["id"].as_u64().unwrap()
    );
    assert_eq!(
        server.admin("GET", "/admin/audit?cursor=abc", None).status,
        400
    );
}

/// The audit log's page at `query`, as `(action, actor, target)` rows, and its cursor.
fn audit_at(server: &Server, query: &str) -> (Vec<(String, String, String)>, Option<String>) {
    let resp = server.admin("GET", &format!("/admin/audit?{query}"), None);
    assert_eq!(resp.status, 200, "{query}: {}", resp.body);
    let page = resp.json();
    let rows = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap().to_owned(),
                r["actor"].as_str().unwrap_or("-").to_owned(),
                r["target"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (rows, page["cursor"].as_str().map(str::to_owned))
}

#[test]
fn the_audit_log_is_filtered_by_kind_key_license_and_time_a_page_at_a_time() {
    let server = Server::own(&[]);
    let (deputy_id, deputy) = operator_key(&server, "deputy", "admin");
    let (_, reader) = operator_key(&server, "reader", "read");
    let made = call(&server, &deputy, "POST", "/admin/licenses", None);
    assert_eq!(made.status, 201, "{}", made.body);
    let theirs = made.json()["license"].as_str().unwrap().to_owned();
    let (mine, _) = server.create_license();
    let refused = call(
        &server,
        &reader,
        "DELETE",
        &format!("/admin/licenses/{mine}"),
        None,
    );
    assert_eq!(refused.status, 403);
    // Reading the log tells it the refusals this isolate counted.
    audit(&server, 1);
    let row = |action: &str, actor: &str, target: &str| {
        (action.to_owned(), actor.to_owned(), target.to_owned())
    };
    let created = |actor: &str, license: &str| row("license.created", actor, license);
    let refusal = row(
        "refused",
        "reader",
        &format!("DELETE /admin/licenses/{mine}"),
    );
    let (changes, _) = audit_at(&server, "kind=changes");
    assert!(!changes.contains(&refusal), "{changes:?}");
    assert_eq!(
        changes[..2],
        [created("ADMIN_TOKEN", &mine), created("deputy", &theirs)]
    );
    assert_eq!(
        audit_at(&server, "kind=refused").0,
        std::slice::from_ref(&refusal)
    );
    assert_eq!(
        audit_at(&server, "kind=license.created").0,
        [created("ADMIN_TOKEN", &mine), created("deputy", &theirs)]
    );
    assert_eq!(
        audit_at(&server, &format!("key={deputy_id}")).0,
        [created("deputy", &theirs)]
    );
    let (admin_token, _) = audit_at(&server, "key=ADMIN_TOKEN");
    assert!(admin_token
        .iter()
        .all(|(_, actor, _)| actor == "ADMIN_TOKEN"));
    assert!(admin_token.contains(&created("ADMIN_TOKEN", &mine)));
    assert_eq!(
        audit_at(&server, &format!("license={theirs}")).0,
        [created("deputy", &theirs)]
    );
    assert_eq!(
        audit_at(&server, &format!("license={mine}&kind=refused")).0,
        Vec::<(String, String, String)>::new(),
        "a refused call's target is the call, not the license"
    );
    // By time: the rows from the second of the first license's creation, and those before it.
    let everything = server.admin("GET", "/admin/audit?limit=100", None).json();
    let at_of = |target: &str| {
        everything["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["target"] == target && r["action"] == "license.created")
            .map(|r| r["at"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let since = at_of(&theirs);
    let (from, _) = audit_at(&server, &format!("from={since}"));
    assert!(from.contains(&created("deputy", &theirs)), "{from:?}");
    let (before, _) = audit_at(&server, &format!("to={since}"));
    assert!(!before.contains(&created("deputy", &theirs)), "{before:?}");
    assert!(
        !before.contains(&created("ADMIN_TOKEN", &mine)),
        "{before:?}"
    );
    // A page at a time, each filter kept.
    let (first, cursor) = audit_at(&server, "kind=license.created&limit=1");
    assert_eq!(first, [created("ADMIN_TOKEN", &mine)]);
    let cursor = cursor.expect("a second page");
    let next = format!("kind=license.created&limit=1&cursor={cursor}");
    let (second, end) = audit_at(&server, &next);
    assert_eq!((second, end), (vec![created("deputy", &theirs)], None));
    // Filters in another shape are refused with why.
    for (query, why) in [
        ("kind=deleted", "kind is changes or one of"),
        ("key=alice", "key is an operator key's id"),
        ("license=lic_x", "license is a license id"),
        ("from=yesterday", "from is an RFC 3339 time"),
        (
            "from=2026-11-22T00:00:00Z&to=2026-11-21T00:00:00Z",
            "from is before to",
        ),
    ] {
        let resp = server.admin("GET", &format!("/admin/audit?{query}"), None);
        assert_eq!(resp.status, 400, "{query}: {}", resp.body);
        let message = resp.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.starts_with(&format!("Bad request: {why}")),
            "{message}"
        );
    }
}

#[test]
fn lookup_says_which_entries_cover_an_address_and_which_change_added_them() {
    let server: Arc<Server> = Server::own(&[]);
    let app = TestApp::on(&server);
    let (_, alice) = operator_key(&server, "alice", "admin");
    assert_eq!(
        server
            .replace_list("global-list", "11.203.0.0/24\n11.204.0.9\n")
            .status,
        200
    );
    let edit = call(
        &server,
        &alice,
        "POST",
        "/admin/global-list",
        Some(json!({ "add": ["11.203.0.5"], "remove": [] })),
    );
    assert_eq!(edit.status, 200, "{}", edit.body);
    assert_eq!(server.edit_allow_list(&["11.205.0.0/16"], &[]).status, 200);
    assert_eq!(
        app.add("11.206.0.1"),
        "[11.206.0.1] has been added to greylist"
    );

    let lookup = |query: &str| {
        let resp = server.admin("GET", &format!("/admin/lookup?{query}"), None);
        assert_eq!(resp.status, 200, "{query}: {}", resp.body);
        resp.json()
    };
    let found = lookup(&format!("ip=11.203.0.5&license={}", app.license));
    let global = found["global"].as_array().unwrap();
    assert_eq!(global.len(), 2, "{found}");
    let (range, address) = (&global[0], &global[1]);
    assert_eq!(
        (&range["entry"], &range["source"], &range["by"]),
        (
            &json!("11.203.0.0/24"),
            &json!("import"),
            &json!("ADMIN_TOKEN")
        ),
        "a lookup names the change that added each entry and who made it"
    );
    assert_eq!(
        (&address["entry"], &address["source"], &address["by"]),
        (&json!("11.203.0.5"), &json!("edit"), &json!("alice")),
        "a lookup names the change that added each entry and who made it"
    );
    assert!(address["addedAt"].as_str().unwrap() >= range["addedAt"].as_str().unwrap());
    assert_eq!(found["allow"], json!([]));
    assert_eq!(
        found["license"],
        json!({ "license": app.license, "entry": null, "allowedBy": null }),
        "the holder could not add what the global list has"
    );
    // The holder's own allow list says so, and by which entry.
    let added = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "11.203.0.0/28"), ("comment", "our office")],
        Mode::Json,
    );
    assert_eq!(added.status, 200, "{}", added.body);
    let allowed = lookup(&format!("ip=11.203.0.5&license={}", app.license));
    let by = &allowed["license"]["allowedBy"];
    assert_eq!(
        (&by["ip"], &by["comment"]),
        (&json!("11.203.0.0/28"), &json!("our office")),
        "{allowed}"
    );
    assert!(by["addedAt"].is_string());
    let personal = lookup(&format!("ip=11.206.0.1&license={}", app.license));
    assert_eq!(personal["global"], json!([]));
    let held = &personal["license"];
    assert_eq!(held["license"], json!(app.license));
    assert_eq!(held["entry"]["ip"], "11.206.0.1");
    assert!(held["entry"]["addedAt"].is_string(), "since when: {held}");

    let in_range = lookup("ip=11.203.0.200");
    assert_eq!(
        in_range["global"].as_array().unwrap().len(),
        1,
        "the /24 alone"
    );
    assert!(in_range.get("license").is_none());
    let allowed = lookup("ip=11.205.3.4");
    assert_eq!(allowed["allow"][0]["entry"], "11.205.0.0/16");
    assert_eq!(allowed["allow"][0]["source"], "edit");
    let nowhere = lookup(&format!("ip=2a00:1450::1&license={}", app.license));
    assert_eq!(
        (
            &nowhere["global"],
            &nowhere["allow"],
            &nowhere["license"]["entry"]
        ),
        (&json!([]), &json!([]), &Value::Null)
    );
    assert_eq!(
        lookup("ip=::ffff:11.204.0.9")["global"][0]["entry"],
        "11.204.0.9",
        "a mapped address is its IPv4 address"
    );

    for bad in ["", "ip=", "ip=11.203.0.0/24", "ip=example.com"] {
        assert_eq!(
            server
                .admin("GET", &format!("/admin/lookup?{bad}"), None)
                .status,
            400,
            "{bad}"
        );
    }
    assert_eq!(
        server
            .admin(
                "GET",
                "/admin/lookup?ip=11.203.0.5&license=lic_000000000000000000000000",
                None
            )
            .status,
        404
    );
}

#[test]
fn licenses_issued_before_the_directory_are_taken_over_with_their_times() {
    let state = crate::helpers::fresh_state_dir();
    let record = |created: u64, revoked: Option<u64>| {
        json!({ "keyDigest": "0".repeat(64), "createdAt": created, "revokedAt": revoked })
            .to_string()
    };
    let (old, gone) = (
        "lic_00000000000000000000000a",
        "lic_00000000000000000000000b",
    );
    crate::helpers::kv_put_local(
        &state,
        "LICENSES",
        &format!("license:{old}"),
        &record(1_700_000_000, None),
    );
    crate::helpers::kv_put_local(
        &state,
        "LICENSES",
        &format!("license:{gone}"),
        &record(1_700_000_100, Some(1_700_000_200)),
    );
    let server = Server::own_on(&state, &[]);
    let (new, _) = server.create_license();
    let page = server.admin("GET", "/admin/licenses", None).json();
    let listed: Vec<(&str, &str, &str, &Value)> = page["licenses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["license"].as_str().unwrap(),
                l["label"].as_str().unwrap(),
                l["createdAt"].as_str().unwrap(),
                &l["revokedAt"],
            )
        })
        .collect();
    assert_eq!(listed[0].0, new, "the newest first");
    assert_eq!(
        listed[1..],
        [
            (
                gone,
                "",
                "2023-11-14T22:15:00Z",
                &json!("2023-11-14T22:16:40Z")
            ),
            (old, "", "2023-11-14T22:13:20Z", &Value::Null),
        ],
        "the directory files every license KV held before it, with its times"
    );
    assert_eq!(server.status()["licenses"], 3);
    let relabel = server.admin(
        "PATCH",
        &format!("/admin/licenses/{old}"),
        Some(json!({ "label": "Legacy" })),
    );
    assert_eq!(relabel.json()["label"], "Legacy", "{}", relabel.body);

    // A license an older Worker issued after the takeover (only in KV) is filed
    // when the operator first names it.
    server.kill();
    let late = "lic_00000000000000000000000c";
    crate::helpers::kv_put_local(
        &state,
        "LICENSES",
        &format!("license:{late}"),
        &record(1_700_000_300, None),
    );
    let server = server.restart_from();
    let picture = server.admin("GET", &format!("/admin/licenses/{late}"), None);
    assert_eq!(
        picture.status, 200,
        "a license only in KV is filed once the operator names it: {}",
        picture.body
    );
    assert_eq!(picture.json()["createdAt"], "2023-11-14T22:18:20Z");
    assert_eq!(server.status()["licenses"], 4);
}

#[test]
fn a_flood_of_made_up_operator_keys_from_one_address_is_refused_with_429_before_the_directory() {
    // Its own server: the flood must not lock the other tests out.
    let server = Server::own(&[]);
    let made_up = "gok_1111111111111111111111111111111111111111111111111111111111111111";
    // The limit counts per fixed 60-second window, and the flood may straddle two.
    let (answered, refusal) = (0..1500)
        .find_map(|n| {
            Some(call(&server, made_up, "GET", "/admin/status", None))
                .filter(|resp| resp.status != 401)
                .map(|resp| (n, resp))
        })
        .expect("1 500 calls in a row, and none refused");
    assert!(
        (600..=1200).contains(&answered),
        "refused after {answered} calls, not after 600 in a window"
    );
    assert_eq!(refusal.status, 429, "{}", refusal.body);
    assert_eq!(refusal.header("Retry-After"), Some("60"));
    assert_eq!(
        server.admin("GET", "/admin/status", None).status,
        200,
        "ADMIN_TOKEN is never counted"
    );
    let rows = audit(&server, 10);
    assert_eq!(rows.len(), 1, "one row, counted: {rows:?}");
    assert_eq!(rows[0]["count"].as_u64(), Some(answered as u64));
}
