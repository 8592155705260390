//! `aggregate=1`: a whole feed merged into the fewest CIDR blocks, in every
//! format, and the appliance files that carry it still load in the real `nft`
//! and `ipset`.

use serde_json::json;

use super::appliances::in_namespace;
use super::helpers::{Mode, TestApp};

/// A holder with 256 consecutive addresses (one /24), two more that touch (a
/// /31), and one alone.
fn holder() -> TestApp {
    let app = TestApp::new();
    let addresses: Vec<String> = (0..=255)
        .map(|n| format!("23.94.40.{n}"))
        .chain(["23.94.41.0", "23.94.41.1", "23.94.41.5"].map(String::from))
        .collect();
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        &addresses.join("\n"),
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    app
}

fn entries(body: &str) -> Vec<&str> {
    body.lines().filter(|line| !line.starts_with('#')).collect()
}

#[test]
fn the_text_list_merges_into_the_fewest_blocks_and_is_another_answer() {
    let app = holder();
    let whole = app.feed("");
    assert_eq!(entries(&whole.body).len(), 259, "{}", whole.body);
    for asked in ["aggregate=1", "aggregate=true"] {
        let merged = app.feed(asked);
        assert_eq!(merged.status, 200, "{}", merged.body);
        assert_eq!(
            entries(&merged.body),
            ["23.94.40.0/24", "23.94.41.0/31", "23.94.41.5"],
            "{asked}: 256 consecutive addresses are one /24, two that touch one /31"
        );
        assert!(
            merged.body.ends_with("# end of feed, 3 entries\n"),
            "the count is of the blocks written: {}",
            merged.body
        );
    }
    assert_eq!(entries(&app.feed("aggregate=0").body).len(), 259);

    // Another answer at the same version: its own ETag, and each tag names its own.
    let merged = app.feed("aggregate=1");
    let (merged_tag, whole_tag) = (
        merged.header("etag").unwrap(),
        whole.header("etag").unwrap(),
    );
    assert_ne!(
        merged_tag, whole_tag,
        "a merged feed has an ETag of its own"
    );
    let bearer = format!("Bearer {}", app.token);
    assert_eq!(
        app.feed_with(&bearer, "aggregate=1", Some(merged_tag))
            .status,
        304
    );
    assert_eq!(
        app.feed_with(&bearer, "", Some(merged_tag)).status,
        200,
        "the merged feed's ETag is not the whole one's"
    );
    assert_eq!(
        app.feed_with(&bearer, "aggregate=1", Some(whole_tag))
            .status,
        200
    );
}

#[test]
fn aggregate_is_refused_with_why_where_it_cannot_apply() {
    let app = TestApp::new();
    let bad = app.feed("aggregate=yes");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body,
        "Bad request: aggregate is 1, true, 0 or false, not \"yes\""
    );
    let cursor = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let delta = app.feed(&format!("format=json&since={cursor}&aggregate=1"));
    assert_eq!(delta.status, 400, "a delta is not merged: {}", delta.body);
    assert_eq!(
        delta.body,
        "Bad request: aggregate merges a whole feed: pull it without since"
    );
}

#[test]
fn the_json_feed_merges_only_entries_with_the_same_origin_and_expiry() {
    let app = TestApp::new();
    // One request, one moment: the two that expire share their expiry.
    let expiring = app.bulk(
        "/api/addIpsToGreylist",
        "application/json",
        r#"{"ips": ["23.94.42.0", "23.94.42.1"], "ttl": 3600, "comment": "scan"}"#,
        Mode::Json,
    );
    assert_eq!(expiring.status, 200, "{}", expiring.body);
    let lasting = app.bulk(
        "/api/addIpsToGreylist",
        "text/plain",
        "23.94.42.2\n23.94.42.3",
        Mode::Json,
    );
    assert_eq!(lasting.status, 200, "{}", lasting.body);

    let feed = app.feed_json("format=json&aggregate=1");
    // No cursor: a delta names addresses, which a merged block holds unseen.
    assert_eq!(feed["merged"], true, "{feed}");
    assert!(
        feed.get("cursor").is_none(),
        "a merged feed has no cursor: {feed}"
    );
    let items = feed["entries"].as_array().unwrap();
    let values: Vec<&str> = items.iter().map(|i| i["value"].as_str().unwrap()).collect();
    assert_eq!(
        values,
        ["23.94.42.0/31", "23.94.42.2/31"],
        "only items with the same origin and expiry merge: {feed}"
    );
    assert!(items[0]["expiresAt"].is_string(), "{feed}");
    assert_eq!(items[0]["comment"], "scan", "both said the same");
    assert_eq!(items[0]["scope"], "personal");
    assert!(items[1]["expiresAt"].is_null(), "{feed}");
    // In text, which says neither, the four touch and merge.
    assert_eq!(entries(&app.feed("aggregate=1").body), ["23.94.42.0/30"]);
}

#[test]
fn merged_appliance_files_still_load_in_nft_ipset_and_routeros() {
    let app = holder();
    let nft = app.feed("format=nftables&list=merged&aggregate=1");
    assert_eq!(nft.status, 200, "{}", nft.body);
    let listed = in_namespace(
        &nft.body,
        "nft -f \"$1\"; nft list set inet greylist merged",
    );
    let elements = listed.split("elements = {").nth(1).unwrap_or_default();
    for block in ["23.94.40.0/24", "23.94.41.0/31", "23.94.41.5"] {
        assert!(elements.contains(block), "{block}: {listed}");
    }
    assert!(!elements.contains("23.94.40.7"), "{listed}");

    let ipset = app.feed("format=ipset&list=merged&aggregate=1");
    assert_eq!(ipset.status, 200, "{}", ipset.body);
    let listed = in_namespace(&ipset.body, "ipset restore < \"$1\"; ipset list merged");
    let members: Vec<&str> = listed
        .split("Members:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let mut members: Vec<&str> = members
        .iter()
        .map(|m| m.split(' ').next().unwrap())
        .collect();
    members.sort();
    assert_eq!(
        members,
        ["23.94.40.0/24", "23.94.41.0/31", "23.94.41.5"],
        "{listed}"
    );

    let routeros = app.feed("format=mikrotik&list=merged&aggregate=1");
    assert_eq!(routeros.status, 200, "{}", routeros.body);
    let adds: Vec<&str> = routeros
        .body
        .lines()
        .filter(|line| line.starts_with("/ip firewall address-list add"))
        .collect();
    assert_eq!(adds.len(), 3, "{}", routeros.body);
    assert!(
        adds[0].contains("address=23.94.40.0/24"),
        "{}",
        routeros.body
    );
}

#[test]
fn a_token_that_merges_serves_every_pull_merged_whatever_it_asks_and_says_so() {
    let app = holder();
    let (merging, token) = app.feed_token(json!({ "scope": "personal", "aggregate": true }));
    let (plain, plain_token) = app.feed_token(json!({ "scope": "personal" }));
    let blocks = ["23.94.40.0/24", "23.94.41.0/31", "23.94.41.5"];
    let bearer = format!("Bearer {token}");
    for asked in ["", "aggregate=0", "format=text&aggregate=false"] {
        let pulled = app.feed_with(&bearer, asked, None);
        assert_eq!(pulled.status, 200, "{}", pulled.body);
        assert_eq!(
            entries(&pulled.body),
            blocks,
            "{asked:?}: the token's setting wins over what its pull asks"
        );
    }
    let delta = app.feed_with(&bearer, "format=json&since=1.0.0", None);
    assert_eq!(delta.status, 400, "{}", delta.body);
    assert_eq!(
        delta.body,
        "Bad request: this feed token merges its feed (aggregate): pull it whole, without since"
    );
    let whole = app.feed_with(&format!("Bearer {plain_token}"), "", None);
    assert_eq!(
        entries(&whole.body).len(),
        259,
        "a token made without it serves every entry"
    );

    let listed = app.get("/api/feedTokens").json();
    let setting = |id: &str| {
        listed["feedTokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["aggregate"].clone())
    };
    assert_eq!(
        setting(&merging),
        Some(json!(true)),
        "each token shows its setting: {listed}"
    );
    assert_eq!(setting(&plain), Some(json!(false)), "{listed}");

    let bad = app.post(
        "/api/feedTokens",
        Mode::Json,
        &[(
            "Content-Type",
            "application/x-www-form-urlencoded".to_owned(),
        )],
        b"aggregate=maybe",
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body
            .contains("aggregate is true, false, 1, 0 or on, not \\\"maybe\\\""),
        "{}",
        bad.body
    );
    // A form's values: a checkbox's `on`, a number, nothing at all.
    for (field, merges) in [
        ("aggregate=on", true),
        ("aggregate=+1+", true),
        ("aggregate=", false),
    ] {
        let made = app.post(
            "/api/feedTokens",
            Mode::Json,
            &[(
                "Content-Type",
                "application/x-www-form-urlencoded".to_owned(),
            )],
            field.as_bytes(),
        );
        assert_eq!(made.status, 201, "{field}: {}", made.body);
        assert_eq!(
            made.json()["aggregate"],
            merges,
            "{field}: the form's value read"
        );
    }
    let string = app.post(
        "/api/feedTokens",
        Mode::Json,
        &[("Content-Type", "application/json".to_owned())],
        br#"{"aggregate": "true"}"#,
    );
    assert_eq!(
        string.status, 400,
        "a JSON string is not a boolean: {}",
        string.body
    );
}
