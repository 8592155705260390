//! Bounded inputs, each with the attack of the third security read that found it
//! unbounded: made-up feed tokens and license keys of any shape, CrowdSec pulls
//! asking for any number of scenario words, appliance list names that break the
//! file they name, the IPv6 forms that carry a private IPv4 address, the message
//! of an IPv4-mapped address, `HEAD` on the decision stream after a revocation,
//! and a deployable build left with test hooks in it.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{send, Mode, Resp, Server, TestApp};

/// The Worker's billable calls since its runtime started (the test build's meter).
fn meter(server: &Server) -> Value {
    let resp = send("GET", &format!("{}/__test/meter", server.base), &[], None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["counts"].clone()
}

/// KV reads `work` made.
fn kv_reads(server: &Server, work: impl FnOnce()) -> i64 {
    let reads = |counts: Value| counts["kvReads"].as_i64().unwrap();
    let before = reads(meter(server));
    work();
    reads(meter(server)) - before
}

fn bouncer(server: &Server, method: &str, path: &str, key: &str) -> Resp {
    send(
        method,
        &format!("{}{path}", server.base),
        &[("X-Api-Key", key.to_owned())],
        None,
    )
}

#[test]
fn feed_tokens_and_license_keys_of_a_shape_never_issued_cost_no_kv_read() {
    // Its own server, whose isolate remembers what it read for 30 s.
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    let (_, real) = app.feed_token(json!({}));
    let hex = &real["glf_".len()..];
    let shapes = [
        "glf_".to_owned(),
        "glf_x".to_owned(),
        format!("glf_{}", &hex[1..]),
        format!("glf_{hex}0"),
        format!("glf_{}", hex.to_uppercase()),
        format!("glf_{}", "z".repeat(64)),
    ];
    let refused = kv_reads(&server, || {
        for made_up in &shapes {
            for _ in 0..3 {
                let feed = app.feed_with(&format!("Bearer {made_up}"), "", None);
                assert_eq!(feed.status, 401, "{made_up}: {}", feed.body);
                let pull = bouncer(&server, "GET", "/v1/decisions/stream", made_up);
                assert_eq!(pull.status, 403, "{made_up}: {}", pull.body);
                assert_eq!(pull.json(), json!({ "message": "access forbidden" }));
            }
        }
        let upper = format!("glk_{}", "A".repeat(64));
        for key in ["glk_abc", "glk_", &upper[..]] {
            assert_eq!(server.login(key).status, 401, "{key}");
        }
    });
    assert_eq!(refused, 0, "a shape never issued was looked up");

    // A made-up token of the right shape is read once, then remembered as no one's.
    let made_up = format!("glf_{}", "0".repeat(64));
    let unknown = kv_reads(&server, || {
        for _ in 0..5 {
            assert_eq!(
                app.feed_with(&format!("Bearer {made_up}"), "", None).status,
                401
            );
        }
    });
    assert_eq!(
        unknown, 1,
        "one read for the token, none for its next polls"
    );
    let pull = || app.feed_with(&format!("Bearer {real}"), "", None).status;
    assert_eq!(pull(), 200);
    let known = kv_reads(&server, || {
        for _ in 0..3 {
            assert_eq!(pull(), 200);
        }
    });
    assert_eq!(
        known, 0,
        "the real token is remembered after its first read"
    );
}

#[test]
fn a_scenario_filter_of_more_than_32_words_or_a_longer_word_is_a_400_with_a_message() {
    let app = TestApp::new();
    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    let words = |n: usize| {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    for parameter in ["scenarios_containing", "scenarios_not_containing"] {
        let pull = |value: &str| {
            bouncer(
                &app.server,
                "GET",
                &format!("/v1/decisions/stream?startup=true&{parameter}={value}"),
                &key,
            )
        };
        assert_eq!(pull(&words(32)).status, 200, "{parameter}");
        let many = pull(&words(33));
        assert_eq!(
            many.status, 400,
            "{parameter}: a 33rd word is refused: {}",
            many.body
        );
        let message = format!("Bad request: {parameter} takes at most 32 words, not 33");
        assert_eq!(many.json(), json!({ "message": message }));
        assert_eq!(pull(&"s".repeat(64)).status, 200);
        let long = pull(&format!("ssh,{}", "s".repeat(65)));
        assert_eq!(long.status, 400, "{parameter}: {}", long.body);
        let message = format!("Bad request: a word of {parameter} has at most 64 bytes, not 65");
        assert_eq!(long.json(), json!({ "message": message }));
    }
}

#[test]
fn an_appliance_list_name_starts_with_a_letter_and_is_no_nft_keyword_in_every_format() {
    let app = TestApp::new();
    let rule = "a letter, then up to 30 letters, digits, _ or -, and no nft keyword";
    for format in ["text", "json", "mikrotik", "nftables", "ipset"] {
        for name in ["timeout", "-exist", "1abc", "set", "_x", "flush", "Timeout"] {
            let resp = app.feed(&format!("format={format}&list={name}"));
            assert_eq!(
                resp.status, 400,
                "{format} {name}: a list name not of the rule is a 400: {}",
                resp.body
            );
            assert_eq!(
                resp.body,
                format!("Bad request: list is {rule}, not \"{name}\""),
                "{format}"
            );
            let json = app.feed(&format!("format={format}&list={name}&result_mode=json"));
            let result = format!("Bad request: list is {rule}, not \"{name}\"");
            assert_eq!(json.json(), json!({ "result": result }));
        }
        for name in ["greylist", "Timeouts", "edge-1", "b"] {
            let resp = app.feed(&format!("format={format}&list={name}"));
            assert_eq!(resp.status, 200, "{format} {name}: {}", resp.body);
        }
    }
}

#[test]
fn ipv6_forms_carrying_an_ipv4_address_are_public_only_as_that_address_is() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    for private in [
        "64:ff9b::10.0.0.1",
        "64:ff9b::a00:1",
        "::10.0.0.1",
        "::ffff:0:10.0.0.1",
        "::ffff:0:192.168.1.1",
        "fec0::1",
        "feff::1",
    ] {
        let answer = format!("[{private}] is private");
        assert_eq!(
            app.check(private),
            answer,
            "{private}: private, by the IPv4 address it carries or its block"
        );
        assert_eq!(app.add(private), answer);
        assert_eq!(app.remove(private), answer);
    }
    // One that carries a public IPv4 address is the IPv6 address it is.
    assert_eq!(
        app.add("64:ff9b::8.8.8.8"),
        "[64:ff9b::8.8.8.8] has been added to greylist"
    );
    assert_eq!(
        app.check("8.8.8.8"),
        "[8.8.8.8] is currently not on global greylist"
    );
    let feed = app.feed("");
    assert!(feed.body.contains("\n64:ff9b::808:808\n"), "{}", feed.body);
    // The operator's lists and the holder's allow list judge ranges the same way.
    let global = server.edit_global_list(&["64:ff9b::a00:0/104"], &[]);
    assert_eq!(global.status, 400, "{}", global.body);
    let allow = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "64:ff9b::a00:0/120")],
        Mode::Json,
    );
    assert_eq!(allow.result(), "[64:ff9b::a00:0/120] is private");
}

#[test]
fn an_ipv4_mapped_address_is_answered_as_given_and_acted_on_as_its_ipv4_address() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    assert_eq!(
        app.check("::ffff:8.8.4.4"),
        "[::ffff:8.8.4.4] is currently not on global greylist",
        "the answer names the address as it was given"
    );
    assert_eq!(
        app.add(" ::ffff:8.8.4.4\t"),
        "[::ffff:8.8.4.4] has been added to greylist"
    );
    assert_eq!(
        app.check("8.8.4.4"),
        "[8.8.4.4] is currently on your personal greylist",
        "listed as the IPv4 address"
    );
    assert_eq!(
        app.add("::FFFF:808:404"),
        "[::FFFF:808:404] is already on your greylist"
    );
    assert_eq!(app.add("::ffff:10.1.2.3"), "[::ffff:10.1.2.3] is private");
    let listed = app.list(&[]);
    assert_eq!(listed["entries"][0]["ip"], "8.8.4.4", "{listed}");
    assert_eq!(
        app.remove("::ffff:8.8.4.4"),
        "[::ffff:8.8.4.4] has been removed from greylist"
    );
}

#[test]
fn head_on_the_decision_stream_is_refused_at_once_after_a_revocation_as_get_is() {
    // Its own server, whose isolate keeps a token's and a license's standing for 30 s.
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let head = |key: &str| bouncer(&server, "HEAD", "/v1/decisions/stream", key).status;
    let get = |key: &str| bouncer(&server, "GET", "/v1/decisions/stream", key).status;

    let app = TestApp::on(&server);
    let (id, key) = app.feed_token(json!({}));
    assert_eq!((head(&key), get(&key)), (200, 200));
    let revoked = send(
        "DELETE",
        &format!("{}/api/feedTokens/{id}", server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(revoked.status, 204);
    assert_eq!(
        (head(&key), get(&key)),
        (403, 403),
        "HEAD and GET refuse a revoked feed token at once"
    );

    let other = TestApp::on(&server);
    let (_, key) = other.feed_token(json!({}));
    assert_eq!((head(&key), get(&key)), (200, 200));
    let revoked = server.admin(
        "DELETE",
        &format!("/admin/licenses/{}", other.license),
        None,
    );
    assert_eq!(revoked.status, 204);
    assert_eq!((head(&key), get(&key)), (403, 403), "a revoked license");
}

/// `make build` (which `make deploy` runs) with `build/` standing for a folder
/// of the test's own, holding the three Workers, the edge's module's bytes `wasm`:
/// make takes them as built (they are newer than every source) and only the
/// check runs.
fn make_build(folder: &Path, wasm: &[u8]) -> std::process::Output {
    // Nothing of an earlier run's folder, whose files the check would read too.
    let _ = fs::remove_dir_all(folder);
    let empty = b"\0asm\x01\0\0\0".as_slice();
    let halves = [("objects", empty), ("manage", empty), ("edge", wasm)];
    for (half, module) in halves {
        fs::create_dir_all(folder.join(half)).unwrap();
        fs::write(folder.join(half).join("index_bg.wasm"), module).unwrap();
        fs::write(folder.join(half).join("index.js"), "export default {};\n").unwrap();
    }
    // The configurations after the modules, as `make build` writes them.
    for (half, _) in halves {
        fs::write(folder.join(half).join("wrangler.json"), "{}\n").unwrap();
    }
    Command::new("make")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--no-print-directory", "build"])
        .arg(format!("DEPLOYABLE={}", folder.display()))
        // Not the jobs of the make that runs these tests, if one does.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .output()
        .unwrap()
}

#[test]
fn a_build_left_with_test_hooks_is_refused_by_the_build_wrangler_deploys_through() {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hooked-build");
    let hooked = make_build(&folder, b"\0asm\x01\0\0\0 POST /__test/clock ");
    let said = String::from_utf8_lossy(&hooked.stdout).into_owned()
        + &String::from_utf8_lossy(&hooked.stderr);
    assert!(
        !hooked.status.success(),
        "make build passed a test hook: {said}"
    );
    assert!(said.contains("carries test hooks"), "{said}");
    let clean = make_build(&folder, b"\0asm\x01\0\0\0 POST /api/x ");
    let said = String::from_utf8_lossy(&clean.stderr).into_owned();
    assert!(clean.status.success(), "{said}");
}
