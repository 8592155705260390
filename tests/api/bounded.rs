//! Memory per request is set by a page, never by a list: what a feed or a list
//! read makes the Worker and the holder's object hold is the same for N entries
//! and for ten times N (the reads on a freshly started runtime, with a small page).

use serde_json::json;

use crate::helpers::*;
use crate::machines::{machine, post_alerts};

/// Entries of the smaller list; each carries a 255-character comment of control
/// characters, about 1.5 KB of JSON, so a reader that held the list would grow by
/// some fifteen megabytes at ten times this.
const N: usize = 1_000;
/// Below this, growth is the allocator's, not the list's: a reader that held what
/// it reads would grow by many times this at ten times N.
const FLOOR_KIB: u64 = 1024;

fn populate(app: &TestApp, entries: usize) {
    let comment: String = "\u{1}".repeat(255);
    for batch in 0..entries.div_ceil(1000) {
        let ips: Vec<String> = (batch * 1000..((batch + 1) * 1000).min(entries))
            .map(|n| format!("81.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255))
            .collect();
        let body = json!({ "ips": ips, "comment": comment }).to_string();
        let resp = app.bulk(
            "/api/addIpsToGreylist",
            "application/json",
            &body,
            Mode::Json,
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(
            resp.json()["counts"]["added"],
            json!(ips.len()),
            "{}",
            resp.body
        );
    }
}

/// A read of a holder's `n` entries, checked.
type Read = fn(&TestApp, usize);

/// The reads measured, each a name and what it does.
fn reads() -> Vec<(&'static str, Read)> {
    vec![
        ("JSON feed", |app, n| {
            let feed = app.feed("format=json");
            assert_eq!(feed.status, 200);
            assert_eq!(feed.json()["entries"].as_array().unwrap().len(), n);
        }),
        ("text feed", |app, n| {
            let feed = app.feed("");
            assert_eq!(feed.status, 200);
            assert_eq!(feed.body.lines().count(), n + 2, "head, entries, tail");
        }),
        ("delta of every entry", |app, n| {
            let allow = app.server.status()["allowList"]["version"].clone();
            let since = format!("0.0.{}", allow.as_str().unwrap());
            let delta = app.feed_json(&format!("format=json&since={since}"));
            assert_eq!(delta["new"].as_array().unwrap().len(), n);
        }),
        ("CrowdSec startup pull", |app, n| {
            let (_, key) = app.feed_token(json!({ "scope": "personal" }));
            let pull = send(
                "GET",
                &format!("{}/v1/decisions/stream?startup=true", app.server.base),
                &[("X-Api-Key", key)],
                None,
            );
            assert_eq!(pull.status, 200);
            assert_eq!(pull.json()["new"].as_array().unwrap().len(), n);
        }),
        ("list read, every page", |app, n| {
            let mut cursor = String::new();
            let mut read = 0;
            loop {
                let page = app.list(&[("limit", "1000"), ("cursor", &cursor)]);
                read += page["entries"].as_array().unwrap().len();
                match page["cursor"].as_str() {
                    Some(next) => cursor = next.to_owned(),
                    None => break,
                }
            }
            assert_eq!(read, n);
        }),
    ]
}

/// What a read made the runtime hold, in KiB: the WebAssembly memory of the
/// Worker and of the holder's object (one instance when the test build runs both
/// in one isolate) (the high-water marks of what the code held,
/// which only grow), and the process's resident memory at its peak (which also
/// carries the garbage the JavaScript engine has not collected yet, so it rises
/// with the bytes that passed through, held or not: reported, not asserted).
#[derive(Clone, Copy)]
struct Growth {
    worker: u64,
    holder: u64,
    resident: u64,
}

fn wasm_kib(app: &TestApp) -> (u64, u64) {
    let resp = send(
        "GET",
        &format!("{}/__test/memory?license={}", app.server.base, app.license),
        &[],
        None,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    (
        json["worker"].as_u64().unwrap() / 1024,
        json["holder"].as_u64().unwrap() / 1024,
    )
}

/// Each read's growth on a holder of `entries` entries, the reads one after another
/// on one freshly started runtime. The marks only grow, so each read is charged
/// what it took beyond the reads before it: a read that held the list would still
/// grow by the list, far past the pages the others held.
fn growth_of_each_read(entries: usize) -> Vec<Growth> {
    let server = Server::own(&[("DAILY_ADDITIONS", "100000"), ("PAGE_ENTRIES", "50")]);
    let app = TestApp::on(&server);
    populate(&app, entries);
    server.kill();
    let fresh = server.restart_from();
    let app = app.with_server(&fresh);
    // The holder's object started and its database opened: what is measured is the reads.
    app.check("8.8.8.8");
    let growth = reads()
        .into_iter()
        .map(|(_, read)| {
            let before = wasm_kib(&app);
            let resident = fresh.memory_growth(|| read(&app, entries));
            let after = wasm_kib(&app);
            Growth {
                worker: after.0 - before.0,
                holder: after.1 - before.1,
                resident,
            }
        })
        .collect();
    fresh.kill();
    growth
}

#[test]
fn a_feed_and_a_list_read_hold_no_more_for_ten_times_the_entries() {
    let small = growth_of_each_read(N);
    let large = growth_of_each_read(10 * N);
    for (((name, _), small), large) in reads().iter().zip(&small).zip(&large) {
        println!(
            "{name}: wasm +{} KiB, resident +{} KiB for {N} entries; wasm +{} KiB, resident +{} KiB for {}",
            small.worker, small.resident, large.worker, large.resident, 10 * N
        );
        for (part, small, large) in [
            ("the Worker", small.worker, large.worker),
            ("the holder's object", small.holder, large.holder),
        ] {
            assert!(
                large <= 2 * small.max(FLOOR_KIB),
                "{name}: {part} held more than twice as much for ten times the entries: it grew {large} KiB for {} entries, {small} KiB for {N}",
                10 * N
            );
        }
    }
}

/// What a `scope=all` text feed made the Worker hold, in KiB, beyond the shards of
/// a global list of `entries` separate single addresses that a check had already loaded
/// (one shard at these sizes), on a freshly started runtime.
fn growth_of_a_global_feed(entries: u32) -> u64 {
    let server = Server::own(&[("PAGE_ENTRIES", "50")]);
    // Every other address, so that each stays a block of its own in the feed.
    let list: String = (0..entries)
        .map(|n| n * 2)
        .map(|a| format!("82.{}.{}.{}\n", a >> 16, (a >> 8) & 255, a & 255))
        .collect();
    assert_eq!(server.replace_list("global-list", &list).status, 200);
    server.kill();
    let fresh = server.restart_from();
    let app = TestApp::on(&fresh);
    assert!(app.check("82.0.0.1").contains("on global greylist"));
    let before = wasm_kib(&app).0;
    let feed = app.feed("scope=all");
    assert_eq!(feed.status, 200);
    assert_eq!(
        feed.body.lines().count(),
        entries as usize + 2,
        "head, entries, tail"
    );
    let growth = wasm_kib(&app).0 - before;
    fresh.kill();
    growth
}

#[test]
fn a_global_feed_reads_the_shards_held_and_copies_none_of_them() {
    let (small, large) = (
        growth_of_a_global_feed(40_000),
        growth_of_a_global_feed(400_000),
    );
    println!(
        "scope=all feed: wasm +{small} KiB for 40 000 global entries, +{large} KiB for 400 000"
    );
    assert!(
        large <= 2 * small.max(FLOOR_KIB),
        "a scope=all feed held more than twice as much for ten times the global list: the Worker grew {large} KiB for 400 000 global entries, {small} KiB for 40 000"
    );
}

/// Elements of a CrowdSec engine's post of `0,`, the most a post holds.
const FLOOD_ELEMENTS: usize = 100_000;
/// What the Worker may grow by for it: the answer's ids as JSON (a hundred
/// thousand strings, about 1 MB; 2 MiB measured) and a chunk of the body at a
/// time. Keeping every element before the first hundred would hold 12 MiB of
/// them alone.
const FLOOD_KIB: u64 = 4 * 1024;

#[test]
fn an_engines_post_of_the_most_elements_holds_its_first_hundred_and_one_more_is_413() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let engine = machine(&app, "flood");
    // The alerts' path taken once, so that what is measured is the flood.
    assert_eq!(post_alerts(&server, &engine, &json!([0])).status, 201);
    let before = wasm_kib(&app).0;
    let flood = serde_json::Value::Array(vec![json!(0); FLOOD_ELEMENTS]);
    let resp = post_alerts(&server, &engine, &flood);
    let grown = wasm_kib(&app).0 - before;
    assert_eq!(
        resp.status,
        201,
        "{}",
        &resp.body[..resp.body.len().min(300)]
    );
    let ids = resp.json();
    let ids = ids.as_array().unwrap();
    assert_eq!(ids.len(), FLOOD_ELEMENTS, "an id for every element");
    let first: u64 = ids[0].as_str().unwrap().parse().unwrap();
    let last: u64 = ids[FLOOD_ELEMENTS - 1].as_str().unwrap().parse().unwrap();
    assert_eq!(last - first, FLOOD_ELEMENTS as u64 - 1);
    println!("the Worker grew {grown} KiB for {FLOOD_ELEMENTS} elements");
    let one_more = serde_json::Value::Array(vec![json!(0); FLOOD_ELEMENTS + 1]);
    let refused = post_alerts(&server, &engine, &one_more);
    assert_eq!(
        refused.status, 413,
        "a post of one element past the most a post holds is refused 413: {}",
        refused.body
    );
    let most = format!("Payload too large: at most {FLOOD_ELEMENTS} alerts a request");
    assert_eq!(refused.json(), json!({ "message": most }));
    assert!(
        grown <= FLOOD_KIB,
        "the Worker grew {grown} KiB for a post of {FLOOD_ELEMENTS} elements"
    );
}
