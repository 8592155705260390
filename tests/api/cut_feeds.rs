//! `maxItems`: a whole feed cut to what a device holds keeps the most relevant
//! items (the holder's own, newest first, then what the network promoted,
//! then the operator's), says how many it left out, in every format, and the
//! appliance files that carry it still load in the real `ipset` and `nft`; a
//! cut feed's deltas keep an agent's set equal to a whole pull at every step.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::appliances::in_namespace;
use super::helpers::{send, Server, TestApp};
use super::reports::decisions;

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
            "maxItems={max}: the cut did not keep the newest own entries, then the promoted, then the operator's in address order: {}",
            cut.body
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

    // JSON agrees and says what it left out.
    let json = app.feed("scope=all&format=json&maxItems=4");
    assert_eq!(json.header("x-greylist-left-out"), Some("2"));
    let json = json.json();
    assert_eq!(
        values(&json),
        ["31.13.70.1", "31.13.70.2", "31.13.70.3", "45.9.5.5"],
        "the JSON feed does not agree with the text one: {json}"
    );
    assert_eq!(json["leftOut"], 2, "{json}");
    let cursor = json["cursor"].as_str().unwrap_or_default();
    assert!(
        cursor.starts_with(&format!("{}.p", json["version"].as_str().unwrap())),
        "a cut feed's cursor says its cut reached into the promoted blocks: {json}"
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

/// An agent of the JSON feed cut to `max`: its set and its cursor.
struct Agent<'a> {
    app: &'a TestApp,
    max: usize,
    held: BTreeSet<String>,
    cursor: String,
}

impl<'a> Agent<'a> {
    /// Loads the whole cut feed.
    fn start(app: &'a TestApp, max: usize) -> Self {
        let whole = app.feed_json(&format!("scope=all&format=json&maxItems={max}"));
        Self {
            app,
            max,
            held: values(&whole).into_iter().map(String::from).collect(),
            cursor: whole["cursor"]
                .as_str()
                .expect("a cut feed's cursor")
                .to_owned(),
        }
    }

    /// Pulls the changes since its cursor and applies them: deletes what
    /// `deleted` names, then adds what `new` names. Answers the delta.
    fn pull(&mut self) -> Value {
        let delta = self.app.feed_json(&format!(
            "scope=all&format=json&maxItems={}&since={}",
            self.max, self.cursor
        ));
        assert!(
            delta.get("reset").is_none(),
            "a cut delta answered whole: {delta}"
        );
        for gone in delta["deleted"].as_array().unwrap() {
            self.held.remove(gone["value"].as_str().unwrap());
        }
        for new in delta["new"].as_array().unwrap() {
            self.held.insert(new["value"].as_str().unwrap().to_owned());
        }
        self.cursor = delta["cursor"].as_str().unwrap().to_owned();
        delta
    }

    /// Whether it holds what a whole pull gives now.
    fn holds_a_whole_pull(&self, step: &str) {
        let whole = self
            .app
            .feed_json(&format!("scope=all&format=json&maxItems={}", self.max));
        let whole: BTreeSet<String> = values(&whole).into_iter().map(String::from).collect();
        assert_eq!(
            self.held, whole,
            "{step}: an agent that applied every cut delta does not hold what a whole pull gives"
        );
    }
}

/// The values a delta's array names.
fn named(delta: &Value, array: &str) -> Vec<String> {
    let mut names: Vec<String> = delta[array]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["value"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_cut_feeds_deltas_push_the_oldest_out_and_let_it_back_in() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(server.edit_global_list(&["45.9.9.9"], &[]).status, 200);
    for ip in ["31.13.71.1", "31.13.71.2", "31.13.71.3"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let mut agent = Agent::start(&app, 3);
    assert_eq!(
        agent.held.iter().collect::<Vec<_>>(),
        ["31.13.71.1", "31.13.71.2", "31.13.71.3"]
    );

    // A newer entry pushes the oldest out, in the next delta.
    assert_eq!(
        app.add("31.13.71.9"),
        "[31.13.71.9] has been added to greylist"
    );
    server.advance(100);
    let delta = agent.pull();
    assert_eq!(
        (named(&delta, "deleted"), named(&delta, "new")),
        (vec!["31.13.71.1".to_owned()], vec!["31.13.71.9".to_owned()]),
        "the newest entry in, the oldest out: {delta}"
    );
    agent.holds_a_whole_pull("a newer entry");

    // Its removal lets the oldest back in.
    assert_eq!(
        app.remove("31.13.71.9"),
        "[31.13.71.9] has been removed from greylist"
    );
    let delta = agent.pull();
    assert_eq!(
        named(&delta, "new"),
        ["31.13.71.1"],
        "room lets the oldest back in: {delta}"
    );
    agent.holds_a_whole_pull("a removal");

    // Nothing changed: nothing moves.
    let delta = agent.pull();
    assert_eq!(
        (named(&delta, "deleted"), named(&delta, "new")),
        (vec![], vec![])
    );

    // A series of changes of every kind, the agent equal to a whole pull after each.
    let steps: [(&str, &dyn Fn()); 8] = [
        ("two adds", &|| {
            for ip in ["31.13.71.20", "31.13.71.21"] {
                app.add(ip);
            }
            server.advance(50);
        }),
        ("a global edit", &|| {
            server.edit_global_list(&["45.9.8.0/24"], &["45.9.9.9"]);
        }),
        ("removals", &|| {
            app.remove("31.13.71.20");
            app.remove("31.13.71.2");
        }),
        ("a promotion", &|| {
            server.promote(&["45.9.7.7"], &[]);
        }),
        ("an expiring entry", &|| {
            app.add_with(&[("ip", "31.13.71.30"), ("ttl", "60")]);
            server.advance(30);
        }),
        ("its expiry", &|| server.advance(61)),
        // Listed by the holder, then by the operator too.
        ("an own entry the global list holds too", &|| {
            app.add("45.9.6.6");
            server.advance(50);
            server.edit_global_list(&["45.9.6.6"], &[]);
        }),
        // Dropped from the holder's list, it stays as the global list's, ranked
        // as that now: out of a cut of the three newest own entries.
        ("its removal", &|| {
            app.remove("45.9.6.6");
        }),
    ];
    for (step, change) in steps {
        change();
        agent.pull();
        agent.holds_a_whole_pull(step);
    }
}

#[test]
fn a_cursor_of_another_cut_is_answered_whole() {
    let app = TestApp::new();
    app.add("31.13.72.1");
    let plain = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let cut = app.feed_json("format=json&maxItems=5")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(
        plain, cut,
        "a cut feed's cursor says how far its cut reached"
    );
    for query in [
        format!("format=json&maxItems=5&since={plain}"),
        format!("format=json&since={cut}"),
    ] {
        let answer = app.feed_json(&query);
        assert_eq!(
            answer["reset"], true,
            "a cursor of another cut was answered as a delta: {query}: {answer}"
        );
        assert_eq!(values(&answer), ["31.13.72.1"], "{query}");
    }
}

#[test]
fn max_items_is_refused_with_why_outside_its_bounds() {
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
}

/// A CrowdSec pull with `key`: its `deleted` and `new` values.
fn pull(server: &Server, key: &str, path: &str) -> (Vec<String>, Vec<String>) {
    let body = decisions(server, key, &format!("/stream{path}"));
    let values = |array: &str| -> Vec<String> {
        let mut values: Vec<String> = body[array]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| item["value"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        values.sort();
        values
    };
    (values("deleted"), values("new"))
}

#[test]
fn a_token_that_cuts_serves_every_pull_and_crowdsecs_stream_cut_and_shows_what_it_left_out() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    for ip in ["31.13.73.1", "31.13.73.2", "31.13.73.3"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let bad = app.feed_token_answer(json!({ "scope": "all", "maxItems": 0 }));
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body
            .contains(r#"maxItems is a whole number from 1 to 10000000, not "0""#),
        "{}",
        bad.body
    );
    let made = app.feed_token_answer(json!({ "scope": "all", "maxItems": 2 }));
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    assert_eq!(made["maxItems"], 2, "{made}");
    let (id, key) = (
        made["id"].as_str().unwrap().to_owned(),
        made["feedToken"].as_str().unwrap().to_owned(),
    );
    let shown = |id: &str| {
        let tokens = app.get("/api/feedTokens").json();
        tokens["feedTokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|token| token["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (&shown(&id)["maxItems"], &shown(&id)["leftOut"]),
        (&json!(2), &Value::Null)
    );

    // The token's setting wins over what a pull asks: an appliance's URL is
    // written once.
    let bearer = format!("Bearer {key}");
    let cut = app.feed_with(&bearer, "maxItems=100", None);
    assert_eq!(
        entries(&cut.body),
        ["31.13.73.2", "31.13.73.3"],
        "a token that cuts does not serve its pulls cut: {}",
        cut.body
    );
    assert_eq!(cut.header("x-greylist-left-out"), Some("1"));
    assert_eq!(
        shown(&id)["leftOut"],
        1,
        "the token does not show what its last pull left out"
    );

    // CrowdSec's stream: cut from the first pull, and its position follows the cut.
    assert_eq!(
        pull(&server, &key, "?startup=true"),
        (
            vec![],
            vec!["31.13.73.2".to_owned(), "31.13.73.3".to_owned()]
        ),
        "CrowdSec's stream is not cut to the newest own entries"
    );
    assert_eq!(
        app.add("31.13.73.9"),
        "[31.13.73.9] has been added to greylist"
    );
    server.advance(100);
    assert_eq!(
        pull(&server, &key, ""),
        (vec!["31.13.73.2".to_owned()], vec!["31.13.73.9".to_owned()]),
        "the stream does not push the oldest out for the newest"
    );
    assert_eq!(
        app.remove("31.13.73.9"),
        "[31.13.73.9] has been removed from greylist"
    );
    assert_eq!(
        pull(&server, &key, ""),
        (vec!["31.13.73.9".to_owned()], vec!["31.13.73.2".to_owned()]),
        "the stream does not let the oldest back in"
    );
    assert_eq!(pull(&server, &key, ""), (vec![], vec![]), "nothing moved");
    assert_eq!(
        pull(&server, &key, "?maxItems=100"),
        (vec![], vec![]),
        "the token's cut does not win over the pull's"
    );
    assert_eq!(shown(&id)["leftOut"], 1);

    // A cut JSON delta shows what the cut leaves out now, as a whole pull does.
    let whole = app.feed_with(&bearer, "format=json", None).json();
    assert_eq!(whole["leftOut"], 1, "{whole}");
    let cursor = whole["cursor"].as_str().expect("a cut feed's cursor");
    for ip in ["31.13.73.7", "31.13.73.8"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let delta = app.feed_with(&bearer, &format!("format=json&since={cursor}"), None);
    assert!(
        delta.json().get("reset").is_none(),
        "answered whole: {}",
        delta.body
    );
    assert_eq!(delta.header("x-greylist-left-out"), Some("3"));
    assert_eq!(
        shown(&id)["leftOut"],
        3,
        "the token does not show what its last delta left out"
    );
    for ip in ["31.13.73.7", "31.13.73.8"] {
        assert_eq!(
            app.remove(ip),
            format!("[{ip}] has been removed from greylist")
        );
    }

    // A token made without it serves every entry, or what its pull asks for.
    let (_, plain) = app.feed_token(json!({ "scope": "all" }));
    assert_eq!(
        pull(&server, &plain, "?startup=true").1.len(),
        3,
        "a token made without a cut serves the whole stream"
    );
    assert_eq!(
        pull(&server, &plain, "?startup=true&maxItems=1"),
        (vec![], vec!["31.13.73.3".to_owned()]),
        "a pull's maxItems does not cut the stream"
    );
    // The next pull asks for no cut: what the cut left out comes in.
    assert_eq!(
        pull(&server, &plain, ""),
        (
            vec![],
            vec!["31.13.73.1".to_owned(), "31.13.73.2".to_owned()]
        ),
        "a pull without the cut its position held does not let in what it left out"
    );
    assert_eq!(
        pull(&server, &plain, "?maxItems=2"),
        (vec!["31.13.73.1".to_owned()], vec![]),
        "a pull that asks for another cut, nothing else changed, is not moved to it"
    );
}

#[test]
fn an_entry_added_between_a_cut_streams_count_and_its_pull_is_counted_so_the_bouncer_holds_no_more_than_the_cut(
) {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    for ip in ["31.13.74.1", "31.13.74.2", "31.13.74.3"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let (_, key) = app.feed_token(json!({ "scope": "all", "maxItems": 2 }));
    let mut held: BTreeSet<String> = pull(&server, &key, "?startup=true").1.into_iter().collect();
    assert_eq!(
        held,
        BTreeSet::from(["31.13.74.2".into(), "31.13.74.3".into()])
    );
    // Each pull below has the list change after its count and before it reads
    // the list: the newest entry comes, and the oldest of the cut goes with it.
    for ip in ["31.13.74.8", "31.13.74.9"] {
        server.advance(100);
        let armed = send(
            "POST",
            &format!(
                "{}/__test/holders/{}/add-before-pull?ip={ip}",
                server.base, app.license
            ),
            &[],
            None,
        );
        assert_eq!(armed.status, 200, "{}", armed.body);
        let (deleted, new) = pull(&server, &key, "");
        for gone in &deleted {
            held.remove(gone);
        }
        held.extend(new);
        assert!(
            held.contains(ip) && held.len() == 2,
            "a bouncer holds {held:?} after {ip} came between the count and the pull, not the 2 newest"
        );
    }
}

#[test]
fn a_promoted_block_the_operator_takes_over_is_named_again_and_leaves_a_cut_that_held_it_as_promoted(
) {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    server.promote(&["45.9.5.5", "45.9.7.7"], &[]);
    assert_eq!(server.edit_global_list(&["45.9.9.9"], &[]).status, 200);
    let whole = app.feed_json("scope=all&format=json");
    let cursor = whole["cursor"].as_str().unwrap().to_owned();
    assert_eq!(whole["entries"][0]["source"], "promoted", "{whole}");
    // A cut of one holds the first promoted block; so does a cut token's stream.
    let mut agent = Agent::start(&app, 1);
    assert_eq!(agent.held.iter().collect::<Vec<_>>(), ["45.9.5.5"]);
    let made = app.feed_token_answer(json!({ "scope": "all", "maxItems": 1 }));
    assert_eq!(made.status, 201, "{}", made.body);
    let key = made.json()["feedToken"].as_str().unwrap().to_owned();
    assert_eq!(
        pull(&server, &key, "?startup=true"),
        (vec![], vec!["45.9.5.5".to_owned()])
    );
    // A bouncer that leaves out the operator's blocks holds the promoted ones.
    let (_, filtered) = app.feed_token(json!({ "scope": "all" }));
    let promoted_only = "?scenarios_containing=promoted";
    assert_eq!(
        pull(&server, &filtered, &format!("{promoted_only}&startup=true")).1,
        ["45.9.5.5", "45.9.7.7"]
    );

    // The operator lists 45.9.5.5 too: the list holds what it held, and the
    // block is the operator's now, ranked after the promoted 45.9.7.7.
    assert_eq!(server.edit_global_list(&["45.9.5.5"], &[]).status, 200);
    agent.pull();
    agent.holds_a_whole_pull("the operator took over the promoted block the cut held");
    assert_eq!(
        pull(&server, &key, ""),
        (vec!["45.9.5.5".to_owned()], vec!["45.9.7.7".to_owned()]),
        "a cut stream does not move a block the operator took over out of its cut"
    );
    // An uncut delta names it again, labelled as a whole pull labels it now.
    let delta = app.feed_json(&format!("scope=all&format=json&since={cursor}"));
    let again: Vec<&Value> = delta["new"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["value"] == "45.9.5.5")
        .collect();
    assert_eq!(
        (named(&delta, "deleted"), again.len()),
        (vec![], 1),
        "a delta does not name again, in new alone, a block whose label changed: {delta}"
    );
    assert_eq!(
        again[0].get("source"),
        None,
        "the block taken over is still labelled promoted: {delta}"
    );
    // The filtering bouncer's next pull is a renewal (three days on): it
    // deletes every decision once, then announces what its filter takes.
    server.advance(3 * 86_400 + 1);
    let (deleted, new) = pull(&server, &filtered, promoted_only);
    let mut once = deleted.clone();
    once.dedup();
    assert_eq!(
        deleted, once,
        "a renewal across a change of origin deletes a decision twice"
    );
    assert!(
        deleted.contains(&"45.9.5.5".to_owned()) && !new.contains(&"45.9.5.5".to_owned()),
        "the block taken over is not left out by a filter of the operator's blocks: {deleted:?} {new:?}"
    );
}
