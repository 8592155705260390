//! The operator's lists: one writer, published snapshots, ranges, import and export.
//! Edits on the shared server use addresses no other test uses; a replacement of a
//! whole list runs on a server of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use serde_json::json;

use crate::helpers::{
    gzip, kv_put_local, send, unique_ip, Encoding, Mode, Resp, Server, TestApp, ADMIN_TOKEN,
};

/// The entries of an export, without its header line.
fn entries_of(export: &Resp) -> Vec<String> {
    assert_eq!(export.status, 200, "{}", export.body);
    export
        .body
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn ranges_on_the_global_list_answer_check_and_add() {
    let server = Server::shared();
    let _cleanup = server.taken_off_at_end("global-list", &["57.57.0.0/16"]);
    assert_eq!(
        server.edit_global_list(&["57.57.0.0/16"], &[]).json(),
        json!({ "added": 1, "removed": 0 })
    );
    let app = TestApp::new();
    for inside in ["57.57.0.0", "57.57.128.9", "57.57.255.255"] {
        assert_eq!(
            app.check(inside),
            format!("[{inside}] is on global greylist")
        );
        assert_eq!(
            app.add(inside),
            format!("[{inside}] is already on global greylist")
        );
    }
    for outside in ["57.56.255.255", "57.58.0.0"] {
        assert_eq!(
            app.check(outside),
            format!("[{outside}] is currently not on global greylist")
        );
    }
    assert_eq!(
        app.remove("57.57.1.1"),
        "[57.57.1.1] is not on greylist",
        "remove looks at the personal list only"
    );
    assert_eq!(
        server.edit_global_list(&[], &["57.57.0.0/16"]).json(),
        json!({ "added": 0, "removed": 1 })
    );
    assert_eq!(
        app.add("57.57.1.1"),
        "[57.57.1.1] has been added to greylist"
    );
}

#[test]
fn the_global_list_refuses_wide_and_private_ranges() {
    let server = Server::shared();
    for (entry, why) in [
        ("58.0.0.0/7", "wider than /8"),
        ("10.20.0.0/16", "private"),
        ("192.168.1.0/24", "private"),
        ("58.1.1.5/24", "host bits"),
    ] {
        let resp = server.edit_global_list(&[entry], &[]);
        assert_eq!(resp.status, 400, "{entry}");
        let message = resp.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(entry) && message.contains(why),
            "{entry}: {message}"
        );
    }
    assert_eq!(
        server
            .edit_allow_list(&["10.20.0.0/16"], &["10.20.0.0/16"])
            .status,
        200,
        "the allow list takes any range"
    );
}

#[test]
fn the_allow_list_beats_the_global_list() {
    let server = Server::shared();
    let _global = server.listed("global-list", &["59.59.0.0/16"]);
    let _allowed = server.listed("allow-list", &["59.59.59.0/24"]);
    let app = TestApp::new();
    assert_eq!(
        app.check("59.59.59.59"),
        "[59.59.59.59] is on the global allow list, no action was taken",
        "the global allow list answers a check over the global list"
    );
    assert_eq!(
        app.add("59.59.59.59"),
        "[59.59.59.59] is on the global allow list, no action was taken",
        "the global allow list answers an add over the global list"
    );
    assert_eq!(
        app.check("59.59.60.1"),
        "[59.59.60.1] is on global greylist"
    );
}

#[test]
fn an_edit_takes_10_000_entries_and_refuses_more() {
    let server = Server::shared();
    let entries: Vec<String> = (0..10_000u32)
        .map(|n| format!("60.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255))
        .collect();
    let refs: Vec<&str> = entries.iter().map(String::as_str).collect();
    let _cleanup = server.taken_off_at_end("global-list", &refs);
    assert_eq!(
        server.edit_global_list(&refs, &[]).json(),
        json!({ "added": 10_000, "removed": 0 })
    );
    assert_eq!(
        TestApp::new().check("60.0.39.15"),
        "[60.0.39.15] is on global greylist"
    );
    let too_many = server.edit_global_list(&refs, &["61.0.0.1"]);
    assert_eq!(too_many.status, 400);
    assert!(too_many.json()["message"]
        .as_str()
        .unwrap()
        .contains("at most 10000 entries"));
    assert_eq!(
        server.edit_global_list(&[], &refs).json(),
        json!({ "added": 0, "removed": 10_000 })
    );
}

#[test]
fn concurrent_operator_edits_of_both_lists_all_survive() {
    // Its own server: 32 edits would be in every other test's lists.
    let server = &Server::own(&[]);
    let edits: Vec<(String, String)> = (0..16)
        .map(|n| (unique_ip(), format!("62.{n}.0.0/16")))
        .collect();
    thread::scope(|scope| {
        for (global, allow) in &edits {
            scope.spawn(move || assert_eq!(server.edit_global_list(&[global], &[]).status, 200));
            scope.spawn(move || assert_eq!(server.edit_allow_list(&[allow], &[]).status, 200));
        }
    });
    let (global, allow) = (
        entries_of(&server.export_list("global-list", None)),
        entries_of(&server.export_list("allow-list", None)),
    );
    let app = TestApp::on(server);
    for (ip, range) in &edits {
        assert!(global.contains(ip), "{ip} was lost");
        assert!(allow.contains(range), "{range} was lost");
        assert_eq!(app.check(ip), format!("[{ip}] is on global greylist"));
    }
}

#[test]
fn promoted_entries_are_published_but_kept_apart_from_the_operators_own() {
    // Its own server: a replacement of the whole list.
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(server.edit_global_list(&["64.1.1.1"], &[]).status, 200);
    assert_eq!(server.edit_allow_list(&["64.9.9.0/24"], &[]).status, 200);
    assert_eq!(
        server.promote(&["64.2.2.2", "64.1.1.1", "64.9.9.9", "10.0.0.1"], &[]),
        json!({ "added": 1, "removed": 0, "allowed": 1, "refused": 1, "queued": 0 }),
        "64.1.1.1 is the operator's already, the allow list holds 64.9.9.9, 10.0.0.1 is private"
    );
    assert_eq!(app.check("64.2.2.2"), "[64.2.2.2] is on global greylist");

    // Each export holds its own entries, under a tag of its own.
    let own = server.export_list("global-list", None);
    assert_eq!(entries_of(&own), ["64.1.1.1"]);
    let promoted = server.admin("GET", "/admin/global-list?source=promoted", None);
    let version = own.header("ETag").unwrap().trim_matches('"').to_owned();
    assert_eq!(
        promoted.body,
        format!("# global list (promoted), version {version}, 1 entries\n64.2.2.2\n")
    );
    let tag = format!("\"{version}-promoted\"");
    assert_eq!(promoted.header("ETag"), Some(tag.as_str()));
    let headers = |held: &str| {
        vec![
            ("Authorization", format!("Bearer {ADMIN_TOKEN}")),
            ("If-None-Match", held.to_owned()),
        ]
    };
    let url = format!("{}/admin/global-list?source=promoted", server.base);
    assert_eq!(send("GET", &url, &headers(&tag), None).status, 304);
    let own_tag = own.header("ETag").unwrap();
    assert_eq!(
        send("GET", &url, &headers(own_tag), None).status,
        200,
        "the operator's export's tag is not the promoted one's"
    );
    let url = format!("{}/admin/global-list?source=operator", server.base);
    assert_eq!(send("GET", &url, &headers(own_tag), None).status, 304);
    for refused in [
        "/admin/global-list?source=everyone",
        "/admin/allow-list?source=promoted",
    ] {
        assert_eq!(server.admin("GET", refused, None).status, 400, "{refused}");
    }

    // The lookup names it promoted.
    let lookup = server
        .admin("GET", "/admin/lookup?ip=64.2.2.2", None)
        .json();
    assert_eq!(
        (
            &lookup["global"][0]["source"],
            &lookup["global"][0]["change"]
        ),
        (&json!("promoted"), &json!(0))
    );

    // Neither an edit's remove nor a replacement takes it away.
    assert_eq!(
        server.edit_global_list(&[], &["64.2.2.2"]).json(),
        json!({ "added": 0, "removed": 0 })
    );
    let replaced = server.replace_list("global-list", "64.3.3.3\n").json();
    assert_eq!(
        (
            &replaced["entries"],
            &replaced["added"],
            &replaced["removed"]
        ),
        (&json!(1), &json!(1), &json!(1))
    );
    assert_eq!(app.check("64.2.2.2"), "[64.2.2.2] is on global greylist");
    assert_eq!(
        entries_of(&server.export_list("global-list", None)),
        ["64.3.3.3"]
    );

    // The operator takes it off by name; an entry of the operator's stays.
    let taken_off = server.admin(
        "POST",
        "/admin/global-list",
        Some(json!({ "removePromoted": ["64.2.2.2", "64.3.3.3"] })),
    );
    assert_eq!(
        taken_off.json(),
        json!({ "added": 0, "removed": 0, "promotedRemoved": 1 })
    );
    assert_eq!(
        app.check("64.2.2.2"),
        "[64.2.2.2] is currently not on global greylist"
    );
    assert_eq!(app.check("64.3.3.3"), "[64.3.3.3] is on global greylist");
    let allow = server.admin(
        "POST",
        "/admin/allow-list",
        Some(json!({ "removePromoted": [] })),
    );
    assert_eq!(allow.status, 400, "{}", allow.body);

    // Promoted again, it decays; the operator's entry never does.
    assert_eq!(server.promote(&["64.2.2.2"], &[])["added"], 1);
    assert_eq!(
        server.promote(&[], &["64.2.2.2", "64.3.3.3"]),
        json!({ "added": 0, "removed": 1, "allowed": 0, "refused": 0, "queued": 0 })
    );
    assert_eq!(
        app.check("64.2.2.2"),
        "[64.2.2.2] is currently not on global greylist"
    );
    assert_eq!(app.check("64.3.3.3"), "[64.3.3.3] is on global greylist");
}

#[test]
fn a_whole_list_is_replaced_from_text_exported_and_refused_for_a_bad_line() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let drop_list = "; Spamhaus DROP List 2026/11/22\r\n63.10.16.0/20 ; SBL256894\r\n\r\n# FireHOL level 1\n63.1.1.1\n63.2.2.2 # scanner\n63.1.1.1\n";
    let first = server.replace_list("global-list", drop_list);
    assert_eq!(first.status, 200, "{}", first.body);
    let first = first.json();
    assert_eq!(
        (
            first["entries"].clone(),
            first["added"].clone(),
            first["removed"].clone()
        ),
        (json!(3), json!(3), json!(0))
    );
    assert_eq!(
        app.check("63.10.31.255"),
        "[63.10.31.255] is on global greylist"
    );

    let export = server.export_list("global-list", None);
    let version = first["version"].as_str().unwrap();
    assert_eq!(
        export.body,
        format!("# global list, version {version}, 3 entries\n63.1.1.1\n63.2.2.2\n63.10.16.0/20\n")
    );
    assert_eq!(export.content_type, "text/plain; charset=utf-8");
    let etag = export.header("ETag").unwrap().to_owned();
    let again = server.export_list("global-list", Some(&etag));
    assert_eq!((again.status, again.body.as_str()), (304, ""));
    assert_eq!(
        server.replace_list("global-list", &export.body).json()["added"],
        0,
        "an export imports as the same list"
    );

    let bad = server.replace_list(
        "global-list",
        "63.3.3.3\n# fine\n10.0.0.1 ; office\n63.4.4.4\n",
    );
    assert_eq!(
        (bad.status, bad.json()),
        (
            400,
            json!({ "message": "Bad request: line 3: \"10.0.0.1 ; office\": private" })
        )
    );
    assert_eq!(
        app.check("63.3.3.3"),
        "[63.3.3.3] is currently not on global greylist",
        "nothing changed"
    );
    assert_eq!(server.export_list("global-list", Some(&etag)).status, 304);

    let second = server
        .replace_list("global-list", "63.2.2.2\n63.5.5.0/24\n")
        .json();
    assert_eq!(
        (
            second["entries"].clone(),
            second["added"].clone(),
            second["removed"].clone()
        ),
        (json!(2), json!(1), json!(2))
    );
    assert_eq!(
        app.check("63.1.1.1"),
        "[63.1.1.1] is currently not on global greylist"
    );
    assert_eq!(app.check("63.5.5.5"), "[63.5.5.5] is on global greylist");

    let allow = server.replace_list("allow-list", "63.5.5.0/25\n");
    assert_eq!(allow.json()["entries"], 1);
    assert_eq!(
        app.check("63.5.5.5"),
        "[63.5.5.5] is on the global allow list, no action was taken"
    );
    assert_eq!(
        entries_of(&server.export_list("allow-list", None)),
        ["63.5.5.0/25"]
    );

    let status = server.status();
    assert_eq!(status["globalList"]["entries"], 2);
    assert_eq!(status["globalList"]["version"], second["version"]);
    assert_eq!(status["allowList"]["entries"], 1);
    assert_eq!(status["licenses"], 1);
    // The answering isolate's WebAssembly memory: whole 64 KiB pages, holding at
    // least the snapshot the checks above loaded.
    let wasm = status["isolate"]["wasmBytes"].as_u64().unwrap_or(0);
    assert!(
        wasm > 0
            && wasm.is_multiple_of(65_536)
            && wasm
                >= status["globalList"]["snapshotBytes"]
                    .as_u64()
                    .unwrap_or(u64::MAX),
        "the isolate's memory is not whole 64 KiB pages holding the snapshot: {status}"
    );
    assert!(
        status["globalList"]["publishedAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{status}"
    );
    server.kill();
}

#[test]
fn a_check_during_a_replacement_sees_the_old_list_or_the_new_never_an_empty_one() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let list = |variant: u32| -> String {
        let mut text = String::from("64.64.64.64\n");
        text.extend((0..20_000u32).map(|n| format!("65.{variant}.{}.{}\n", n >> 8, n & 255)));
        text
    };
    assert_eq!(server.replace_list("global-list", &list(1)).status, 200);
    let done = AtomicBool::new(false);
    let answers = thread::scope(|scope| {
        let checker = scope.spawn(|| {
            let mut answers = Vec::new();
            while !done.load(Ordering::SeqCst) {
                answers.push(app.check("64.64.64.64"));
            }
            answers
        });
        for variant in 2..5 {
            assert_eq!(
                server.replace_list("global-list", &list(variant)).status,
                200
            );
        }
        done.store(true, Ordering::SeqCst);
        checker.join().unwrap()
    });
    assert!(
        answers.len() >= 3,
        "{} checks ran during the replacements",
        answers.len()
    );
    assert!(
        answers
            .iter()
            .all(|a| a == "[64.64.64.64] is on global greylist"),
        "{answers:?}"
    );
    assert_eq!(
        app.check("65.1.0.1"),
        "[65.1.0.1] is currently not on global greylist"
    );
    assert_eq!(
        app.check("65.4.78.31"),
        "[65.4.78.31] is on global greylist"
    );
    server.kill();
}

#[test]
fn the_lists_and_their_published_version_survive_a_killed_server() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    server.replace_list("global-list", "66.6.6.0/24\n66.7.7.7\n");
    server.edit_allow_list(&["66.6.6.128/25"], &[]);
    let before = server.status();
    let export = server.export_list("global-list", None).body;
    server.kill();

    let restarted = server.restart_from();
    let again = app.with_server(&restarted);
    let after = restarted.status();
    assert_eq!(
        (after["globalList"].clone(), after["allowList"].clone()),
        (before["globalList"].clone(), before["allowList"].clone())
    );
    assert_eq!(restarted.export_list("global-list", None).body, export);
    assert_eq!(again.check("66.6.6.1"), "[66.6.6.1] is on global greylist");
    assert_eq!(
        again.check("66.6.6.200"),
        "[66.6.6.200] is on the global allow list, no action was taken"
    );
    restarted.kill();
}

#[test]
fn a_first_start_takes_over_the_lists_an_earlier_version_kept_in_kv() {
    // The state an earlier version left: the global list as one KV key per entry,
    // the allow list as one text value of ranges.
    let state = crate::helpers::fresh_state_dir();
    let put = |binding: &str, key: &str, value: &str| kv_put_local(&state, binding, key, value);
    put("GLOBAL_LIST", "9.9.9.9", "1");
    put("GLOBAL_LIST", "198.51.99.0/24", "1");
    put("ALLOW_LIST", "ranges", "104.16.0.0/13\n");
    let server = Server::own_on(&state, &[]);
    let app = TestApp::on(&server);
    assert_eq!(app.check("9.9.9.9"), "[9.9.9.9] is on global greylist");
    assert_eq!(
        app.check("198.51.99.7"),
        "[198.51.99.7] is on global greylist"
    );
    assert_eq!(
        app.check("104.16.1.1"),
        "[104.16.1.1] is on the global allow list, no action was taken"
    );
    assert_eq!(
        entries_of(&server.export_list("global-list", None)),
        ["9.9.9.9", "198.51.99.0/24"]
    );
    assert_eq!(server.status()["allowList"]["entries"], 1);
}

/// A new version met by many requests at once is loaded by one of them while the
/// others wait; every one of them answers. The runtime cancels a request that
/// waits on nothing of its own, so a waiter must not sleep until another
/// request's load wakes it.
#[test]
fn requests_that_meet_a_new_version_together_all_answer() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    for variant in 1..4u32 {
        let mut text = String::from("64.64.64.64\n");
        text.extend((0..60_000u32).map(|n| format!("66.{variant}.{}.{}\n", n >> 8, n & 255)));
        assert_eq!(server.replace_list("global-list", &text).status, 200);
        let start = std::sync::Barrier::new(16);
        let answers: Vec<String> = thread::scope(|scope| {
            let checks: Vec<_> = (0..16)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        // Its status and body when it was not answered, so that the
                        // assertion below names why.
                        let resp = app.call(
                            "/api/checkIpOnGreylist",
                            "64.64.64.64",
                            Encoding::Multipart,
                            Mode::Json,
                        );
                        if resp.status == 200 {
                            resp.result()
                        } else {
                            format!("{}: {}", resp.status, resp.body)
                        }
                    })
                })
                .collect();
            checks.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert!(
            answers
                .iter()
                .all(|a| a == "[64.64.64.64] is on global greylist"),
            "each of the checks that met the new version at once was answered: version {variant}: {answers:?}"
        );
    }
}

/// A replacement of the global list sent with `Content-Encoding: encoding`.
fn put_encoded(server: &Server, encoding: &str, body: &[u8]) -> Resp {
    let headers = [
        ("Authorization", format!("Bearer {ADMIN_TOKEN}")),
        ("Content-Type", "text/plain".to_owned()),
        ("Content-Encoding", encoding.to_owned()),
    ];
    send(
        "PUT",
        &format!("{}/admin/global-list", server.base),
        &headers,
        Some(body),
    )
}

#[test]
fn an_import_sent_gzipped_is_read_as_its_text_and_other_encodings_are_refused() {
    let server = Server::own(&[]);
    let text: String = (0..50_000u32)
        .map(|n| format!("{}\n", std::net::Ipv4Addr::from((67 << 24) + 2 * n)))
        .collect();
    let gzipped = gzip(text.as_bytes());
    assert!(
        gzipped.len() * 4 < text.len(),
        "{} of {}",
        gzipped.len(),
        text.len()
    );
    let resp = put_encoded(&server, "gzip", &gzipped);
    assert_eq!(
        resp.status, 200,
        "a gzipped import is taken, unzipped to its text: {}",
        resp.body
    );
    assert_eq!(resp.json()["entries"], 50_000, "{}", resp.body);
    let export = server.admin("GET", "/admin/global-list", None);
    assert_eq!(entries_of(&export), text.lines().collect::<Vec<_>>());

    let not_gzip = put_encoded(&server, "gzip", b"68.0.0.1\n");
    assert_eq!(not_gzip.status, 400, "{}", not_gzip.body);
    assert!(
        not_gzip.json()["message"]
            .as_str()
            .unwrap()
            .contains("the body is not gzip"),
        "{}",
        not_gzip.body
    );
    let brotli = put_encoded(&server, "br", &gzipped);
    assert_eq!(brotli.status, 415, "{}", brotli.body);
    assert_eq!(
        brotli.json()["message"],
        "Unsupported media type: the body may be sent as it is or with Content-Encoding gzip, not \"br\""
    );
    let export = server.admin("GET", "/admin/global-list", None);
    assert_eq!(
        entries_of(&export).len(),
        50_000,
        "refusals changed nothing"
    );
    server.kill();
}

/// The cuts of a list stay where they were, so an edit writes to KV, and isolates
/// load again, only the shard it falls in; a restarted writer cuts the same way.
#[test]
fn an_edit_of_a_large_list_writes_the_one_shard_it_falls_in() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let address = |n: u32| std::net::Ipv4Addr::from((68 << 24) + n).to_string();
    // Even addresses, none adjacent: 600 000 intervals, over one shard's 500 000.
    let text: String = (0..600_000).map(|n| address(2 * n) + "\n").collect();
    assert_eq!(server.replace_list("global-list", &text).status, 200);
    let shards = |server: &Server| {
        let status = server.status()["globalList"].clone();
        (status["shards"].clone(), status["shardsWritten"].clone())
    };
    assert_eq!(shards(&server), (json!(3), json!(3)));
    let (first, last) = (address(1), address(2 * 599_999));
    let on_global = |ip: &str| format!("[{ip}] is on global greylist");
    assert_eq!(app.check(&last), on_global(&last));

    assert_eq!(server.edit_global_list(&[&first], &[]).status, 200);
    assert_eq!(
        shards(&server),
        (json!(3), json!(1)),
        "an edit writes only the shard it falls in"
    );
    assert_eq!(app.check(&first), on_global(&first));
    assert_eq!(app.check(&last), on_global(&last), "through the shard kept");
    server.kill();

    let restarted = server.restart_from();
    let again = app.with_server(&restarted);
    assert_eq!(restarted.edit_global_list(&[], &[&first]).status, 200);
    assert_eq!(shards(&restarted), (json!(3), json!(1)));
    assert_ne!(again.check(&first), on_global(&first));
    assert_eq!(again.check(&last), on_global(&last));
    restarted.kill();
}

/// The body of a chunked HTTP/1.1 response, read whole.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk's size line");
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16)
            .expect("a hex size");
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
}

/// An export reads the list of the moment it began, chunk by chunk: an edit that
/// lands while it streams replaces chunks the export has still to read, and those
/// stay until the export has read them.
#[test]
fn an_export_under_way_reads_the_list_it_began_with_whatever_lands_meanwhile() {
    use std::io::{Read, Write};
    let server = Server::own(&[]);
    let address = |n: u32| std::net::Ipv4Addr::from((69 << 24) + n).to_string();
    let text: String = (0..1_000_000).map(|n| address(2 * n) + "\n").collect();
    assert_eq!(server.replace_list("global-list", &text).status, 200);
    let version = server.status()["globalList"]["version"].clone();
    let mut stream =
        std::net::TcpStream::connect(server.base.trim_start_matches("http://")).unwrap();
    let request = format!(
        "GET /admin/global-list HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = vec![0; 64 * 1024];
    stream.read_exact(&mut raw).unwrap();
    // The last chunk of the list changes while the export has only begun.
    let (last, added) = (address(2 * 999_999), address(2 * 999_999 + 1));
    let edit = server.edit_global_list(&[&added], &[&last]);
    assert_eq!(edit.status, 200, "{}", edit.body);
    stream.read_to_end(&mut raw).unwrap();
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains(&format!("ETag: \"{}\"", version.as_str().unwrap())),
        "{head}"
    );
    let body = String::from_utf8(dechunk(&raw[head_end + 4..])).unwrap();
    let entries: Vec<&str> = body.lines().filter(|line| !line.starts_with('#')).collect();
    assert_eq!(
        entries.len(),
        1_000_000,
        "an export keeps every chunk of the list it began with"
    );
    assert_eq!(entries.last(), Some(&last.as_str()));
    assert!(!body.contains(&format!("\n{added}\n")));
    // Then the chunks it read are gone at the next change, and the list is the edited one.
    assert_eq!(server.edit_global_list(&[], &[&added]).status, 200);
    let after = server.export_list("global-list", None);
    assert_eq!(entries_of(&after).len(), 999_999);
}

/// The high-water mark of the writer's WebAssembly memory, in MiB.
fn writer_mib(server: &Server) -> f64 {
    let resp = send(
        "GET",
        &format!("{}/__test/memory?writer", server.base),
        &[],
        None,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["writer"].as_u64().unwrap() as f64 / (1 << 20) as f64
}

/// What the writer held to take in, gzipped, an import of `count` entries, on a
/// fresh runtime, beyond what it held once started.
fn writer_growth_of_an_import(count: u32) -> f64 {
    let server = Server::own(&[]);
    assert_eq!(server.edit_global_list(&["70.0.0.1"], &[]).status, 200);
    let before = writer_mib(&server);
    let text: String = (0..count)
        .map(|n| format!("{}\n", std::net::Ipv4Addr::from((70 << 24) + 2 * n)))
        .collect();
    let resp = put_encoded(&server, "gzip", &gzip(text.as_bytes()));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["entries"], count);
    let growth = writer_mib(&server) - before;
    server.kill();
    growth
}

/// The writer holds a run of an import, a chunk and a shard at a time, never the
/// list: what it holds for an import of four times the entries is the same.
#[test]
fn the_writer_holds_as_much_for_an_import_of_4_800_000_entries_as_for_1_200_000() {
    let small = writer_growth_of_an_import(1_200_000);
    let large = writer_growth_of_an_import(4_800_000);
    eprintln!(
        "writer memory growth: {small:.1} MiB for 1 200 000 entries, {large:.1} MiB for 4 800 000"
    );
    assert!(
        large < small * 1.5 + 4.0,
        "the writer held more for four times the import: {large:.1} MiB against {small:.1} MiB"
    );
}
