//! The holder's own Cloudflare edge, against a stand-in of Cloudflare's API
//! (`tests/cloudflare/stand-in.mjs`, which checks every request against the
//! shapes of Cloudflare's published schema and enforces its rules): connecting,
//! pushes of differences only, one bulk operation at a time, retries, a refused
//! token, the cap's most relevant part, aggregation, and the token kept secret.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{poll, send, Mode, Server, TestApp};

/// The secret the test server seals tokens under.
const TOKEN_KEY: &str = "e2e-cloudflare-token-key-0123456789abcdef";

/// The stand-in, one for the test process, killed when it ends.
struct StandIn {
    base: String,
    child: Mutex<Child>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.lock().unwrap().kill();
    }
}

fn stand_in() -> &'static StandIn {
    static STAND_IN: OnceLock<StandIn> = OnceLock::new();
    STAND_IN.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("node")
            .arg(root.join("tests/cloudflare/stand-in.mjs"))
            // Its standard input closes when this process ends, however it ends: so does it.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs the stand-in (make test installs it)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the stand-in did not start: {line:?}"));
        StandIn {
            base: format!("http://127.0.0.1:{port}"),
            child: Mutex::new(child),
        }
    })
}

impl StandIn {
    fn control(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let resp = send(
            method,
            &format!("{}/__standin/{path}", self.base),
            &[],
            body.as_deref().map(str::as_bytes),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    }

    /// A token that may edit `account`'s lists and `zone`'s rules.
    fn token(&self, account: &str, zone: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let token = format!(
            "cf-test-token-{}-{:08}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        self.grant(&token, account, zone, true);
        token
    }

    fn grant(&self, token: &str, account: &str, zone: &str, lists: bool) {
        self.control(
            "POST",
            "tokens",
            Some(json!({"token": token, "accounts": [account], "zones": [zone], "lists": lists})),
        );
    }

    fn account(&self, account: &str) -> Value {
        self.control("GET", &format!("accounts/{account}"), None)
    }

    /// The items of the account's list `name`, sorted.
    fn items(&self, account: &str, name: &str) -> Vec<String> {
        self.account(account)["lists"]
            .as_array()
            .unwrap()
            .iter()
            .find(|list| list["name"] == name)
            .map(|list| {
                list["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn calls(&self, account: &str, call: &str) -> u64 {
        self.account(account)["calls"][call].as_u64().unwrap_or(0)
    }

    /// Every call made on `account`, of any kind.
    fn all_calls(&self, account: &str) -> u64 {
        self.account(account)["calls"]
            .as_object()
            .map_or(0, |calls| calls.values().filter_map(Value::as_u64).sum())
    }

    /// What the service sent to `account` and `zone` that does not fit
    /// Cloudflare's schema (or what the stand-in answered that does not): nothing, ever.
    fn assert_no_violations(&self, account: &str, zone: &str) {
        for owner in [account, zone] {
            let violations = self.control("GET", &format!("violations/{owner}"), None);
            assert_eq!(
                violations,
                json!([]),
                "requests that do not fit Cloudflare's schema"
            );
        }
    }
}

/// A fresh account or zone id: 32 hexadecimal digits.
fn fresh_id() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{:016x}{:08x}{:08x}",
        0xc1f0_0000_0000_0000u64 | u64::from(std::process::id()),
        N.fetch_add(1, Ordering::SeqCst),
        0xabcdu32
    )
}

const ADD_ITEMS: &str = "POST /accounts/{account_id}/rules/lists/{list_id}/items";
const DELETE_ITEMS: &str = "DELETE /accounts/{account_id}/rules/lists/{list_id}/items";

/// One server for these tests, on the real clock: its alarms fire when the runtime fires them.
fn server() -> Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let api = format!("{}/client/v4", stand_in().base);
            let server = Server::own(&[
                ("CLOUDFLARE_API", api.as_str()),
                ("CLOUDFLARE_TOKEN_KEY", TOKEN_KEY),
                ("IPV6", "on"),
            ]);
            server.on_the_real_clock();
            server.for_many()
        })
        .clone()
}

/// A server of the test's own, its clock to be moved, on the real clock: for a
/// test that moves time or edits the operator's lists.
fn own_server() -> Arc<Server> {
    let api = format!("{}/client/v4", stand_in().base);
    let server = Server::own(&[
        ("CLOUDFLARE_API", api.as_str()),
        ("CLOUDFLARE_TOKEN_KEY", TOKEN_KEY),
    ]);
    server.on_the_real_clock();
    server
}

fn cloudflare(
    app: &TestApp,
    method: &str,
    query: &str,
    body: Option<Value>,
) -> crate::helpers::Resp {
    let body = body.map(|b| b.to_string());
    send(
        method,
        &format!("{}/api/cloudflare{query}", app.server.base),
        &[
            ("Authorization", format!("Bearer {}", app.token)),
            ("Content-Type", "application/json".to_owned()),
        ],
        body.as_deref().map(str::as_bytes),
    )
}

fn connect(app: &TestApp, body: Value) -> Value {
    let resp = cloudflare(app, "PUT", "", Some(body));
    assert_eq!(resp.status, 200, "connected: {}", resp.body);
    resp.json()
}

/// Waits until the connection's state is `in sync`.
fn in_sync(app: &TestApp) -> Value {
    poll(
        Duration::from_secs(20),
        Duration::from_millis(200),
        || cloudflare(app, "GET", "", None).json(),
        |status| status["state"] == "in sync",
    )
    .unwrap_or_else(|status| panic!("never in sync: {status}"))
}

fn add_all(app: &TestApp, ips: &[String]) {
    let form: String = ips.iter().map(|ip| format!("ip={ip}&")).collect();
    let resp = app.bulk(
        "/api/addIpsToGreylist",
        "application/x-www-form-urlencoded",
        form.trim_end_matches('&'),
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
}

/// Waits (at most 40 s: a push goes within 30 s of a change) until the list is `wanted`.
fn list_becomes(account: &str, wanted: &[&str]) -> Vec<String> {
    list_becomes_within(account, wanted, Duration::from_secs(40))
}

fn list_becomes_within(account: &str, wanted: &[&str], within: Duration) -> Vec<String> {
    let mut wanted: Vec<String> = wanted.iter().map(|s| (*s).to_owned()).collect();
    wanted.sort();
    poll(
        within,
        Duration::from_millis(500),
        || stand_in().items(account, "greylist"),
        |items| *items == wanted,
    )
    .unwrap_or_else(|items| panic!("the Cloudflare list came to {items:?}, not {wanted:?}"))
}

#[test]
fn a_holder_connects_and_the_list_follows_each_add_and_remove_with_the_zone_challenging_it() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    let status = connect(
        &app,
        json!({"accountId": account, "apiToken": token, "zoneId": zone}),
    );
    assert_eq!(status["connected"], true);
    assert_eq!(status["listName"], "greylist");
    assert_eq!(
        status["tokenEndsWith"],
        &token[token.len() - 4..],
        "the status shows the token's last four characters, never more"
    );
    assert!(
        !status.to_string().contains(&token),
        "the token is never answered"
    );
    let rules = stand_in().control("GET", &format!("zones/{zone}"), None)["rules"].clone();
    assert_eq!(rules.as_array().unwrap().len(), 1, "{rules}");
    assert_eq!(rules[0]["expression"], "ip.src in $greylist");
    assert_eq!(rules[0]["action"], "managed_challenge");
    assert_eq!(status["ruleId"], rules[0]["id"]);
    // Connecting again finds the rule: never a second copy.
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "zoneId": zone}),
    );
    let rules = stand_in().control("GET", &format!("zones/{zone}"), None)["rules"].clone();
    assert_eq!(
        rules.as_array().unwrap().len(),
        1,
        "one rule, however often connected: {rules}"
    );

    assert_eq!(
        app.add("81.2.69.160"),
        "[81.2.69.160] has been added to greylist"
    );
    app.add("2a00:1450:4001:80b::200e");
    list_becomes(&account, &["2a00:1450:4001:80b::/64", "81.2.69.160"]);
    app.remove("81.2.69.160");
    list_becomes(&account, &["2a00:1450:4001:80b::/64"]);

    let status = in_sync(&app);
    assert_eq!(status["items"], 1);
    assert_eq!(status["leftOut"], 0);
    assert_eq!(status["lastPush"]["status"], "completed");
    assert_eq!(status["lastPush"]["removed"], 1);
    assert_eq!(status["lastError"], Value::Null);
    assert_eq!(stand_in().account(&account)["refusedWhilePending"], 0);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_burst_of_two_hundred_changes_is_one_push_and_never_two_operations_at_once() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    let ips: Vec<String> = (0..200)
        .map(|i| format!("81.2.{}.{}", 70 + i / 100, 2 * (i % 100) + 1))
        .collect();
    // Once the first comparison of the new connection is done (it pushes what is there then)…
    in_sync(&app);
    // …two hundred adds in eight requests, one every quarter second: over
    // nearly two seconds, so that a push that went at once would miss most of
    // them, and the last sent 1.75 s after the first, since none waits for
    // another's answer: it has more than two seconds to land within the
    // burst's gathering (5 s, counted in whole seconds from the first change).
    std::thread::scope(|s| {
        for (i, part) in ips.chunks(25).enumerate() {
            let app = &app;
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(250) * i as u32);
                add_all(app, part);
            });
        }
    });
    // The first push that completes holds them all.
    let first = poll(
        Duration::from_secs(40),
        Duration::from_millis(200),
        || stand_in().items(&account, "greylist"),
        |items| !items.is_empty(),
    )
    .unwrap_or_else(|_| panic!("nothing reached the list"));
    assert_eq!(first.len(), 200, "two hundred changes, one push: {first:?}");
    assert_eq!(
        stand_in().calls(&account, ADD_ITEMS),
        1,
        "two hundred changes, one push"
    );
    assert_eq!(
        stand_in().account(&account)["refusedWhilePending"],
        0,
        "never two operations pending"
    );
    // Removing half and adding one: the removals go first, then the addition.
    let form: String = ips[..100].iter().map(|ip| format!("ip={ip}&")).collect();
    let resp = app.bulk(
        "/api/deleteIpsFromGreylist",
        "application/x-www-form-urlencoded",
        form.trim_end_matches('&'),
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    app.add("89.160.20.112");
    let mut wanted: Vec<&str> = ips[100..].iter().map(String::as_str).collect();
    wanted.push("89.160.20.112");
    list_becomes(&account, &wanted);
    assert_eq!(stand_in().calls(&account, DELETE_ITEMS), 1);
    assert_eq!(stand_in().calls(&account, ADD_ITEMS), 2);
    assert_eq!(stand_in().account(&account)["refusedWhilePending"], 0);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_429_is_tried_again_and_nothing_is_lost() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    stand_in().control(
        "POST",
        "faults",
        Some(json!({"account": account, "status": 429, "times": 1, "changes": true, "retryAfter": 1})),
    );
    app.add("81.2.69.161");
    let status = poll(
        Duration::from_secs(30),
        Duration::from_millis(200),
        || cloudflare(&app, "GET", "", None).json(),
        |s| !s["lastError"].is_null(),
    )
    .unwrap_or_else(|s| panic!("the 429 never showed: {s}"));
    assert_eq!(status["lastError"]["code"], 1015);
    assert_eq!(
        status["lastError"]["message"], "You are being rate limited",
        "Cloudflare's own words"
    );
    list_becomes(&account, &["81.2.69.161"]);
    assert_eq!(
        stand_in().calls(&account, ADD_ITEMS),
        2,
        "the refused push, then the one that took"
    );
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_token_cloudflare_refuses_stops_the_sync_and_shows_why_until_one_that_works() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    app.add("81.2.69.162");
    list_becomes(&account, &["81.2.69.162"]);
    // The holder takes the lists permission away from the token in Cloudflare.
    stand_in().grant(&token, &account, &zone, false);
    app.add("81.2.69.165");
    let status = poll(
        Duration::from_secs(40),
        Duration::from_millis(300),
        || cloudflare(&app, "GET", "", None).json(),
        |s| s["state"] == "stopped",
    )
    .unwrap_or_else(|s| panic!("the sync never stopped: {s}"));
    assert_eq!(status["lastError"]["code"], 10000);
    assert_eq!(status["lastError"]["message"], "Authentication error");
    assert_eq!(
        status["nextAttempt"],
        Value::Null,
        "no attempt until a token works"
    );
    let calls = stand_in().account(&account)["calls"].clone();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        stand_in().account(&account)["calls"],
        calls,
        "a stopped sync calls nothing"
    );
    // A token that works starts it again, on the same list.
    let fresh = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": fresh}));
    list_becomes(&account, &["81.2.69.162", "81.2.69.165"]);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_connection_is_refused_by_the_field_or_in_cloudflares_words_and_nothing_is_kept() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    for (body, field) in [
        (
            json!({"accountId": "12345", "apiToken": token}),
            "accountId",
        ),
        (
            json!({"accountId": account, "apiToken": token, "listName": "Grey List"}),
            "listName",
        ),
        (
            json!({"accountId": account, "apiToken": token, "maxItems": 500_001}),
            "maxItems",
        ),
        (
            json!({"accountId": account, "apiToken": token, "zoneId": "zone"}),
            "zoneId",
        ),
    ] {
        let resp = cloudflare(&app, "PUT", "", Some(body));
        assert_eq!(resp.status, 400, "{}", resp.body);
        assert!(
            resp.body.contains(&format!("Bad request: {field}")),
            "names {field}: {}",
            resp.body
        );
    }
    let resp = cloudflare(
        &app,
        "PUT",
        "",
        Some(json!({"accountId": account, "apiToken": "not-a-token-cloudflare-knows"})),
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(
        resp.body.contains("Invalid access token"),
        "Cloudflare's own words: {}",
        resp.body
    );
    let other = fresh_id();
    let resp = cloudflare(
        &app,
        "PUT",
        "",
        Some(json!({"accountId": other, "apiToken": token})),
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.body.contains("Authentication error"), "{}", resp.body);
    let status = cloudflare(&app, "GET", "", None).json();
    assert_eq!(status["connected"], false, "nothing kept: {status}");
    assert!(
        stand_in().account(&account)["lists"]
            .as_array()
            .unwrap()
            .is_empty(),
        "no list made"
    );
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_list_that_holds_items_of_someone_elses_is_taken_over_only_when_asked_and_then_put_right() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    // Another holder's service filled a list of that name.
    let other = TestApp::on(&server());
    connect(&other, json!({"accountId": account, "apiToken": token}));
    other.add("89.160.20.113");
    list_becomes(&account, &["89.160.20.113"]);
    let resp = cloudflare(
        &app,
        "PUT",
        "",
        Some(json!({"accountId": account, "apiToken": token})),
    );
    assert_eq!(resp.status, 409, "{}", resp.body);
    assert!(resp.body.contains("takeOver"), "{}", resp.body);
    assert_eq!(cloudflare(&other, "DELETE", "", None).status, 200);
    app.add("81.2.69.164");
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "takeOver": true}),
    );
    list_becomes(&account, &["81.2.69.164"]);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn the_cap_keeps_the_newest_own_entries_and_says_how_many_it_left_out() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    for ip in ["89.160.20.120", "89.160.20.122", "89.160.20.124"] {
        app.add(ip);
        // Entries a second apart: the newest is unambiguous.
        std::thread::sleep(Duration::from_millis(1100));
    }
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "maxItems": 2}),
    );
    list_becomes(&account, &["89.160.20.122", "89.160.20.124"]);
    app.add("89.160.20.126");
    list_becomes(&account, &["89.160.20.124", "89.160.20.126"]);
    let status = in_sync(&app);
    assert_eq!(
        (status["items"].clone(), status["leftOut"].clone()),
        (json!(2), json!(2))
    );
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn two_hundred_fifty_six_consecutive_addresses_go_as_one_slash_24() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    let ips: Vec<String> = (0..256).map(|i| format!("81.2.80.{i}")).collect();
    add_all(&app, &ips);
    app.add("81.2.81.7");
    list_becomes(&account, &["81.2.80.0/24", "81.2.81.7"]);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn the_token_never_shows_in_an_answer_or_a_log_line_and_disconnecting_forgets_it() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    let mut answers = vec![
        cloudflare(
            &app,
            "PUT",
            "",
            Some(json!({"accountId": account, "apiToken": token, "zoneId": zone})),
        )
        .body,
    ];
    app.add("81.2.69.165");
    list_becomes(&account, &["81.2.69.165"]);
    answers.push(cloudflare(&app, "GET", "", None).body);
    answers.push(cloudflare(&app, "DELETE", "", None).body);
    answers.push(cloudflare(&app, "GET", "", None).body);
    for answer in &answers {
        assert!(
            !answer.contains(&token),
            "an answer carried the token: {answer}"
        );
    }
    assert_eq!(
        serde_json::from_str::<Value>(answers.last().unwrap()).unwrap()["connected"],
        false
    );
    assert!(
        !app.server.log().contains(&token),
        "a log line carried the token"
    );
    // Disconnected: a change goes nowhere, and the list stays as it was.
    app.add("81.2.69.166");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(stand_in().items(&account, "greylist"), ["81.2.69.165"]);
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn two_licenses_on_one_account_take_turns_and_never_have_two_operations_pending() {
    let (first, second) = (TestApp::on(&server()), TestApp::on(&server()));
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(
        &first,
        json!({"accountId": account, "apiToken": token, "listName": "first"}),
    );
    connect(
        &second,
        json!({"accountId": account, "apiToken": token, "listName": "second"}),
    );
    // Changes at the same moment: both holders' pushes fall due together, again and again.
    for round in 0..3 {
        let (a, b) = (
            format!("81.2.90.{}", 2 * round + 1),
            format!("81.2.91.{}", 2 * round + 1),
        );
        std::thread::scope(|s| {
            s.spawn(|| first.add(&a));
            s.spawn(|| second.add(&b));
        });
    }
    let items = |name: &str| stand_in().items(&account, name);
    poll(
        Duration::from_secs(60),
        Duration::from_millis(500),
        || (items("first"), items("second")),
        |(a, b)| a.len() == 3 && b.len() == 3,
    )
    .unwrap_or_else(|seen| panic!("both lists never filled: {seen:?}"));
    assert_eq!(
        stand_in().account(&account)["refusedWhilePending"],
        0,
        "Cloudflare refused an operation because another was pending on the account"
    );
    stand_in().assert_no_violations(&account, &zone);
}

/// The items of the account's list `name` with Cloudflare's ids, read as the holder would by hand.
fn delete_by_hand(account: &str, token: &str) {
    let api = format!(
        "{}/client/v4/accounts/{account}/rules/lists",
        stand_in().base
    );
    let auth = [("Authorization", format!("Bearer {token}"))];
    let lists = send("GET", &api, &auth, None).json();
    let list = lists["result"][0]["id"].as_str().unwrap().to_owned();
    let items = send(
        "GET",
        &format!("{api}/{list}/items?per_page=500"),
        &auth,
        None,
    )
    .json();
    let ids: Vec<Value> = items["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| json!({"id": item["id"]}))
        .collect();
    let body = json!({ "items": ids }).to_string();
    let deleted = send(
        "DELETE",
        &format!("{api}/{list}/items"),
        &auth,
        Some(body.as_bytes()),
    )
    .json();
    let operation = deleted["result"]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    poll(
        Duration::from_secs(5),
        Duration::from_millis(50),
        || {
            send(
                "GET",
                &format!("{api}/bulk_operations/{operation}"),
                &auth,
                None,
            )
            .json()
        },
        |op| op["result"]["status"] == "completed",
    )
    .unwrap();
}

#[test]
fn a_list_emptied_by_hand_is_filled_again_by_the_next_full_comparison() {
    let server = own_server();
    let app = TestApp::on(&server);
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    app.add("81.2.69.167");
    app.add("81.2.69.169");
    list_becomes(&account, &["81.2.69.167", "81.2.69.169"]);
    in_sync(&app);
    // An hour on, a list nobody changed costs one look, and no page of its items.
    let pages = "GET /accounts/{account_id}/rules/lists/{list_id}/items";
    let look = "GET /accounts/{account_id}/rules/lists/{list_id}";
    let (read, looked) = (
        stand_in().calls(&account, pages),
        stand_in().calls(&account, look),
    );
    server.advance(3_600);
    poll(
        Duration::from_secs(10),
        Duration::from_millis(200),
        || {
            server.run_holder_alarm(&app.license);
            stand_in().calls(&account, look)
        },
        |calls| *calls > looked,
    )
    .unwrap_or_else(|_| panic!("no hourly look at the list"));
    assert_eq!(
        stand_in().calls(&account, pages),
        read,
        "an hourly look at a list nobody changed reads no page of it"
    );
    delete_by_hand(&account, &token);
    assert!(stand_in().items(&account, "greylist").is_empty());
    // An hour on, the alarm's full comparison finds the list emptied and puts it right.
    server.advance(3_600);
    let items = poll(
        Duration::from_secs(20),
        Duration::from_millis(300),
        || {
            server.run_holder_alarm(&app.license);
            stand_in().items(&account, "greylist")
        },
        |items| items.len() == 2,
    )
    .unwrap_or_else(|items| panic!("the list emptied by hand was not filled again: {items:?}"));
    assert_eq!(items, ["81.2.69.167", "81.2.69.169"]);
    stand_in().assert_no_violations(&account, &zone);
}

/// Whether any holder's database on `server`'s disk keeps a Cloudflare link to `account`.
fn link_kept(server: &Server, account: &str) -> bool {
    let folder = server.state_dir.join("wrangler/v3/do/greylist-HolderList");
    std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "sqlite") && !path.ends_with("metadata.sqlite")
        })
        .any(|path| {
            let db = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap();
            db.query_row(
                "SELECT count(*) FROM cloudflare WHERE link LIKE ?1",
                [format!("%{account}%")],
                |row| row.get::<_, i64>(0),
            )
            .is_ok_and(|n| n > 0)
        })
}

#[test]
fn a_revoked_license_stops_its_sync_and_its_token_is_erased() {
    let server = server();
    let app = TestApp::on(&server);
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    connect(&app, json!({"accountId": account, "apiToken": token}));
    app.add("81.2.69.171");
    list_becomes(&account, &["81.2.69.171"]);
    assert!(
        link_kept(&server, &account),
        "the link is kept while the license is live"
    );
    let resp = server.admin("DELETE", &format!("/admin/licenses/{}", app.license), None);
    assert!(resp.status < 300, "{}", resp.body);
    poll(
        Duration::from_secs(20),
        Duration::from_millis(300),
        || link_kept(&server, &account),
        |kept| !kept,
    )
    .unwrap_or_else(|_| {
        panic!("a revoked license's Cloudflare link, with its sealed token, was kept")
    });
    let calls = stand_in().account(&account)["calls"].clone();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        stand_in().account(&account)["calls"],
        calls,
        "a revoked license's sync calls nothing"
    );
}

#[test]
fn without_its_key_the_sync_is_off_and_says_which_setting_and_the_service_goes_on() {
    // The shared server has no CLOUDFLARE_TOKEN_KEY.
    let app = TestApp::new();
    let resp = cloudflare(
        &app,
        "PUT",
        "",
        Some(json!({"accountId": fresh_id(), "apiToken": "any-token"})),
    );
    assert_eq!(resp.status, 503, "{}", resp.body);
    assert!(
        resp.body.contains("CLOUDFLARE_TOKEN_KEY"),
        "names the setting: {}",
        resp.body
    );
    assert_eq!(cloudflare(&app, "GET", "", None).json()["connected"], false);
    assert_eq!(
        app.add("81.2.69.173"),
        "[81.2.69.173] has been added to greylist"
    );
}

#[test]
fn an_account_that_holds_no_more_gets_the_newest_entries_that_fit() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    // The account holds two items across its lists: the third addition fails there.
    stand_in().control("POST", "cap", Some(json!({"account": account, "cap": 2})));
    for ip in ["89.160.20.130", "89.160.20.132", "89.160.20.134"] {
        app.add(ip);
        std::thread::sleep(Duration::from_millis(1100));
    }
    connect(&app, json!({"accountId": account, "apiToken": token}));
    let items = poll(
        Duration::from_secs(45),
        Duration::from_millis(500),
        || stand_in().items(&account, "greylist"),
        |items| items.len() == 2,
    )
    .unwrap_or_else(|items| panic!("the account's two items never filled: {items:?}"));
    assert_eq!(
        items,
        ["89.160.20.132", "89.160.20.134"],
        "the newest entries that the account holds"
    );
    let status = in_sync(&app);
    assert_eq!(status["accountRefusedAt"], 3, "{status}");
    assert_eq!(status["leftOut"], 1, "{status}");
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_large_list_taken_over_is_read_a_few_pages_an_alarm_and_emptied_in_bounded_operations() {
    let app = TestApp::on(&server());
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    // 20 001 items: 41 pages of 500, more than one alarm reads (40).
    stand_in().control(
        "POST",
        "fill",
        Some(json!({"account": account, "name": "greylist", "count": 20_001})),
    );
    app.add("81.2.69.175");
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "takeOver": true}),
    );
    list_becomes_within(&account, &["81.2.69.175"], Duration::from_secs(90));
    let read = "GET /accounts/{account_id}/rules/lists/{list_id}/items";
    assert_eq!(stand_in().calls(&account, read), 41, "each page read once");
    assert_eq!(
        stand_in().calls(&account, DELETE_ITEMS),
        3,
        "20 001 removals in operations of at most 10 000"
    );
    assert_eq!(stand_in().account(&account)["refusedWhilePending"], 0);
    stand_in().assert_no_violations(&account, &zone);
}

/// How often a connected holder's object looks at the operator's lists' versions
/// (`OPERATOR_LOOK_SECONDS`).
const OPERATOR_LOOK_SECONDS: u64 = 180;

/// Moves `server`'s clock past the next look at the operator's lists, and runs
/// the holder's alarm until the list is `wanted`.
fn after_a_look(server: &Server, app: &TestApp, account: &str, wanted: &[&str]) {
    server.advance(OPERATOR_LOOK_SECONDS);
    let mut wanted: Vec<String> = wanted.iter().map(|s| (*s).to_owned()).collect();
    wanted.sort();
    poll(
        Duration::from_secs(30),
        Duration::from_millis(500),
        || {
            server.run_holder_alarm(&app.license);
            stand_in().items(account, "greylist")
        },
        |items| *items == wanted,
    )
    .unwrap_or_else(|items| panic!("after a look, the list came to {items:?}, not {wanted:?}"));
}

#[test]
fn with_the_scope_all_the_global_blocks_go_too_without_either_allow_list_and_follow_each_change() {
    let server = own_server();
    assert_eq!(
        server.edit_global_list(&["89.160.20.0/24"], &[]).status,
        200
    );
    assert_eq!(server.promote(&["81.2.69.200"], &[])["added"], 1);
    let app = TestApp::on(&server);
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    app.add("81.2.69.167");
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "scope": "all"}),
    );
    list_becomes(&account, &["81.2.69.167", "81.2.69.200", "89.160.20.0/24"]);
    // The holder's own allow list cuts a global block at once, as their own change.
    let resp = app.form(
        "/api/addIpToAllowlist",
        &[("ip", "89.160.20.1")],
        Mode::Json,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    list_becomes(
        &account,
        &[
            "81.2.69.167",
            "81.2.69.200",
            "89.160.20.0",
            "89.160.20.2/31",
            "89.160.20.4/30",
            "89.160.20.8/29",
            "89.160.20.16/28",
            "89.160.20.32/27",
            "89.160.20.64/26",
            "89.160.20.128/25",
        ],
    );
    in_sync(&app);
    // A look that finds the operator's lists as they were costs Cloudflare nothing.
    let calls = stand_in().all_calls(&account);
    server.advance(OPERATOR_LOOK_SECONDS);
    server.run_holder_alarm(&app.license);
    assert_eq!(
        stand_in().all_calls(&account),
        calls,
        "a look at unchanged lists calls Cloudflare"
    );
    // The operator's changes reach the list at the next look.
    assert_eq!(server.edit_allow_list(&["89.160.20.0/25"], &[]).status, 200);
    assert_eq!(server.edit_global_list(&["5.9.0.0/16"], &[]).status, 200);
    after_a_look(
        &server,
        &app,
        &account,
        &[
            "5.9.0.0/16",
            "81.2.69.167",
            "81.2.69.200",
            "89.160.20.128/25",
        ],
    );
    stand_in().assert_no_violations(&account, &zone);
}

#[test]
fn a_list_too_small_for_all_keeps_the_holders_own_then_the_promoted_then_the_operators() {
    let server = own_server();
    assert_eq!(server.edit_global_list(&["5.9.0.0/16"], &[]).status, 200);
    assert_eq!(server.promote(&["89.160.20.9"], &[])["added"], 1);
    let app = TestApp::on(&server);
    let (account, zone) = (fresh_id(), fresh_id());
    let token = stand_in().token(&account, &zone);
    app.add("81.2.69.10");
    app.add("81.2.69.20");
    connect(
        &app,
        json!({"accountId": account, "apiToken": token, "scope": "all", "maxItems": 3}),
    );
    list_becomes(&account, &["81.2.69.10", "81.2.69.20", "89.160.20.9"]);
    let status = in_sync(&app);
    assert_eq!(
        (status["items"].clone(), status["leftOut"].clone()),
        (json!(3), json!(1)),
        "the operator's block left out"
    );
    // The promotion decays: the operator's block takes its place at the next look.
    assert_eq!(server.promote(&[], &["89.160.20.9"])["removed"], 1);
    after_a_look(
        &server,
        &app,
        &account,
        &["5.9.0.0/16", "81.2.69.10", "81.2.69.20"],
    );
    stand_in().assert_no_violations(&account, &zone);
}
