//! `maxItems`: a whole feed cut to what a device holds keeps the most relevant
//! items (the holder's own, newest first, then what the network promoted,
//! then the operator's), says how many it left out, in every format, and the
//! appliance files that carry it still load in the real `ipset` and `nft`.

use super::appliances::in_namespace;
use super::helpers::{Server, TestApp};

fn entries(body: &str) -> Vec<&str> {
    body.lines().filter(|line| !line.starts_with('#')).collect()
}

/// The values of a JSON feed's entries.
fn values(feed: &serde_json::Value) -> Vec<&str> {
    feed["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("entries: {feed}"))
        .iter()
        .map(|item| item["value"].as_str().unwrap())
        .collect()
}

#[test]
fn a_cut_feed_keeps_the_newest_own_entries_then_the_promoted_then_the_operators() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let listed = server.edit_global_list(&["45.9.0.0/24", "45.9.9.9"], &[]);
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(server.promote(&["45.9.5.5"], &[])["added"], 1);
    // Listed a hundred seconds apart: .3 first, .2 last.
    for ip in ["31.13.70.3", "31.13.70.1", "31.13.70.2"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let whole = app.feed("scope=all");
    assert_eq!(
        entries(&whole.body),
        [
            "31.13.70.1",
            "31.13.70.2",
            "31.13.70.3",
            "45.9.0.0/24",
            "45.9.5.5",
            "45.9.9.9"
        ]
    );
    assert_eq!(whole.header("x-greylist-left-out"), None, "nothing was cut");

    for (max, kept) in [
        (2, &["31.13.70.1", "31.13.70.2"][..]),
        (4, &["31.13.70.1", "31.13.70.2", "31.13.70.3", "45.9.5.5"]),
        (
            5,
            &[
                "31.13.70.1",
                "31.13.70.2",
                "31.13.70.3",
                "45.9.0.0/24",
                "45.9.5.5",
            ],
        ),
        (6, &entries(&whole.body)),
        (1000, &entries(&whole.body)),
    ] {
        let cut = app.feed(&format!("scope=all&maxItems={max}"));
        assert_eq!(cut.status, 200, "{}", cut.body);
        assert_eq!(
            entries(&cut.body),
            kept,
            "maxItems={max}: the cut did not keep the newest own entries, then the promoted, then the operator's in address order"
        );
        let left_out = 6usize.saturating_sub(max);
        assert_eq!(
            cut.header("x-greylist-left-out"),
            Some(left_out.to_string().as_str()),
            "maxItems={max}"
        );
        assert_eq!(
            cut.body.lines().nth(1),
            Some(format!("# cut to maxItems {max}: {left_out} entries left out").as_str()),
            "{}",
            cut.body
        );
        assert!(
            cut.body
                .ends_with(&format!("# end of feed, {} entries\n", kept.len())),
            "{}",
            cut.body
        );
    }

    // JSON agrees, says what it left out, and has no cursor: a delta is the
    // whole list's changes, not the cut's.
    let json = app.feed("scope=all&format=json&maxItems=4");
    assert_eq!(json.header("x-greylist-left-out"), Some("2"));
    let json = json.json();
    assert_eq!(
        values(&json),
        ["31.13.70.1", "31.13.70.2", "31.13.70.3", "45.9.5.5"],
        "the JSON feed does not agree with the text one: {json}"
    );
    assert_eq!(json["leftOut"], 2, "{json}");
    assert!(
        json.get("cursor").is_none(),
        "a cut feed has no cursor: {json}"
    );
    assert_eq!(json["entries"][3]["source"], "promoted", "{json}");

    // Merged first, then cut: .1, .2 and .3 are one run, two blocks, each
    // ranked as the run's newest entry.
    let merged = app.feed("scope=all&aggregate=1&maxItems=2");
    assert_eq!(
        entries(&merged.body),
        ["31.13.70.1", "31.13.70.2/31"],
        "merged blocks are counted once and rank as their newest entry: {}",
        merged.body
    );
    assert_eq!(merged.header("x-greylist-left-out"), Some("3"));

    // Each cut is its own answer, with its own ETag.
    let cut = app.feed("scope=all&maxItems=2");
    let tag = cut.header("etag").unwrap().to_owned();
    assert_ne!(Some(tag.as_str()), whole.header("etag"));
    let bearer = format!("Bearer {}", app.token);
    assert_eq!(
        app.feed_with(&bearer, "scope=all&maxItems=2", Some(&tag))
            .status,
        304
    );
    assert_eq!(
        app.feed_with(&bearer, "scope=all&maxItems=3", Some(&tag))
            .status,
        200,
        "another cut is another answer"
    );

    // A new entry pushes the oldest own one out of a cut of three.
    assert_eq!(
        app.add("31.13.70.9"),
        "[31.13.70.9] has been added to greylist"
    );
    assert_eq!(
        entries(&app.feed("scope=all&maxItems=3").body),
        ["31.13.70.1", "31.13.70.2", "31.13.70.9"]
    );

    // The files carry the cut, and load as they are.
    let ipset = app.feed("scope=all&format=ipset&list=cut&maxItems=2");
    assert_eq!(ipset.header("x-greylist-left-out"), Some("5"));
    let listed = in_namespace(&ipset.body, "ipset restore < \"$1\"; ipset list cut");
    let mut members: Vec<&str> = listed
        .split("Members:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split(' ').next().filter(|m| !m.is_empty()))
        .collect();
    members.sort_unstable();
    assert_eq!(members, ["31.13.70.2", "31.13.70.9"], "{listed}");
    let nft = app.feed("scope=all&format=nftables&list=cut&maxItems=2");
    let listed = in_namespace(&nft.body, "nft -f \"$1\"; nft list set inet greylist cut");
    let elements = listed.split("elements = {").nth(1).unwrap_or_default();
    let named = |ip: &str| {
        elements
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|token| token == ip)
    };
    assert!(named("31.13.70.2") && named("31.13.70.9"), "{listed}");
    assert!(!named("31.13.70.1"), "{listed}");
}

#[test]
fn max_items_is_refused_with_why_outside_its_bounds_and_with_since() {
    let app = TestApp::new();
    for bad in ["0", "10000001", "all"] {
        let refused = app.feed(&format!("maxItems={bad}"));
        assert_eq!(
            (refused.status, refused.body.as_str()),
            (
                400,
                format!(
                    "Bad request: maxItems is a whole number from 1 to 10000000, not \"{bad}\""
                )
                .as_str()
            )
        );
    }
    let cursor = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let delta = app.feed(&format!("format=json&since={cursor}&maxItems=5"));
    assert_eq!(
        (delta.status, delta.body.as_str()),
        (
            400,
            "Bad request: maxItems cuts a whole feed: pull it without since"
        )
    );
}
