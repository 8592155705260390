//! Floods at the operator's door, as the third security read found them: made-up
//! keys from many clients (IPv4 and IPv6) are refused without a call into the
//! directory and counted a tally at a time, while a license's revocation goes
//! through within its bound; an IPv6 client is limited by its /64, however many
//! of its addresses it rotates through; a revoked key is refused within
//! `CACHE_SECONDS`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{send, Mode, Resp, Server, TestApp, ADMIN_TOKEN, UNAUTHORIZED};

/// An operator call with `key`, from `client` as `CF-Connecting-IP` says.
fn from(server: &Server, client: &str, key: &str) -> Resp {
    send(
        "GET",
        &format!("{}/admin/status", server.base),
        &[
            ("Authorization", format!("Bearer {key}")),
            ("CF-Connecting-IP", client.to_owned()),
        ],
        None,
    )
}

/// A key of the right shape that no one was given.
fn made_up(n: u64) -> String {
    format!("gok_{n:064x}")
}

/// The Durable Object requests made since the runtime started.
fn object_requests(server: &Server) -> u64 {
    let resp = send("GET", &format!("{}/__test/meter", server.base), &[], None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["counts"]["durableObjectRequests"]
        .as_u64()
        .unwrap()
}

/// The refusals' rows of the audit log (reading it tells the directory what the
/// isolate counted).
fn refusal_rows(server: &Server) -> Vec<Value> {
    let resp = server.admin("GET", "/admin/audit?limit=1000", None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let rows = resp.json()["entries"].as_array().unwrap().clone();
    rows.into_iter()
        .filter(|row| row["action"] == "refused")
        .collect()
}

/// 100 IPv4 clients and 100 IPv6 ones, each of a /64 of its own.
fn clients() -> Vec<String> {
    (0..100)
        .map(|n| format!("198.18.7.{n}"))
        .chain((0..100).map(|n| format!("2001:db8:{n:x}:1::{n:x}")))
        .collect()
}

#[test]
fn made_up_keys_from_many_clients_reach_no_object_while_a_revocation_goes_through() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let (_, feed) = app.feed_token(json!({}));
    let clients = clients();
    // Warm: the keys' record is read, and the minute's first refusal told.
    assert_eq!(from(&server, "198.18.8.1", &made_up(0)).status, 401);
    let before = object_requests(&server);
    let refused = AtomicU64::new(1);
    let (revoked_in, refused_after) = thread::scope(|scope| {
        for lane in 0..4u64 {
            let (server, clients, refused) = (&server, &clients, &refused);
            scope.spawn(move || {
                for n in (lane..4_000).step_by(4) {
                    let client = &clients[n as usize % clients.len()];
                    let resp = from(server, client, &made_up(1 + n));
                    assert_eq!(resp.status, 401, "{client}: {}", resp.body);
                    refused.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        // The revocation, in the thick of it.
        thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        let path = format!("/admin/licenses/{}", app.license);
        let revoked = server.admin("DELETE", &path, None);
        assert_eq!(revoked.status, 204, "{}", revoked.body);
        let revoked_in = started.elapsed();
        let check = app.check_with(Some(format!("Bearer {}", app.token)), Mode::Plain);
        let pull = app.feed_with(&format!("Bearer {feed}"), "", None);
        (revoked_in, [check, pull])
    });
    assert!(
        revoked_in < Duration::from_secs(5),
        "the revocation took {revoked_in:?} under the flood"
    );
    for resp in refused_after {
        assert_eq!(
            (resp.status, resp.body.as_str()),
            (401, UNAUTHORIZED),
            "refused at once"
        );
    }
    let spent = object_requests(&server) - before;
    let refusals = refused.load(Ordering::SeqCst);
    assert_eq!(refusals, 4_001);
    // The revocation's own calls (the directory, the revocations' object and the
    // holder's), and the tally told at each minute's first refusal: never a call
    // a refusal.
    assert!(
        spent <= 12,
        "{refusals} refusals and a revocation made {spent} Durable Object requests"
    );
    // Every refusal is in the log, counted on the rows of its client.
    let rows = refusal_rows(&server);
    let counted: u64 = rows.iter().map(|row| row["count"].as_u64().unwrap()).sum();
    assert_eq!(
        counted,
        refusals,
        "every refused call is counted in the audit log, in {} rows",
        rows.len()
    );
    server.kill();
}

#[test]
fn an_ipv6_client_is_limited_by_its_64_however_many_addresses_it_rotates() {
    let server = Server::own(&[]);
    let key = made_up(7);
    // The limit counts per fixed 60-second window, and the flood may straddle two.
    let limited = (0..1_500u64).find(|n| {
        let client = format!("2001:db8:5:6:{:x}:{:x}::1", n >> 16, n & 0xffff);
        from(&server, &client, &key).status == 429
    });
    let answered = limited.expect("1 500 addresses of one /64, and none limited");
    assert!(
        (600..=1200).contains(&answered),
        "limited after {answered} calls, not after 600 in a window"
    );
    assert_eq!(
        from(&server, "2001:db8:5:6::2", &key).status,
        429,
        "any address of the /64"
    );
    assert_eq!(
        from(&server, "2001:db8:5:7::1", &key).status,
        401,
        "the next /64 is another client"
    );
    assert_eq!(
        from(&server, "198.18.9.1", ADMIN_TOKEN).status,
        200,
        "ADMIN_TOKEN is never counted"
    );
    server.kill();
}

#[test]
fn a_revoked_operator_key_is_refused_within_cache_seconds_without_the_directory() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let made = server.admin(
        "POST",
        "/admin/keys",
        Some(json!({ "name": "deputy", "role": "admin" })),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let (id, key) = (
        made.json()["id"].as_str().unwrap().to_owned(),
        made.json()["key"].as_str().unwrap().to_owned(),
    );
    assert_eq!(from(&server, "198.18.9.2", &key).status, 200);
    let before = object_requests(&server);
    for _ in 0..20 {
        assert_eq!(from(&server, "198.18.9.2", &key).status, 200);
    }
    assert_eq!(
        object_requests(&server) - before,
        20 * 2,
        "each status asks the writer and the directory, and the key costs none"
    );
    let revoked = server.admin("DELETE", &format!("/admin/keys/{id}"), None);
    assert_eq!(revoked.status, 204);
    // The isolate keeps what it read for CACHE_SECONDS - 30 seconds.
    server.advance(31);
    let refused = from(&server, "198.18.9.2", &key);
    assert_eq!(
        refused.status, 401,
        "the revoked key is refused once the copy it was read into is old: {}",
        refused.body
    );
    let rows = refusal_rows(&server);
    assert_eq!(
        (&rows[0]["actor"], &rows[0]["key"]),
        (&json!("deputy"), &json!(id)),
        "refused under its name"
    );
    server.kill();
}

/// The KV reads made since the runtime started.
fn kv_reads(server: &Server) -> u64 {
    let resp = send("GET", &format!("{}/__test/meter", server.base), &[], None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["counts"]["kvReads"].as_u64().unwrap()
}

#[test]
fn made_up_feed_tokens_from_one_client_are_counted_before_their_kv_read() {
    let server = Server::own(&[]);
    let poll = |client: &str, n: u64| {
        send(
            "GET",
            &format!("{}/api/greylistFeed", server.base),
            &[
                ("Authorization", format!("Bearer glf_{n:064x}")),
                ("CF-Connecting-IP", client.to_owned()),
            ],
            None,
        )
    };
    // Each made-up token has a poll budget of its own: only its client's counts.
    // The limit counts per fixed 60-second window, and the flood may straddle two.
    let limited = (0..1_300u64).find(|&n| poll("198.18.20.1", n).status == 429);
    let answered = limited.expect("1 300 made-up feed tokens from one client, and none limited");
    assert!(
        (600..=1200).contains(&answered),
        "limited after {answered} made-up feed tokens, not after 600 in a window"
    );
    // Fifty polls past the limit, each without a KV read. The window may turn
    // among them: a poll then answered 401 (its KV read counted, as the first
    // 600 of a window are) until the client is limited again.
    let (mut limited_polls, mut n) = (0, 10_000u64);
    while limited_polls < 50 {
        assert!(
            n < 11_500,
            "the client was not limited again after a window turned"
        );
        let before = kv_reads(&server);
        let status = poll("198.18.20.1", n).status;
        n += 1;
        if status == 429 {
            assert_eq!(
                kv_reads(&server) - before,
                0,
                "a made-up feed token past its client's limit cost a KV read"
            );
            limited_polls += 1;
        } else {
            assert_eq!(status, 401, "a made-up feed token's answer");
        }
    }
    assert_eq!(
        poll("198.18.20.2", 20_000).status,
        401,
        "another client is counted on its own"
    );
}
