//! CrowdSec's decision stream and live mode, as its bouncers call them: a feed
//! token in `X-Api-Key`, `startup=true` first, then only what changed.

use std::sync::Arc;

use serde_json::{json, Value};

use super::helpers::{send, Resp, Server, TestApp};

const BOUNCER: &str = "crowdsec-firewall-bouncer/v0.0.25-debian";
const NOTHING_NEW: &str = r#"{"deleted":[],"new":[]}"#;

fn pull_at(server: &Server, method: &str, path: &str, key: Option<&str>) -> Resp {
    let mut headers = vec![("User-Agent", BOUNCER.to_owned())];
    headers.extend(key.map(|key| ("X-Api-Key", key.to_owned())));
    send(method, &format!("{}{path}", server.base), &headers, None)
}

/// A pull of the stream, answered 200.
fn pull(server: &Server, key: &str, query: &str) -> Resp {
    let resp = pull_at(
        server,
        "GET",
        &format!("/v1/decisions/stream?{query}"),
        Some(key),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    resp
}

/// The values of a side of a pull's answer, in the order sent.
fn values(answer: &Value, side: &str) -> Vec<String> {
    answer[side]
        .as_array()
        .unwrap_or_else(|| panic!("{side} is an array: {answer}"))
        .iter()
        .map(|d| d["value"].as_str().unwrap().to_owned())
        .collect()
}

fn sorted(mut values: Vec<String>) -> Vec<String> {
    values.sort();
    values
}

/// A server of this file's own, for the tests that move its clock or change the
/// operator's lists: others sharing it would see both.
fn own() -> Arc<Server> {
    Server::own(&[])
}

#[test]
fn startup_holds_every_entry_then_each_pull_only_what_changed_since_the_tokens_last() {
    let app = TestApp::new();
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    let [a, b, c] = ["23.94.7.1", "23.94.7.2", "23.94.7.3"].map(String::from);
    let added = app.add_with(&[("ip", &a), ("comment", "ssh brute force")]);
    assert_eq!(added.status, 200, "{}", added.body);
    app.add_with(&[("ip", &b), ("ttl", "3600")]);
    let first = pull(&app.server, &key, "startup=true").json();
    assert_eq!(
        sorted(values(&first, "new")),
        sorted(vec![a.clone(), b.clone()])
    );
    assert_eq!(values(&first, "deleted"), Vec::<String>::new());
    let decision = first["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == a.as_str())
        .unwrap();
    let keys: Vec<&str> = decision
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        sorted(keys.iter().map(|k| k.to_string()).collect()),
        sorted(
            ["duration", "id", "origin", "scenario", "scope", "type", "value"]
                .map(String::from)
                .to_vec()
        )
    );
    assert_eq!(
        (
            &decision["origin"],
            &decision["type"],
            &decision["scope"],
            &decision["scenario"],
            &decision["duration"]
        ),
        (
            &json!("greylist"),
            &json!("ban"),
            &json!("Ip"),
            &json!("ssh brute force"),
            &json!("168h0m0s")
        )
    );
    assert!(decision["id"].is_u64());
    let expiring = first["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == b.as_str())
        .unwrap();
    let left = expiring["duration"].as_str().unwrap();
    assert!(left.starts_with("59m") || left == "1h0m0s", "{left}");
    // Nothing changed: the exact empty answer.
    assert_eq!(pull(&app.server, &key, "").body, NOTHING_NEW);
    // A HEAD answers without a body and does not move the position.
    app.add(&c);
    app.remove(&a);
    let head = pull_at(&app.server, "HEAD", "/v1/decisions/stream", Some(&key));
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    let changes = pull(&app.server, &key, "startup=false").json();
    assert_eq!(values(&changes, "new"), vec![c.clone()]);
    assert_eq!(values(&changes, "deleted"), vec![a.clone()]);
    assert_eq!(changes["deleted"][0]["duration"], "-1s");
    assert_eq!(
        changes["deleted"][0]["id"], decision["id"],
        "the same value, the same id"
    );
    assert_eq!(pull(&app.server, &key, "").body, NOTHING_NEW);
    // Another token has a position of its own.
    let (_, other) = app.feed_token(json!({}));
    let fresh = pull(&app.server, &other, "").json();
    assert_eq!(sorted(values(&fresh, "new")), sorted(vec![b, c]));
    // Startup again: everything, whatever the position.
    assert_eq!(
        values(&pull(&app.server, &key, "startup=true").json(), "new").len(),
        2,
        "startup=true answers every entry, whatever the token's position"
    );
}

#[test]
fn an_entry_that_expires_is_deleted_at_the_next_pull_and_standing_ones_are_announced_again() {
    let server = own();
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    app.add_with(&[("ip", "23.94.8.1"), ("ttl", "60")]);
    app.add_with(&[("ip", "23.94.8.2")]);
    pull(&server, &key, "startup=true");
    server.advance(61);
    let expired = pull(&server, &key, "").json();
    assert_eq!(
        (values(&expired, "deleted"), values(&expired, "new")),
        (vec!["23.94.8.1".to_owned()], vec![]),
        "an entry that expired is in the next pull's deleted"
    );
    assert_eq!(pull(&server, &key, "").body, NOTHING_NEW);
    // Three days on, a pull deletes and announces everything again, before a
    // bouncer's week runs out: one that keeps what it has takes it anew.
    server.advance(3 * 86_400);
    let renewed = pull(&server, &key, "").json();
    assert_eq!(
        values(&renewed, "deleted"),
        vec!["23.94.8.2".to_owned()],
        "three days on, a pull deletes each standing entry to announce it again"
    );
    assert_eq!(values(&renewed, "new"), vec!["23.94.8.2".to_owned()]);
    assert_eq!(renewed["new"][0]["duration"], "168h0m0s");
    assert_eq!(pull(&server, &key, "").body, NOTHING_NEW);
}

#[test]
fn the_global_and_allow_lists_changes_reach_a_token_of_scope_all_as_changes() {
    let server = own();
    let app = TestApp::on(&server);
    let (_, all) = app.feed_token(json!({ "scope": "all" }));
    let (_, personal) = app.feed_token(json!({ "scope": "personal" }));
    app.add("23.94.9.1");
    app.add("23.94.9.2");
    // An entry the global list also holds as a block of its own stands as long as that does.
    app.add_with(&[("ip", "23.94.9.3"), ("ttl", "3600")]);
    assert_eq!(
        server
            .edit_global_list(&["45.77.0.0/16", "45.78.1.1", "23.94.9.3"], &[])
            .status,
        200
    );
    let first = pull(&server, &all, "startup=true").json();
    assert_eq!(
        sorted(values(&first, "new")),
        sorted(
            [
                "23.94.9.1",
                "23.94.9.2",
                "23.94.9.3",
                "45.77.0.0/16",
                "45.78.1.1"
            ]
            .map(String::from)
            .to_vec()
        )
    );
    let both = first["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == "23.94.9.3")
        .unwrap();
    assert_eq!(
        (&both["origin"], &both["duration"]),
        (&json!("greylist"), &json!("168h0m0s")),
        "one decision, as long as the global list holds it: {both}"
    );
    let global = first["new"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["value"] == "45.77.0.0/16")
        .unwrap();
    assert_eq!(
        (&global["origin"], &global["scope"], &global["scenario"]),
        (
            &json!("greylist-global"),
            &json!("Range"),
            &json!("greylist/global")
        )
    );
    pull(&server, &personal, "startup=true");
    // The global list changes: the next pull carries only that.
    assert_eq!(
        server
            .edit_global_list(&["45.79.0.0/24"], &["45.78.1.1"])
            .status,
        200
    );
    let changed = pull(&server, &all, "").json();
    assert_eq!(
        values(&changed, "new"),
        vec!["45.79.0.0/24".to_owned()],
        "the next pull carries only the global list's change"
    );
    assert_eq!(values(&changed, "deleted"), vec!["45.78.1.1".to_owned()]);
    assert_eq!(pull(&server, &all, "").body, NOTHING_NEW);
    // The allow list takes a personal entry and splits a global range.
    assert_eq!(
        server
            .edit_allow_list(&["23.94.9.1", "45.79.0.128/25"], &[])
            .status,
        200
    );
    let allowed = pull(&server, &all, "").json();
    assert_eq!(
        sorted(values(&allowed, "deleted")),
        sorted(["23.94.9.1", "45.79.0.0/24"].map(String::from).to_vec())
    );
    assert_eq!(values(&allowed, "new"), vec!["45.79.0.0/25".to_owned()]);
    let personal_view = pull(&server, &personal, "").json();
    assert_eq!(
        (
            values(&personal_view, "deleted"),
            values(&personal_view, "new")
        ),
        (vec!["23.94.9.1".to_owned()], vec![])
    );
    // The allow list lets it go again: it comes back.
    assert_eq!(server.edit_allow_list(&[], &["23.94.9.1"]).status, 200);
    assert_eq!(
        values(&pull(&server, &personal, "").json(), "new"),
        vec!["23.94.9.1".to_owned()]
    );
}

#[test]
fn a_token_two_bouncers_pull_at_once_is_told_so_with_a_409_not_a_fault() {
    let server = own();
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    pull(&server, &key, "startup=true");
    // The global list moves on: the next pull asks the holder's object twice, the
    // second time with the global list's changes since the token's position.
    assert_eq!(server.edit_global_list(&["45.80.1.1"], &[]).status, 200);
    // Between the two asks, another bouncer with the same token pulls through an
    // isolate that already knew the next version, and moves the position again.
    let armed = send(
        "POST",
        &format!(
            "{}/__test/holders/{}/pulled-elsewhere",
            server.base, app.license
        ),
        &[],
        None,
    );
    assert_eq!(armed.status, 200, "{}", armed.body);
    let shared = pull_at(&server, "GET", "/v1/decisions/stream", Some(&key));
    assert_eq!(
        shared.status, 409,
        "a pull whose position another pull moved is told so, not answered as a fault: {}",
        shared.body
    );
    assert_eq!(
        shared.json(),
        json!({ "message": "Conflict: another pull of this feed token moved its position while this one was answered: give each bouncer a feed token of its own" })
    );
    // The token still works: the next pull is answered from where the position is.
    pull(&server, &key, "");
}

#[test]
fn filters_and_the_tokens_decision_type_shape_what_a_bouncer_gets() {
    let server = own();
    let app = TestApp::on(&server);
    let (_, captcha) = app.feed_token(json!({ "scope": "all", "decisionType": "captcha" }));
    app.add_with(&[("ip", "23.94.10.1"), ("comment", "SSH-bf")]);
    app.add_with(&[("ip", "23.94.10.2"), ("comment", "http probing")]);
    assert_eq!(server.edit_global_list(&["45.80.0.0/16"], &[]).status, 200);
    let every = pull(&server, &captcha, "startup=true").json();
    assert!(
        every["new"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["type"] == "captcha"),
        "{every}"
    );
    let ips = pull(&server, &captcha, "startup=true&scopes=ip").json();
    assert_eq!(values(&ips, "new").len(), 2);
    let global = pull(&server, &captcha, "startup=true&origins=greylist-global").json();
    assert_eq!(values(&global, "new"), vec!["45.80.0.0/16".to_owned()]);
    let ssh = pull(
        &server,
        &captcha,
        "startup=true&scenarios_containing=ssh,nothing&unknown=1",
    )
    .json();
    assert_eq!(values(&ssh, "new"), vec!["23.94.10.1".to_owned()]);
    let not_ssh = pull(
        &server,
        &captcha,
        "startup=true&scenarios_not_containing=ssh,global",
    )
    .json();
    assert_eq!(values(&not_ssh, "new"), vec!["23.94.10.2".to_owned()]);
    // A deletion carries no comment: it goes out to a bouncer that filters by one.
    app.remove("23.94.10.1");
    let gone = pull(&server, &captcha, "scenarios_containing=ssh").json();
    assert_eq!(
        values(&gone, "deleted"),
        vec!["23.94.10.1".to_owned()],
        "a deletion passes a scenario filter, carrying no comment"
    );
    let refused = send(
        "POST",
        &format!("{}/api/feedTokens", server.base),
        &[
            ("Authorization", format!("Bearer {}", app.token)),
            (
                "Content-Type",
                "application/x-www-form-urlencoded".to_owned(),
            ),
        ],
        Some(b"decisionType=block"),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
}

#[test]
fn a_key_missing_unknown_or_revoked_is_the_local_apis_403_and_every_error_has_a_message() {
    let app = TestApp::new();
    let (id, key) = app.feed_token(json!({}));
    let forbidden = |resp: Resp| {
        assert_eq!(
            resp.status, 403,
            "a bouncer without a good key is answered the Local API's access forbidden: {}",
            resp.body
        );
        assert_eq!(resp.json(), json!({ "message": "access forbidden" }));
    };
    forbidden(pull_at(&app.server, "GET", "/v1/decisions/stream", None));
    forbidden(pull_at(
        &app.server,
        "GET",
        "/v1/decisions/stream",
        Some("glf_0123"),
    ));
    forbidden(pull_at(
        &app.server,
        "GET",
        "/v1/decisions/stream",
        Some(&app.token),
    ));
    forbidden(pull_at(
        &app.server,
        "GET",
        "/v1/decisions?ip=8.8.8.8",
        None,
    ));
    // A base URL with or without its slash.
    for path in [
        "/v1/decisions/stream?startup=true",
        "//v1/decisions/stream?",
        "/v1/decisions/stream/",
    ] {
        assert_eq!(
            pull_at(&app.server, "GET", path, Some(&key)).status,
            200,
            "{path}"
        );
    }
    for (method, path, status) in [
        ("POST", "/v1/decisions/stream", 405),
        ("GET", "/v1/watchers/login", 405),
        ("GET", "/v1/metrics", 404),
        ("GET", "/v1/decisions?ip=300.1.1.1", 400),
        ("GET", "/v1/decisions", 400),
    ] {
        let resp = pull_at(&app.server, method, path, Some(&key));
        assert_eq!(resp.status, status, "{method} {path}: {}", resp.body);
        assert!(
            resp.json()["message"].is_string(),
            "{method} {path}: {}",
            resp.body
        );
    }
    let revoked = send(
        "DELETE",
        &format!("{}/api/feedTokens/{id}", app.server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(revoked.status, 204);
    forbidden(pull_at(
        &app.server,
        "GET",
        "/v1/decisions/stream",
        Some(&key),
    ));
    let head = pull_at(&app.server, "HEAD", "/v1/decisions/stream", Some(&key));
    assert_eq!(head.status, 403);
}

#[test]
fn live_mode_answers_the_decisions_on_one_address_or_exactly_null() {
    let server = own();
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    app.add_with(&[("ip", "23.94.11.1"), ("comment", "scanner")]);
    assert_eq!(
        server
            .edit_global_list(&["45.81.0.0/16", "23.94.11.1"], &[])
            .status,
        200
    );
    let live = |ip: &str| {
        let resp = pull_at(
            &server,
            "GET",
            &format!("/v1/decisions?ip={ip}"),
            Some(&key),
        );
        assert_eq!(
            resp.status, 200,
            "live mode answers every address it is asked about: {}",
            resp.body
        );
        resp
    };
    for unlisted in ["23.94.11.2", "10.0.0.1", "2a00:1450:4001::1", "::1"] {
        assert_eq!(
            live(unlisted).body,
            "null",
            "live mode answers exactly null for an address nothing covers: {unlisted}"
        );
    }
    // An IPv4 address mapped into IPv6 is that address.
    assert_eq!(live("::ffff:23.94.11.1").json()[0]["value"], "23.94.11.1");
    let personal = live("23.94.11.1").json();
    assert_eq!(
        personal.as_array().unwrap().len(),
        1,
        "one decision for an address in both lists: {personal}"
    );
    assert_eq!(
        (&personal[0]["origin"], &personal[0]["scenario"]),
        (&json!("greylist"), &json!("scanner"))
    );
    let range = live("45.81.3.4").json();
    assert_eq!(
        (&range[0]["value"], &range[0]["origin"]),
        (&json!("45.81.0.0/16"), &json!("greylist-global"))
    );
    assert_eq!(server.edit_allow_list(&["45.81.3.4"], &[]).status, 200);
    assert_eq!(live("45.81.3.4").body, "null");
}

#[test]
fn the_token_list_shows_who_pulled_last_and_what() {
    let app = TestApp::new();
    let (id, key) = app.feed_token(json!({ "scope": "all", "decisionType": "captcha" }));
    pull(&app.server, &key, "startup=true");
    let listed = app.get("/api/feedTokens").json();
    let mine = listed["feedTokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap();
    assert_eq!(
        (
            &mine["userAgent"],
            &mine["pulled"],
            &mine["decisionType"],
            &mine["scope"]
        ),
        (
            &json!(BOUNCER),
            &json!("decisions"),
            &json!("captcha"),
            &json!("all")
        )
    );
    assert!(mine["lastUsed"].is_string());
}
