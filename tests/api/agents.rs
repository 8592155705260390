//! For firewall agents: bulk changes with an answer per address, the feed with
//! its ETag and deltas, feed tokens, and the ipset agent in `contrib/`.

use serde_json::{json, Value};

use crate::helpers::{send, unique_ip, Encoding, Mode, Server, TestApp, LIMIT};

fn values(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["value"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether one of the feed's values (an address or a CIDR block) holds `ip`.
fn covers(values: &[String], ip: &str) -> bool {
    let addr = |text: &str| u32::from(text.parse::<std::net::Ipv4Addr>().unwrap());
    values.iter().any(|value| {
        let (base, bits) = value
            .split_once('/')
            .map_or((value.as_str(), 32), |(base, bits)| {
                (base, bits.parse().unwrap())
            });
        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
        addr(base) & mask == addr(ip) & mask
    })
}

#[test]
fn a_bulk_add_answers_each_address_as_the_single_operation_would() {
    let server = Server::shared();
    let app = TestApp::new();
    let global = unique_ip();
    let _global = server.listed("global-list", &[&global]);
    let _allowed = server.listed("allow-list", &["70.70.70.0/24"]);
    app.add("71.0.0.2");
    let sent = [
        "71.0.0.1",
        " 71.0.0.1 ",
        "not-an-ip",
        "10.0.0.1",
        "70.70.70.7",
        global.as_str(),
        "71.0.0.2",
        "",
    ];
    let form: String = sent
        .iter()
        .map(|ip| format!("ip={}&", ip.replace(' ', "+")))
        .collect::<String>()
        + "comment=bulk";
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "application/x-www-form-urlencoded",
        &form,
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let expected = [
        ("71.0.0.1", "[71.0.0.1] has been added to greylist", "added"),
        (
            "71.0.0.1",
            "[71.0.0.1] is already on your greylist",
            "already_personal",
        ),
        ("not-an-ip", "[not-an-ip] is invalid", "invalid"),
        ("10.0.0.1", "[10.0.0.1] is private", "private"),
        (
            "70.70.70.7",
            "[70.70.70.7] is on the global allow list, no action was taken",
            "allow_listed",
        ),
        (
            global.as_str(),
            &format!("[{global}] is already on global greylist"),
            "already_global",
        ),
        (
            "71.0.0.2",
            "[71.0.0.2] is already on your greylist",
            "already_personal",
        ),
        ("", "[] is invalid", "invalid"),
    ];
    let results: Vec<Value> = expected
        .iter()
        .map(|(ip, result, outcome)| json!({ "ip": ip, "result": result, "outcome": outcome }))
        .collect();
    assert_eq!(
        resp.json(),
        json!({ "results": results, "counts": { "added": 1, "already_personal": 2, "invalid": 2, "private": 1, "allow_listed": 1, "already_global": 1 } })
    );
    assert!(
        resp.header("RateLimit")
            .is_some_and(|r| r.starts_with("\"additions\";r=5998;")),
        "{:?}",
        resp.header("RateLimit")
    );
    for (ip, message, _) in &expected[..1] {
        assert_eq!(
            app.check(ip),
            format!("[{ip}] is currently on your personal greylist"),
            "{message}"
        );
    }

    let plain = app.bulk(
        "/api/deleteIpsFromChallengeList",
        "text/plain",
        "71.0.0.1\n71.0.0.9\n\n10.0.0.1\n",
        Mode::Plain,
    );
    assert_eq!(plain.content_type, "text/plain; charset=utf-8");
    assert_eq!(plain.body, "[71.0.0.1] has been removed from greylist\n[71.0.0.9] is not on greylist\n[10.0.0.1] is private\n");
    let by_json = app.bulk(
        "/api/addIpsToChallengeList",
        "application/json",
        r#"{"ips": ["71.0.0.3"], "ttl": 600, "comment": "scan"}"#,
        Mode::Json,
    );
    assert_eq!(by_json.json()["results"][0]["outcome"], "added");
}

#[test]
fn the_daily_limit_applies_item_by_item_inside_one_bulk_request() {
    let app = TestApp::on(&Server::limited());
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        "72.0.0.1\n72.0.0.2\n72.0.0.2\n72.0.0.3\n72.0.0.4\n72.0.0.5\n",
        Mode::Json,
    );
    let results: Vec<String> = resp.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["result"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        results,
        [
            "[72.0.0.1] has been added to greylist",
            "[72.0.0.2] has been added to greylist",
            "[72.0.0.2] is already on your greylist",
            "[72.0.0.3] has been added to greylist",
            LIMIT,
            LIMIT,
        ]
    );
    assert_eq!(
        app.check("72.0.0.4"),
        "[72.0.0.4] is currently not on global greylist"
    );
    assert!(resp
        .header("RateLimit")
        .is_some_and(|r| r.starts_with("\"additions\";r=0;")));
}

#[test]
fn a_bulk_request_takes_1000_addresses_and_refuses_1001_changing_nothing() {
    let app = TestApp::new();
    let addresses = |count: u32| {
        (0..count)
            .map(|n| format!("73.0.{}.{}", n >> 8, n & 255))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let too_many = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        &addresses(1001),
        Mode::Json,
    );
    assert_eq!(too_many.status, 413);
    assert_eq!(
        too_many.json(),
        json!({ "result": "Payload too large: at most 1000 addresses a request, not 1001" })
    );
    assert_eq!(
        app.check("73.0.0.0"),
        "[73.0.0.0] is currently not on global greylist",
        "nothing changed"
    );
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        &addresses(1000),
        Mode::Json,
    );
    assert_eq!(resp.json()["counts"], json!({ "added": 1000 }));
    assert_eq!(
        app.check("73.0.3.231"),
        "[73.0.3.231] is currently on your personal greylist"
    );
}

#[test]
fn the_feed_lists_what_the_firewall_should_challenge_with_an_etag() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    server.edit_global_list(&["74.74.0.0/16", "75.75.75.75"], &[]);
    app.add("76.0.0.9");
    let added = app.call(
        "/api/addIpToGreylist",
        "76.0.0.1",
        Encoding::Multipart,
        Mode::Json,
    );
    assert_eq!(added.result(), "[76.0.0.1] has been added to greylist");
    app.add("77.7.7.7");
    // Allowed after it was added: it leaves the feed all the same.
    server.edit_allow_list(&["77.7.7.0/24"], &[]);

    let text = app.feed("");
    assert_eq!(text.content_type, "text/plain; charset=utf-8");
    let lines: Vec<&str> = text.body.lines().collect();
    assert!(
        lines[0].starts_with("# greylist feed, version "),
        "{}",
        lines[0]
    );
    assert_eq!(
        &lines[1..],
        ["76.0.0.1", "76.0.0.9", "# end of feed, 2 entries"],
        "the count closes the feed, so a cut transfer shows"
    );
    let all = app.feed("scope=all").body;
    assert!(
        all.lines().any(|line| line == "74.74.0.0/16")
            && all.lines().any(|line| line == "75.75.75.75"),
        "{all}"
    );
    assert!(
        !all.lines().any(|line| line.starts_with("77.7.7.")),
        "allow-listed entries never show"
    );

    let etag = text.header("ETag").unwrap().to_owned();
    let again = app.feed_with(&format!("Bearer {}", app.token), "", Some(&etag));
    assert_eq!(
        (again.status, again.body.as_str(), again.header("ETag")),
        (304, "", Some(etag.as_str()))
    );
    app.remove("76.0.0.9");
    let changed = app.feed_with(&format!("Bearer {}", app.token), "", Some(&etag));
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("ETag"), Some(etag.as_str()));

    let json = app.feed_json("format=json");
    assert_eq!(
        json["entries"],
        json!([{ "value": "76.0.0.1", "scope": "personal", "expiresAt": null, "comment": null }])
    );
    assert_eq!(json["cursor"], json["version"]);
    server.kill();
}

#[test]
fn deltas_carry_adds_removes_and_expiries_once_each_with_their_latest_state() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("78.0.0.1");
    app.add("78.0.0.2");
    let start = app.feed_json("format=json");
    let cursor = start["cursor"].as_str().unwrap().to_owned();
    assert_eq!(values(&start["entries"]), ["78.0.0.1", "78.0.0.2"]);

    let expiring = app.call(
        "/api/addIpToGreylist",
        "78.0.0.3",
        Encoding::Urlencoded,
        Mode::Json,
    );
    assert_eq!(expiring.result(), "[78.0.0.3] has been added to greylist");
    let ttl = app.post(
        "/api/addIpToGreylist",
        Mode::Json,
        &[("Content-Type", "application/x-www-form-urlencoded".into())],
        b"ip=78.0.0.4&ttl=60&comment=brief",
    );
    assert_eq!(ttl.result(), "[78.0.0.4] has been added to greylist");
    app.remove("78.0.0.1");
    app.add("78.0.0.5");
    app.remove("78.0.0.5");
    app.add("78.0.0.5");
    let delta = app.feed_json(&format!("format=json&since={cursor}"));
    assert_eq!(values(&delta["new"]), ["78.0.0.3", "78.0.0.4", "78.0.0.5"]);
    assert_eq!(delta["new"][1]["comment"], "brief");
    assert_eq!(values(&delta["deleted"]), ["78.0.0.1"]);
    let next = delta["cursor"].as_str().unwrap().to_owned();
    assert_eq!(
        app.feed_json(&format!("format=json&since={next}")),
        json!({ "new": [], "deleted": [], "cursor": next })
    );

    server.advance(61);
    let expired = app.feed_json(&format!("format=json&since={next}"));
    assert_eq!(
        (values(&expired["new"]), values(&expired["deleted"])),
        (vec![], vec!["78.0.0.4".to_owned()])
    );
    assert!(
        !app.feed("").body.contains("78.0.0.4"),
        "an expired entry is never in the feed"
    );

    let future = app.feed_json("format=json&since=999999.0.0");
    assert_eq!(
        future["reset"], true,
        "a cursor the service does not know gets the whole feed"
    );
    assert_eq!(
        values(&future["entries"]),
        ["78.0.0.2", "78.0.0.3", "78.0.0.5"]
    );
    let bad = app.feed("format=json&since=yesterday");
    assert_eq!(bad.status, 400);
    server.kill();
}

/// The delta since `cursor` as (deleted, new) values, and the next cursor; applied
/// to `held`, as a firewall applies it.
fn delta(
    app: &TestApp,
    held: &mut std::collections::BTreeSet<String>,
    cursor: &str,
) -> (Vec<String>, Vec<String>, String) {
    let answer = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(
        answer["reset"],
        Value::Null,
        "a delta, not the whole feed: {answer}"
    );
    let (deleted, new) = (values(&answer["deleted"]), values(&answer["new"]));
    for value in &deleted {
        held.remove(value);
    }
    held.extend(new.iter().cloned());
    (deleted, new, answer["cursor"].as_str().unwrap().to_owned())
}

#[test]
fn an_operator_edit_reaches_a_scope_all_delta_as_that_change_alone() {
    // Its own server: on the shared one, other tests' edits of the global list would be in the deltas.
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let many: Vec<String> = (0..300)
        .map(|n| format!("45.1.{}.{}", n / 200, n % 200))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(server.edit_global_list(&many, &[]).status, 200);
    assert_eq!(server.edit_global_list(&["45.0.0.1"], &[]).status, 200);
    app.add("79.0.0.1");
    let whole = app.feed_json("scope=all&format=json");
    let mut held: std::collections::BTreeSet<String> =
        values(&whole["entries"]).into_iter().collect();
    assert!(held.len() > 3);
    let cursor = whole["cursor"].as_str().unwrap().to_owned();

    assert_eq!(server.edit_global_list(&["45.0.0.9"], &[]).status, 200);
    let (deleted, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!(
        (deleted, new),
        (vec![], vec!["45.0.0.9".to_owned()]),
        "one address added, one sent"
    );

    assert_eq!(server.edit_global_list(&[], &["45.0.0.1"]).status, 200);
    let (deleted, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!((deleted, new), (vec!["45.0.0.1".to_owned()], vec![]));

    // A neighbour joins: the firewall's block is replaced by the wider one the whole feed shows.
    assert_eq!(server.edit_global_list(&["45.0.0.8"], &[]).status, 200);
    let (deleted, new, after_neighbour) = delta(&app, &mut held, &cursor);
    assert_eq!(
        (deleted, new),
        (vec!["45.0.0.9".to_owned()], vec!["45.0.0.8/31".to_owned()])
    );

    // Several versions at once compose into their net change.
    assert_eq!(server.edit_global_list(&["45.0.0.20"], &[]).status, 200);
    assert_eq!(
        server
            .edit_global_list(&[], &["45.0.0.20", "45.0.0.8"])
            .status,
        200
    );
    let (deleted, new, cursor) = delta(&app, &mut held, &after_neighbour);
    assert_eq!(
        (deleted, new),
        (vec!["45.0.0.8/31".to_owned()], vec!["45.0.0.9".to_owned()])
    );

    // An address that is both the holder's entry and a global block is the holder's in a delta.
    app.add("46.0.0.1");
    let (_, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!(new, ["46.0.0.1"]);
    assert_eq!(server.edit_global_list(&["46.0.0.1"], &[]).status, 200);
    let (deleted, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!(
        (deleted, new),
        (vec![], vec![]),
        "the firewall holds it already"
    );
    assert_eq!(server.edit_global_list(&[], &["46.0.0.1"]).status, 200);
    let (deleted, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!((deleted, new), (vec![], vec![]), "the holder's entry stays");

    // What a firewall holds after the deltas is what the whole feed says.
    let whole: std::collections::BTreeSet<String> =
        values(&app.feed_json("scope=all&format=json")["entries"])
            .into_iter()
            .collect();
    assert_eq!(held, whole);

    // A change of the allow list is a delta too.
    assert_eq!(server.edit_allow_list(&["45.1.0.0/24"], &[]).status, 200);
    let (deleted, new, _) = delta(&app, &mut held, &cursor);
    assert!(covers(&deleted, "45.1.0.5"), "{deleted:?}");
    assert!(new.is_empty(), "{new:?}");
    assert!(!covers(
        &held.iter().cloned().collect::<Vec<_>>(),
        "45.1.0.5"
    ));
    assert!(held.contains("79.0.0.1"));
    server.kill();
}

/// The whole feed's values, as a set.
fn whole(app: &TestApp, query: &str) -> std::collections::BTreeSet<String> {
    values(&app.feed_json(query)["entries"])
        .into_iter()
        .collect()
}

#[test]
fn an_allow_list_edit_reaches_a_delta_as_what_it_hides_and_shows() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(
        server
            .edit_global_list(&["47.0.0.0/16", "48.0.0.1"], &[])
            .status,
        200
    );
    let commented = app.add_with(&[("ip", "49.0.0.1"), ("comment", "scanner")]);
    assert_eq!(commented.status, 200, "{}", commented.body);
    app.add("49.0.0.2");
    let first = app.feed_json("scope=all&format=json");
    let mut held: std::collections::BTreeSet<String> =
        values(&first["entries"]).into_iter().collect();
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    let personal = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();

    // The allow list takes a /24 out of a global block, and two of the holder's own addresses.
    assert_eq!(
        server
            .edit_allow_list(&["47.0.1.0/24", "49.0.0.0/30"], &[])
            .status,
        200
    );
    let (deleted, new, cursor) = delta(&app, &mut held, &cursor);
    assert_eq!(
        deleted,
        ["49.0.0.1", "49.0.0.2", "47.0.0.0/16"],
        "the holder's entries it now holds, then the global block it cuts"
    );
    assert_eq!(new.len(), 8, "the rest of the /16 as blocks: {new:?}");
    assert!(new.contains(&"47.0.0.0/24".to_owned()) && new.contains(&"47.0.128.0/17".to_owned()));
    assert_eq!(held, whole(&app, "scope=all&format=json"));
    let personal_delta = app.feed_json(&format!("format=json&since={personal}"));
    assert_eq!(personal_delta["reset"], Value::Null, "{personal_delta}");
    assert_eq!(
        (
            values(&personal_delta["deleted"]),
            values(&personal_delta["new"])
        ),
        (vec!["49.0.0.1".to_owned(), "49.0.0.2".to_owned()], vec![]),
        "a personal feed drops the holder's entries the allow list now holds"
    );

    // Taken back: what it hid comes back as it was, the comment with it.
    assert_eq!(
        server
            .edit_allow_list(&[], &["47.0.1.0/24", "49.0.0.0/30"])
            .status,
        200
    );
    let answer = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    assert_eq!(answer["reset"], Value::Null, "{answer}");
    let (deleted, new) = (values(&answer["deleted"]), values(&answer["new"]));
    assert_eq!(deleted.len(), 8, "{deleted:?}");
    assert_eq!(
        new,
        ["49.0.0.1", "49.0.0.2", "47.0.0.0/16"],
        "the holder's entries the allow list let go come back in the delta"
    );
    assert_eq!(answer["new"][0]["comment"], "scanner", "{answer}");
    for value in &deleted {
        held.remove(value);
    }
    held.extend(new);
    assert_eq!(held, whole(&app, "scope=all&format=json"));
    server.kill();
}

#[test]
fn feed_tokens_open_the_feed_only_and_die_with_revocation() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("80.0.0.1");
    let created = app.create_feed_token();
    assert_eq!(created.status, 201, "{}", created.body);
    let (id, token) = (
        created.json()["id"].as_str().unwrap().to_owned(),
        created.json()["feedToken"].as_str().unwrap().to_owned(),
    );
    assert!(token.starts_with("glf_"), "{token}");

    let bearer = app.feed_with(&format!("Bearer {token}"), "", None);
    assert_eq!(
        (bearer.status, bearer.body.lines().nth(1)),
        (200, Some("80.0.0.1"))
    );
    let basic = format!("Basic {}", base64(&format!("firewall:{token}")));
    assert_eq!(app.feed_with(&basic, "", None).status, 200);

    let listed = app.get("/api/feedTokens");
    let tokens = listed.json()["feedTokens"].clone();
    assert_eq!(tokens.as_array().unwrap().len(), 1);
    assert_eq!(tokens[0]["id"], id.as_str());
    assert!(tokens[0]["lastUsed"].is_string(), "{tokens}");
    assert!(
        !listed.body.contains(&token),
        "the token is shown once only"
    );

    let as_feed_token = [("Authorization", format!("Bearer {token}"))];
    for (method, path) in [
        ("POST", "/api/checkIpOnGreylist"),
        ("POST", "/api/listGreylist"),
        ("GET", "/api/feedTokens"),
        ("POST", "/admin/licenses"),
    ] {
        let resp = send(
            method,
            &format!("{}{path}", server.base),
            &as_feed_token,
            Some(b"ip=80.0.0.1"),
        );
        assert_eq!(resp.status, 401, "{method} {path}");
    }

    let revoke = |id: &str| {
        send(
            "DELETE",
            &format!("{}/api/feedTokens/{id}", server.base),
            &[("Authorization", format!("Bearer {}", app.token))],
            None,
        )
    };
    assert_eq!(revoke(&id).status, 204);
    assert_eq!(
        app.feed_with(&format!("Bearer {token}"), "", None).status,
        401,
        "revoked at once"
    );
    assert_eq!(revoke(&id).status, 404);

    for _ in 0..20 {
        assert_eq!(app.create_feed_token().status, 201);
    }
    let one_too_many = app.create_feed_token();
    assert_eq!(one_too_many.status, 409, "{}", one_too_many.body);
    assert_eq!(
        one_too_many.body,
        "Conflict: at most 20 feed tokens; revoke one first"
    );
    let other = TestApp::on(&server);
    let other_token = other.create_feed_token().json()["feedToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        server
            .admin(
                "DELETE",
                &format!("/admin/licenses/{}", other.license),
                None
            )
            .status,
        204
    );
    assert_eq!(
        other
            .feed_with(&format!("Bearer {other_token}"), "", None)
            .status,
        401,
        "a revoked license's feed tokens are dead"
    );
    server.kill();
}

fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    text.as_bytes()
        .chunks(3)
        .flat_map(|chunk| {
            let word = chunk
                .iter()
                .enumerate()
                .fold(0u32, |word, (i, &b)| word | u32::from(b) << (16 - 8 * i));
            (0..4).map(move |i| {
                if i <= chunk.len() {
                    ALPHABET[(word >> (18 - 6 * i) & 63) as usize] as char
                } else {
                    '='
                }
            })
        })
        .collect()
}

#[test]
fn a_feed_sweeps_one_batch_of_expired_entries_and_the_alarm_the_rest() {
    let server = Server::own(&[("DAILY_ADDITIONS", "10000")]);
    let app = TestApp::on(&server);
    let cursor = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for batch in 0..2 {
        let ips: Vec<String> = (0..750)
            .map(|n| format!("83.0.{}.{}", batch * 3 + n / 250, n % 250))
            .collect();
        let body = json!({ "ips": ips, "ttl": 60 }).to_string();
        let added = app.bulk(
            "/api/addIpsToGreylist",
            "application/json",
            &body,
            Mode::Json,
        );
        assert_eq!(added.json()["counts"]["added"], 750, "{}", added.body);
    }
    server.advance(61);
    let changes = || app.history()["result"].as_str().unwrap().to_owned();
    let first = app.feed_json(&format!("format=json&since={cursor}"));
    assert_eq!(
        first["deleted"].as_array().unwrap().len(),
        1500,
        "every expired entry leaves the firewall, swept or not"
    );
    assert_eq!(
        changes(),
        "2500 changes",
        "1 500 added, and one batch of 1 000 expired: the feed's work is bounded"
    );
    server.run_holder_alarm(&app.license);
    assert_eq!(changes(), "3000 changes", "the alarm swept the rest");
    server.kill();
}

#[test]
fn a_feed_token_reads_what_its_scope_allows() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    server.edit_global_list(&["81.0.0.9"], &[]);
    app.add("81.0.0.1");
    // A token asked for with this body, sent with this content type (or none).
    let ask = |content_type: Option<&str>, body: &str| {
        let mut headers = vec![("Authorization", format!("Bearer {}", app.token))];
        headers.extend(content_type.map(|t| ("Content-Type", t.to_owned())));
        send(
            "POST",
            &format!("{}/api/feedTokens", server.base),
            &headers,
            Some(body.as_bytes()),
        )
    };
    let create = |content_type: Option<&str>, body: &str| {
        let resp = ask(content_type, body);
        assert_eq!(resp.status, 201, "{body}: {}", resp.body);
        let json = resp.json();
        (
            json["feedToken"].as_str().unwrap().to_owned(),
            json["scope"].as_str().unwrap().to_owned(),
        )
    };
    let form = Some("application/x-www-form-urlencoded");
    let (personal, scope) = create(None, "");
    assert_eq!(
        scope, "personal",
        "a token is personal unless all is asked (the default)"
    );
    let (also_personal, _) = create(form, "scope=personal");
    let (all, scope) = create(form, "scope=all");
    assert_eq!(scope, "all");
    let (all_json, scope) = create(Some("application/json"), r#"{"scope": "all"}"#);
    assert_eq!(scope, "all");

    let feed = |token: &str, query: &str| app.feed_with(&format!("Bearer {token}"), query, None);
    for token in [&personal, &also_personal] {
        assert_eq!(feed(token, "").status, 200);
        let refused = feed(token, "scope=all");
        assert_eq!(
            refused.status, 403,
            "a personal token is refused the scope=all feed: {}",
            refused.body
        );
        assert!(
            refused
                .body
                .contains("Forbidden: this feed token reads the personal list only"),
            "{}",
            refused.body
        );
    }
    for token in [&all, &all_json] {
        let whole = feed(token, "scope=all");
        assert_eq!(whole.status, 200, "{}", whole.body);
        assert!(whole.body.contains("\n81.0.0.9\n") && whole.body.contains("\n81.0.0.1\n"));
    }
    let listed = app.get("/api/feedTokens").json()["feedTokens"].clone();
    let mut scopes: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|token| token["scope"].as_str().unwrap())
        .collect();
    scopes.sort();
    assert_eq!(scopes, ["all", "all", "personal", "personal"]);

    for (content_type, body) in [
        (form, "scope=everything"),
        (Some("application/json"), r#"{"scope": 1}"#),
    ] {
        let refused = ask(content_type, body);
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
    }
    assert_eq!(
        app.get("/api/feedTokens").json()["feedTokens"]
            .as_array()
            .unwrap()
            .len(),
        4,
        "a refusal makes no token"
    );
}
