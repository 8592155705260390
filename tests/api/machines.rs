//! A holder's CrowdSec engines ("machines") on the edges of the Local API's
//! machine side: making, changing and revoking machines; the login as CrowdSec
//! answers it and every way it is refused; machine tokens and access tokens
//! kept apart; what an alert does (a report, an add for the machine's ttl, a
//! later expiry for a listed address, decisions' own durations) and every alert
//! acknowledged that changes nothing; gzip and oversized bodies; more alerts
//! than a request takes; the daily limits of each half; revocation; the
//! heartbeat that writes nothing. Each test makes its own license; the alerts
//! are for addresses in 86.0.0.0/8, which no other test uses, each test its own /16.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use greylist::domain::time::UnixTime;
use serde_json::{json, Value};

use crate::costs::{count, spent};
use crate::helpers::{
    gzip, send, status_before_the_body_ends, Mode, Resp, Server, TestApp, ADMIN_TOKEN,
};

/// The server these tests share: IPv6 on, so that an engine's IPv6 alert is
/// taken; its logins count against a limit of their own, apart from the
/// server most tests share.
fn server() -> Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| Server::own(&[("IPV6", "on")]).for_many())
        .clone()
}

/// A machine of a holder's, logged in.
pub(crate) struct Machine {
    id: String,
    machine_id: String,
    password: String,
    token: String,
}

fn holder_call(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Resp {
    let mut headers = vec![("Authorization", format!("Bearer {}", app.token))];
    if body.is_some() {
        headers.push(("Content-Type", "application/json".to_owned()));
    }
    let body = body.map(|body| body.to_string().into_bytes());
    send(
        method,
        &format!("{}{path}", app.server.base),
        &headers,
        body.as_deref(),
    )
}

fn login(server: &Server, machine_id: &str, password: &str) -> Resp {
    let body = json!({
        "machine_id": machine_id,
        "password": password,
        "scenarios": ["crowdsecurity/ssh-bf", "crowdsecurity/http-probing"],
    });
    send(
        "POST",
        &format!("{}/v1/watchers/login", server.base),
        &[("Content-Type", "application/json".to_owned())],
        Some(body.to_string().as_bytes()),
    )
}

/// A new machine of `app`'s, named `name`, logged in.
pub(crate) fn machine(app: &TestApp, name: &str) -> Machine {
    let named = json!({ "name": name });
    let made = holder_call(app, "POST", "/api/machines", Some(named));
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let (machine_id, password) = (
        made["machineId"].as_str().unwrap().to_owned(),
        made["password"].as_str().unwrap().to_owned(),
    );
    let logged_in = login(&app.server, &machine_id, &password);
    assert_eq!(logged_in.status, 200, "{}", logged_in.body);
    Machine {
        id: made["id"].as_str().unwrap().to_owned(),
        machine_id,
        password,
        token: logged_in.json()["token"].as_str().unwrap().to_owned(),
    }
}

/// A machine's call of a Local API route with its token.
fn machine_call(server: &Server, token: &str, method: &str, path: &str, body: &[u8]) -> Resp {
    let mut headers = vec![("Authorization", format!("Bearer {token}"))];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json".to_owned()));
    }
    let body = (!body.is_empty()).then_some(body);
    send(method, &format!("{}{path}", server.base), &headers, body)
}

fn beat(server: &Server, token: &str) -> Resp {
    machine_call(server, token, "GET", "/v1/heartbeat", b"")
}

pub(crate) fn post_alerts(server: &Server, machine: &Machine, alerts: &Value) -> Resp {
    let (token, body) = (&machine.token, alerts.to_string());
    machine_call(server, token, "POST", "/v1/alerts", body.as_bytes())
}

const SSH_BF: &str = "crowdsecurity/ssh-bf";

/// An alert as Debian's crowdsec 1.4.6 posts one, for `ip` and `scenario`.
fn alert(ip: &str, scenario: &str) -> Value {
    let at = "2026-11-26T06:00:00Z";
    json!({
        "capacity": 5,
        "decisions": null,
        "events": [{ "meta": [{ "key": "source_ip", "value": ip }], "timestamp": at }],
        "events_count": 8,
        "labels": null,
        "leakspeed": "10s",
        "message": format!("Ip {ip} performed '{scenario}' (8 events over 1ms)"),
        "remediation": true,
        "scenario": scenario,
        "scenario_hash": "4441dcff07020f6690d998b7101e642359ba405c2abb83565bbbdcee36de280f",
        "scenario_version": "0.1",
        "simulated": false,
        "source": { "as_name": "", "cn": "", "ip": ip, "range": "", "scope": "Ip", "value": ip },
        "start_at": at,
        "stop_at": at
    })
}

/// The `n`th address of the /16 `net` the test posts alerts for, from
/// `<net>.0.1`, a hundred to each /24.
fn nth(net: &str, n: usize) -> String {
    format!("{net}.{}.{}", n / 100, n % 100 + 1)
}

/// Posts one alert of `scenario` for `ip`.
fn alert_of(server: &Server, machine: &Machine, ip: &str, scenario: &str) -> Resp {
    post_alerts(server, machine, &json!([alert(ip, scenario)]))
}

/// Ids as the answer gives them: strings, one per alert.
fn ids(resp: &Resp) -> Vec<String> {
    assert_eq!(resp.status, 201, "{}", resp.body);
    resp.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().expect("an id is a string").to_owned())
        .collect()
}

/// `app`'s machines, as their holder lists them.
fn machines_of(app: &TestApp) -> Resp {
    holder_call(app, "GET", "/api/machines", None)
}

/// `app`'s machine `id`, as the holder's list of machines shows it.
fn shown(app: &TestApp, id: &str) -> Value {
    let listed = machines_of(app);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let machines = listed.json()["machines"].clone();
    machines
        .as_array()
        .unwrap()
        .iter()
        .find(|machine| machine["id"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

fn counts(app: &TestApp, machine: &Machine) -> Value {
    shown(app, &machine.id)["counts"].clone()
}

/// The holder's entry for `ip`, if the list has it.
fn entry(app: &TestApp, ip: &str) -> Option<Value> {
    app.list(&[])["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["ip"] == ip)
        .cloned()
}

/// Seconds from the entry's addition to its expiry.
fn lasts(entry: &Value) -> u64 {
    let at = |field: &str| UnixTime::parse_rfc3339(entry[field].as_str().unwrap()).unwrap();
    at("expiresAt").0 - at("addedAt").0
}

/// The operator's lookup of `ip`'s reports, once `app`'s object sent what it kept.
fn reports_of(app: &TestApp, ip: &str) -> Value {
    let server = &app.server;
    server.run_holder_alarm(&app.license);
    let resp = server.admin("GET", &format!("/admin/lookup?ip={ip}"), None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["reports"].clone()
}

#[test]
fn a_holder_makes_lists_changes_and_revokes_machines_at_most_twenty() {
    let app = TestApp::on(&server());
    let named = json!({ "name": "web-1" });
    let made = holder_call(&app, "POST", "/api/machines", Some(named));
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let id = made["id"].as_str().unwrap();
    let machine_id = made["machineId"].as_str().unwrap();
    let password = made["password"].as_str().unwrap();
    assert!(id.starts_with("mc_"), "{made}");
    assert!(machine_id.starts_with("glm_"), "{made}");
    assert_eq!(machine_id.len(), 4 + 32, "128 random bits in hex");
    assert_eq!(password.len(), 32);
    let alphanumeric = password.bytes().all(|b| b.is_ascii_alphanumeric());
    assert!(alphanumeric, "{password}");
    assert_eq!(
        (
            made["name"].clone(),
            made["ttl"].clone(),
            made["adds"].clone()
        ),
        (json!("web-1"), json!(14_400), json!(true))
    );
    // A form without a name makes one without a label.
    let unnamed = app.form("/api/machines", &[], Mode::Json);
    assert_eq!(unnamed.status, 201, "{}", unnamed.body);
    assert_eq!(unnamed.json()["name"], Value::Null);
    let listed = machines_of(&app);
    assert_eq!(listed.status, 200);
    assert!(!listed.body.contains(password), "shown only once");
    let first = shown(&app, id);
    assert_eq!(
        first["counts"],
        json!({ "alerts": 0, "reported": 0, "added": 0, "ignored": 0 })
    );
    assert_eq!(first["lastLoginAt"], Value::Null);
    assert_eq!(first["lastAlertAt"], Value::Null);
    // Changes: a form's fields and JSON's alike, each as given.
    let path = format!("/api/machines/{id}");
    let form = send(
        "PATCH",
        &format!("{}{path}", app.server.base),
        &[
            ("Authorization", format!("Bearer {}", app.token)),
            (
                "Content-Type",
                "application/x-www-form-urlencoded".to_owned(),
            ),
        ],
        Some(b"ttl=3600&adds=false"),
    );
    assert_eq!(form.status, 200, "{}", form.body);
    assert_eq!(
        (form.json()["ttl"].clone(), form.json()["adds"].clone()),
        (json!(3600), json!(false))
    );
    let change = json!({ "ttl": 7200, "adds": true });
    let changed = holder_call(&app, "PATCH", &path, Some(change));
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(
        (
            changed.json()["ttl"].clone(),
            changed.json()["adds"].clone()
        ),
        (json!(7200), json!(true))
    );
    let renamed = holder_call(&app, "PATCH", &path, Some(json!({ "name": "" })));
    assert_eq!(renamed.json()["name"], Value::Null, "{}", renamed.body);
    assert_eq!(renamed.json()["ttl"], 7200, "the rest stays");
    for bad in [json!({ "ttl": 59 }), json!({ "adds": "maybe" }), json!({})] {
        let refused = holder_call(&app, "PATCH", &path, Some(bad.clone()));
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
    for missing in ["/api/machines/mc_0000000000000000", "/api/machines/nope"] {
        let none = holder_call(&app, "PATCH", missing, Some(json!({ "ttl": 600 })));
        assert_eq!(none.status, 404, "{missing}: {}", none.body);
        assert_eq!(holder_call(&app, "DELETE", missing, None).status, 404);
    }
    // Twenty at most; a revoked one makes room.
    for n in 2..20 {
        let named = json!({ "name": format!("m{n}") });
        let more = holder_call(&app, "POST", "/api/machines", Some(named));
        assert_eq!(more.status, 201, "{}", more.body);
    }
    let refused = holder_call(&app, "POST", "/api/machines?result_mode=json", None);
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(
        refused.json()["result"],
        "Conflict: at most 20 machines; revoke one first"
    );
    assert_eq!(holder_call(&app, "DELETE", &path, None).status, 204);
    assert_eq!(holder_call(&app, "DELETE", &path, None).status, 404);
    assert_eq!(login(&server(), machine_id, password).status, 401);
    assert_eq!(holder_call(&app, "POST", "/api/machines", None).status, 201);
}

#[test]
fn a_machine_logs_in_as_crowdsecs_local_api_answers_and_is_refused_otherwise() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let logged_in = login(&server, &machine.machine_id, &machine.password);
    assert_eq!(logged_in.status, 200, "{}", logged_in.body);
    assert_eq!(logged_in.content_type, "application/json");
    let answer = logged_in.json();
    let fields: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["code", "expire", "token"]);
    assert_eq!(answer["code"], 200);
    let expire = UnixTime::parse_rfc3339(answer["expire"].as_str().unwrap()).unwrap();
    let hour_on = server.now() + 3600;
    assert!(expire.0.abs_diff(hour_on) <= 5, "an hour on: {answer}");
    assert_eq!(answer["token"].as_str().unwrap().split('.').count(), 3);
    let seen = shown(&app, &machine.id);
    assert!(seen["lastLoginAt"].is_string(), "{seen}");
    assert_eq!(
        seen["scenarios"],
        json!(["crowdsecurity/ssh-bf", "crowdsecurity/http-probing"])
    );
    // Every refusal is CrowdSec's own 401, whatever its reason.
    let refused = json!({ "code": 401, "message": "incorrect Username or Password" });
    let unknown = "glm_00000000000000000000000000000000";
    let (known, password) = (machine.machine_id.as_str(), machine.password.as_str());
    for (machine_id, password) in [
        (known, "wrong"),
        (known, ""),
        (unknown, password),
        ("root", password),
        ("", ""),
    ] {
        let resp = login(&server, machine_id, password);
        assert_eq!(resp.status, 401, "{machine_id}");
        assert_eq!(resp.json(), refused, "{machine_id}");
    }
    let url = format!("{}/v1/watchers/login", server.base);
    for body in ["", "not json", "[]", "{\"machine_id\": 7}"] {
        let resp = send("POST", &url, &[], Some(body.as_bytes()));
        assert_eq!(resp.status, 401, "{body:?}");
        assert_eq!(resp.json(), refused, "{body:?}");
    }
    // Over 64 KiB once decompressed, from a few hundred bytes: refused as it
    // streams in, with the client done writing (a body that large sent plain
    // meets the answer before it is all written, and the client sees a broken pipe).
    let big = json!({ "machine_id": known, "password": "x", "scenarios": ["s".repeat(70_000)] });
    let gzipped_login = |body: &Value| {
        let gzip_encoded = [("Content-Encoding", "gzip".to_owned())];
        send(
            "POST",
            &url,
            &gzip_encoded,
            Some(&gzip(body.to_string().as_bytes())),
        )
    };
    let too_large = gzipped_login(&big);
    assert_eq!(
        too_large.status, 413,
        "a gzipped login past 64 KiB once decoded is refused 413: {}",
        too_large.body
    );
    assert!(too_large.json()["message"].is_string());
    // A long list of scenarios is kept bounded, and the login taken.
    let many: Vec<String> = (0..300).map(|n| format!("crowdsecurity/s{n}")).collect();
    let body = json!({ "machine_id": known, "password": password, "scenarios": many });
    let taken = send("POST", &url, &[], Some(body.to_string().as_bytes()));
    assert_eq!(taken.status, 200, "{}", taken.body);
    let kept = shown(&app, &machine.id)["scenarios"].clone();
    assert_eq!(kept.as_array().unwrap().len(), 200);
    // Engines from CrowdSec 1.7 gzip a body over 5 KB, as this login is.
    let gzipped = gzipped_login(&body);
    assert_eq!(gzipped.status, 200, "{}", gzipped.body);
    // An engine never registers itself.
    let register = send(
        "POST",
        &format!("{}/v1/watchers", server.base),
        &[],
        Some(b"{\"machine_id\": \"mine\", \"password\": \"x\"}"),
    );
    assert_eq!(register.status, 403);
    let why = "Forbidden: machines are made by their license holder (POST /api/machines)";
    assert_eq!(register.json(), json!({ "message": why }));
}

#[test]
fn a_clients_64_has_one_login_budget_for_holders_and_machines_alike() {
    // An IPv6 /64 whose third and fourth groups are zero, which one spelling
    // of the /64 writes `2001:db8::/64` and another `2001:db8:0:0::/64`.
    let server = server();
    let from = |path: &str, client: &str, body: Value| {
        let headers = [
            ("Content-Type", "application/json".to_owned()),
            ("CF-Connecting-IP", client.to_owned()),
        ];
        let url = format!("{}{path}", server.base);
        send("POST", &url, &headers, Some(body.to_string().as_bytes()))
    };
    let holder = |n: u32| {
        let key = json!({ "licenseKey": "not-a-key" });
        from(
            "/v2/authentication/login/license",
            &format!("2001:db8::{n:x}"),
            key,
        )
    };
    let machine = |client: &str| {
        let name = json!({ "machine_id": "not-a-machine", "password": "x" });
        from("/v1/watchers/login", client, name)
    };
    // Holders' logins from addresses of the /64 until its budget is spent
    // (a fixed 60-second window: the flood may straddle two).
    let spent = (0..300).find(|&n| holder(n).status == 429);
    assert!(spent.is_some(), "300 logins from one /64, and none refused");
    let same_64 = machine("2001:db8::beef");
    if same_64.status != 429 {
        // Only a new window, begun right then, gives the /64 a budget again.
        assert_ne!(
            holder(1).status,
            429,
            "a machine's login from the /64 had a budget of its own: {}",
            same_64.body
        );
    }
    assert_eq!(
        machine("2001:db8:0:1::beef").status,
        401,
        "another /64 logs in"
    );
}

#[test]
fn machine_tokens_and_access_tokens_never_open_each_others_routes() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let ok = beat(&server, &machine.token);
    assert_eq!((ok.status, ok.json()), (200, json!({})), "{}", ok.body);
    for token in [app.token.as_str(), "", "garbage", "a.b.c"] {
        let refused = beat(&server, token);
        assert_eq!(refused.status, 401, "{token}: {}", refused.body);
        assert!(refused.json()["message"].is_string(), "{}", refused.body);
        assert_eq!(refused.header("WWW-Authenticate"), Some("Bearer"));
    }
    let body = json!([alert("86.1.0.9", SSH_BF)]).to_string();
    let (token, bytes) = (app.token.as_str(), body.as_bytes());
    let with_access_token = machine_call(&server, token, "POST", "/v1/alerts", bytes);
    assert_eq!(with_access_token.status, 401);
    assert_eq!(entry(&app, "86.1.0.9"), None);
    // A machine token opens no holder's, feed, bouncer or operator route.
    let status = |method: &str, path: &str, header: (&'static str, String)| {
        send(method, &format!("{}{path}", server.base), &[header], None).status
    };
    let bearer = || ("Authorization", format!("Bearer {}", machine.token));
    for (method, path) in [
        ("POST", "/api/checkIpOnGreylist"),
        ("GET", "/api/machines"),
        ("GET", "/api/quota"),
        ("GET", "/api/greylistFeed"),
        ("GET", "/admin/licenses"),
    ] {
        assert_eq!(
            status(method, path, bearer()),
            401,
            "{path}: a machine's token opens no holder's or operator's route"
        );
    }
    let stream = "/v1/decisions/stream?startup=true";
    assert_eq!(status("GET", stream, bearer()), 403);
    let key = ("X-Api-Key", machine.token.clone());
    assert_eq!(status("GET", stream, key), 403);
    // Nor does a token of its own kind altered to name another license.
    let other = TestApp::on(&server);
    let theirs = self::machine(&other, "theirs");
    let part = |token: &str, n: usize| token.split('.').nth(n).unwrap().to_owned();
    let forged = format!(
        "{}.{}.{}",
        part(&machine.token, 0),
        part(&theirs.token, 1),
        part(&machine.token, 2)
    );
    assert_eq!(beat(&server, &forged).status, 401);
}

#[test]
fn an_alert_reports_and_adds_for_the_machines_ttl_and_a_repeat_moves_the_expiry_later() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    assert_eq!(ids(&alert_of(&server, &machine, "86.1.0.1", SSH_BF)), ["1"]);
    let listed = entry(&app, "86.1.0.1").expect("the alert's address is listed");
    assert_eq!(listed["comment"], SSH_BF);
    assert_eq!(lasts(&listed), 14_400, "CrowdSec's four hours");
    let reports = reports_of(&app, "86.1.0.1");
    assert_eq!(reports["licenses"], 1, "{reports}");
    let categories = reports["reporters"][0]["categories"].clone();
    assert_eq!(categories, json!(["ssh", "brute-force"]));
    let seen = shown(&app, &machine.id);
    assert_eq!(
        seen["counts"],
        json!({ "alerts": 1, "reported": 1, "added": 1, "ignored": 0 })
    );
    assert!(seen["lastAlertAt"].is_string(), "{seen}");
    // A longer ttl, and the same alert again: the expiry moves later, the entry stays.
    let path = format!("/api/machines/{}", machine.id);
    let set = |change: Value| {
        let resp = holder_call(&app, "PATCH", &path, Some(change));
        assert_eq!(resp.status, 200, "{}", resp.body);
    };
    set(json!({ "ttl": 28_800 }));
    let cursor = app.feed_json("format=json")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(ids(&alert_of(&server, &machine, "86.1.0.1", SSH_BF)), ["2"]);
    let extended = entry(&app, "86.1.0.1").unwrap();
    // A firewall reading changes since its cursor gets the entry with its new expiry.
    let delta = app.feed_json(&format!("format=json&since={cursor}"));
    assert_eq!(
        delta["new"][0]["value"], "86.1.0.1",
        "the extended entry is in the delta since the cursor: {delta}"
    );
    assert_eq!(
        delta["new"][0]["expiresAt"], extended["expiresAt"],
        "{delta}"
    );
    assert_eq!(extended["addedAt"], listed["addedAt"]);
    assert!(lasts(&extended) >= 28_800, "{extended}");
    let history = app.history();
    assert_eq!(history["entries"][0]["change"], "extended", "{history}");
    let quota = app.get("/api/quota").json();
    assert_eq!(
        quota["additions"]["used"], 2,
        "an extension is one of the day's additions: {quota}"
    );
    // A shorter ttl never shortens what stands.
    set(json!({ "ttl": 600 }));
    alert_of(&server, &machine, "86.1.0.1", SSH_BF);
    let standing = entry(&app, "86.1.0.1").unwrap();
    assert_eq!(
        standing["expiresAt"], extended["expiresAt"],
        "a shorter ttl never shortens the expiry that stands"
    );
    // Adds off: reports only.
    set(json!({ "adds": false }));
    alert_of(&server, &machine, "86.1.0.2", "crowdsecurity/http-probing");
    assert_eq!(entry(&app, "86.1.0.2"), None);
    let web = reports_of(&app, "86.1.0.2")["reporters"][0]["categories"].clone();
    assert_eq!(web, json!(["web"]));
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 4, "reported": 4, "added": 2, "ignored": 0 })
    );
    // With IPv6 on, an IPv6 source is an address like any other.
    set(json!({ "adds": true }));
    alert_of(&server, &machine, "2a00:1450:4001:86b::1", SSH_BF);
    assert!(entry(&app, "2a00:1450:4001:86b::1").is_some());
}

#[test]
fn alerts_for_private_allowed_simulated_or_other_scopes_change_nothing() {
    let server = server();
    let _allowed = server.listed("allow-list", &["86.2.0.0/24"]);
    let _global = server.listed("global-list", &["86.2.2.1"]);
    let app = TestApp::on(&server);
    let fields = [("ip", "86.2.1.0/24")];
    let own = app.form("/api/addIpToAllowlist", &fields, Mode::Json);
    assert_eq!(own.status, 200, "{}", own.body);
    let mut simulated = alert("86.2.3.1", SSH_BF);
    simulated["simulated"] = json!(true);
    let mut range = alert("86.2.4.0/24", SSH_BF);
    range["source"]["scope"] = json!("Range");
    let mut country = alert("86.2.4.1", SSH_BF);
    country["source"] = json!({ "scope": "Country", "value": "FR" });
    let batch = json!([
        alert("10.0.0.1", SSH_BF),
        alert("86.2.0.5", SSH_BF),
        alert("86.2.1.5", SSH_BF),
        simulated,
        range,
        country,
        alert("86.2.5", SSH_BF),
        "not an alert",
        alert("86.2.2.1", SSH_BF),
    ]);
    let machine = machine(&app, "web-1");
    let answer = post_alerts(&server, &machine, &batch);
    assert_eq!(ids(&answer), ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    // The one on the global list is reported and, being listed there, not added.
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 9, "reported": 1, "added": 0, "ignored": 8 }),
        "only the alert on the global list is reported, none added, the rest ignored"
    );
    // The request's log line tells the operator why, where the engine hears nothing:
    // those the edge let go of by reason (the allow-listed ones are weighed, not skipped).
    let why = "\"detail\":\"alerts ignored: 1 unreadable, 1 simulated, \
               2 not about one address, 2 not a public address\"";
    let line = |l: &str| l.contains(&app.license) && l.contains("\"operation\":\"alerts\"");
    let log = server.log_once(|l| line(l) && l.contains(why));
    assert!(
        log.lines().any(|l| line(l) && l.contains(why)),
        "no alerts line tells why the alerts came to nothing:\n{}",
        log.lines()
            .filter(|l| line(l))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(app.list(&[])["entries"], json!([]));
    assert_eq!(reports_of(&app, "86.2.2.1")["licenses"], 1);
    for ip in ["86.2.0.5", "86.2.1.5", "86.2.3.1"] {
        let reports = reports_of(&app, ip);
        let none = reports.is_null() || reports["licenses"] == 0;
        assert!(none, "{ip}: {reports}");
    }
}

#[test]
fn an_alert_with_decisions_adds_each_for_its_duration_and_reports_nothing() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let mut manual = alert("86.3.0.1", "manual 'ban' from 'web-1'");
    manual["decisions"] = json!([
        {
            "duration": "4h", "origin": "cscli", "scenario": "manual 'ban' from 'web-1'",
            "scope": "Ip", "type": "ban", "value": "86.3.0.1"
        },
        {
            "duration": "30s", "origin": "cscli", "scenario": "short",
            "scope": "Ip", "type": "ban", "value": "86.3.0.2"
        },
        {
            "duration": "4h", "origin": "cscli", "scenario": "range",
            "scope": "Range", "type": "ban", "value": "86.3.1.0/24"
        }
    ]);
    let answer = post_alerts(&server, &machine, &json!([manual]));
    assert_eq!(ids(&answer), ["1"]);
    let four_hours = entry(&app, "86.3.0.1").expect("the first decision's address");
    assert_eq!(lasts(&four_hours), 14_400);
    assert_eq!(four_hours["comment"], "manual 'ban' from 'web-1'");
    let short = entry(&app, "86.3.0.2").expect("the second decision's address");
    assert_eq!(lasts(&short), 60, "a duration under a minute is a minute");
    let reports = reports_of(&app, "86.3.0.1");
    assert!(reports.is_null() || reports["licenses"] == 0, "{reports}");
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 1, "reported": 0, "added": 2, "ignored": 0 })
    );
}

#[test]
fn more_alerts_than_a_request_takes_are_acknowledged_and_counted_ignored() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let batch: Vec<Value> = (0..150)
        .map(|n| nth("86.4", n))
        .map(|ip| alert(&ip, SSH_BF))
        .collect();
    let answer = post_alerts(&server, &machine, &json!(batch));
    let expected: Vec<String> = (1..=150).map(|n| n.to_string()).collect();
    assert_eq!(ids(&answer), expected);
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 150, "reported": 100, "added": 100, "ignored": 50 })
    );
    assert!(entry(&app, "86.4.0.100").is_some());
    assert_eq!(entry(&app, "86.4.1.1"), None, "the 101st alert was left");
    let next = alert_of(&server, &machine, "86.4.2.1", SSH_BF);
    assert_eq!(ids(&next), ["151"], "ids go on from the machine's count");
    let empty = post_alerts(&server, &machine, &json!([]));
    assert_eq!(ids(&empty), Vec::<String>::new());
}

fn post_encoded(server: &Server, machine: &Machine, encoding: &str, body: &[u8]) -> Resp {
    send(
        "POST",
        &format!("{}/v1/alerts", server.base),
        &[
            ("Authorization", format!("Bearer {}", machine.token)),
            ("Content-Type", "application/json".to_owned()),
            ("Content-Encoding", encoding.to_owned()),
        ],
        Some(body),
    )
}

#[test]
fn gzipped_alerts_are_taken_and_a_body_over_64_mebibytes_is_refused_with_413() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let body = json!([alert("86.5.0.1", SSH_BF)]).to_string();
    let gzipped = post_encoded(&server, &machine, "gzip", &gzip(body.as_bytes()));
    assert_eq!(ids(&gzipped), ["1"]);
    assert!(entry(&app, "86.5.0.1").is_some());
    let not_gzip = post_encoded(&server, &machine, "gzip", body.as_bytes());
    assert_eq!(not_gzip.status, 400, "{}", not_gzip.body);
    assert!(not_gzip.json()["message"].is_string());
    let brotli = post_encoded(&server, &machine, "br", body.as_bytes());
    assert_eq!(brotli.status, 415, "{}", brotli.body);
    assert!(brotli.json()["message"].is_string());
    // Over 64 MiB once decompressed from a few kilobytes, and over 64 MiB as it
    // streams in: refused before the body ends.
    let large = format!("[{}]", " ".repeat(64 << 20));
    let bomb = post_encoded(&server, &machine, "gzip", &gzip(large.as_bytes()));
    assert_eq!(bomb.status, 413, "{}", bomb.body);
    let limit = "Payload too large: the body may be at most 64 MiB";
    assert_eq!(bomb.json(), json!({ "message": limit }));
    let bearer = format!("Bearer {}", machine.token);
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let status = |body| {
        let wait = Duration::from_secs(20);
        status_before_the_body_ends(&server.base, "/v1/alerts", &headers, body, wait)
    };
    // Whitespace, which may come before the array, up to the limit.
    let too_large = status((b' ', (64 << 20) + (4 << 10)));
    assert_eq!(too_large.as_deref(), Some("HTTP/1.1 413 Payload Too Large"));
    // Read as it streams: a body that is no array is refused at its first byte.
    let not_json = status((b'x', 1 << 20));
    assert_eq!(
        not_json.as_deref(),
        Some("HTTP/1.1 400 Bad Request"),
        "a body that is no array is refused at its first byte, before it ends"
    );
    let not_an_array = post_alerts(&server, &machine, &json!({ "scenario": "x" }));
    assert_eq!(not_an_array.status, 400, "{}", not_an_array.body);
    let alerts = counts(&app, &machine)["alerts"].clone();
    assert_eq!(alerts, 1, "nothing refused was counted");
}

#[test]
fn an_engines_cache_past_a_mebibyte_is_acknowledged_whole_and_its_first_mebibyte_taken() {
    // CrowdSec 1.4.6 sends its whole cache in one post, and sends it again with
    // the new alerts added until it is taken: 150 alerts of 20 KB, 3 MB.
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let batch: Vec<Value> = (0..150)
        .map(|n| {
            let mut alert = alert(&nth("86.6", n), SSH_BF);
            let log = json!({ "key": "log", "value": "x".repeat(20_000) });
            alert["events"][0]["meta"].as_array_mut().unwrap().push(log);
            alert
        })
        .collect();
    // The alerts taken are those that end within the body's first MiB: after
    // its `[`, each alert and the comma before it.
    let mut end = 0;
    let taken = batch
        .iter()
        .take_while(|alert| {
            end += 1 + alert.to_string().len();
            end <= 1 << 20
        })
        .count();
    assert!((40..100).contains(&taken), "{taken}");
    let answer = post_alerts(&server, &machine, &json!(batch));
    assert_eq!(
        answer.status, 201,
        "a cache of 3 MB is acknowledged whole, not refused for its size: {}",
        answer.body
    );
    let expected: Vec<String> = (1..=150).map(|n| n.to_string()).collect();
    assert_eq!(ids(&answer), expected, "every alert acknowledged");
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 150, "reported": taken, "added": taken, "ignored": 150 - taken })
    );
    assert!(
        entry(&app, &nth("86.6", taken - 1)).is_some(),
        "the last alert taken"
    );
    assert_eq!(
        entry(&app, &nth("86.6", taken)),
        None,
        "the first past the MiB"
    );
}

#[test]
fn each_half_of_an_alert_stops_at_its_daily_limit_and_an_expired_token_is_refused() {
    let server = Server::own(&[
        ("DAILY_REPORTS", "2"),
        ("DAILY_ADDITIONS", "1"),
        ("TOKEN_LIFETIME_SECONDS", "2592000"),
    ]);
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let batch = json!([
        alert("86.6.0.1", SSH_BF),
        alert("86.6.0.2", SSH_BF),
        alert("86.6.0.3", SSH_BF),
    ]);
    assert_eq!(ids(&post_alerts(&server, &machine, &batch)).len(), 3);
    assert_eq!(
        counts(&app, &machine),
        json!({ "alerts": 3, "reported": 2, "added": 1, "ignored": 1 }),
        "two reports and one addition a day, the rest of each half refused"
    );
    assert!(entry(&app, "86.6.0.1").is_some());
    assert_eq!(entry(&app, "86.6.0.2"), None, "the day's one addition");
    // An hour on, the token has expired: 401, and a new login works.
    server.advance(3600);
    let expired = beat(&server, &machine.token);
    assert_eq!(expired.status, 401, "{}", expired.body);
    let renewed = login(&server, &machine.machine_id, &machine.password);
    let token = renewed.json()["token"].as_str().unwrap().to_owned();
    assert_eq!(beat(&server, &token).status, 200);
}

#[test]
fn a_revoked_machine_is_refused_at_its_next_login_and_by_its_alerts() {
    let server = server();
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    let path = format!("/api/machines/{}", machine.id);
    assert_eq!(holder_call(&app, "DELETE", &path, None).status, 204);
    let relogin = login(&server, &machine.machine_id, &machine.password);
    assert_eq!(
        relogin.status, 401,
        "a machine revoked by its holder logs in no more"
    );
    let refused = alert_of(&server, &machine, "86.7.0.1", SSH_BF);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.json()["message"].is_string());
    assert_eq!(beat(&server, &machine.token).status, 401);
    assert_eq!(entry(&app, "86.7.0.1"), None);
    // A revoked license's machines are refused too.
    let other = TestApp::on(&server);
    let theirs = self::machine(&other, "theirs");
    let license = format!("/admin/licenses/{}", other.license);
    assert_eq!(server.admin("DELETE", &license, None).status, 204);
    let relogin = login(&server, &theirs.machine_id, &theirs.password);
    assert_eq!(relogin.status, 401);
    let refused = alert_of(&server, &theirs, "86.7.0.2", SSH_BF);
    assert_eq!(refused.status, 401, "{}", refused.body);
}

#[test]
fn the_heartbeat_writes_nothing_and_an_alerts_request_is_one_object_call() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    // Warm: the isolate holds the license's standing and the machine's record.
    assert_eq!(beat(&server, &machine.token).status, 200);
    let beats = spent(&app, || {
        for _ in 0..5 {
            assert_eq!(beat(&server, &machine.token).status, 200);
        }
    });
    for field in [
        "durableObjectRequests",
        "kvReads",
        "kvWrites",
        "rowsWritten",
    ] {
        assert_eq!(count(&beats, field), 0, "{field}: {beats}");
    }
    // Warm the lists too: the first request that weighs an address loads their
    // manifests, and on a fresh service the writer publishes its first version.
    let first = post_alerts(&server, &machine, &json!([alert("86.8.1.1", SSH_BF)]));
    assert_eq!(ids(&first).len(), 1);
    let batch: Vec<Value> = (1..=20)
        .map(|n| alert(&format!("86.8.0.{n}"), SSH_BF))
        .collect();
    let posted = spent(&app, || {
        let answer = post_alerts(&server, &machine, &json!(batch));
        assert_eq!(ids(&answer).len(), 20);
    });
    assert_eq!(count(&posted, "durableObjectRequests"), 1, "{posted}");
    assert_eq!(count(&posted, "kvWrites"), 0, "{posted}");
}

#[test]
fn no_one_without_its_password_can_lock_a_machine_out() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let machine = machine(&app, "web-1");
    // 150 wrong passwords for its name, each from a client of its own: past the
    // 100 a minute the machine's logins are counted to.
    for n in 0..150 {
        let body = json!({ "machine_id": machine.machine_id, "password": "wrong" });
        let refused = send(
            "POST",
            &format!("{}/v1/watchers/login", server.base),
            &[
                ("Content-Type", "application/json".to_owned()),
                ("CF-Connecting-IP", format!("198.18.30.{n}")),
            ],
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(
            refused.status, 401,
            "a wrong password from another client was counted against the machine: {}",
            refused.body
        );
    }
    let logged_in = login(&server, &machine.machine_id, &machine.password);
    assert_eq!(
        logged_in.status, 200,
        "wrong passwords from others locked the machine out: {}",
        logged_in.body
    );
}

#[test]
fn a_holder_at_twenty_machines_is_refused_without_a_kv_write() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    for n in 0..20 {
        let named = json!({ "name": format!("m{n}") });
        let made = holder_call(&app, "POST", "/api/machines", Some(named));
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let refused = spent(&app, || {
        for _ in 0..5 {
            let more = holder_call(&app, "POST", "/api/machines", None);
            assert_eq!(more.status, 409, "{}", more.body);
        }
    });
    assert_eq!(
        count(&refused, "kvWrites"),
        0,
        "a refused machine wrote its login record first: {refused}"
    );
    assert_eq!(count(&refused, "durableObjectRequests"), 5, "{refused}");
}

#[test]
fn every_answer_under_v1_other_than_2xx_carries_a_json_message() {
    let server = server();
    let url = |path: &str| format!("{}{path}", server.base);
    for (method, path, status) in [
        ("GET", "/v1/allowlists", 404),
        ("POST", "/v1/usage-metrics", 403),
        ("GET", "/v1/watchers", 405),
        ("GET", "/v1/watchers/login", 405),
        ("GET", "/v1/alerts", 405),
        ("POST", "/v1/heartbeat", 405),
        ("GET", "/v1/nothing/here", 404),
        ("POST", "/v1/alerts", 401),
        ("GET", "/v1/heartbeat", 401),
        ("POST", "/v1/watchers", 403),
        ("POST", "/v1/watchers/login", 401),
    ] {
        let body = (method == "POST").then_some(b"[]".as_slice());
        let resp = send(method, &url(path), &[], body);
        assert_eq!(resp.status, status, "{method} {path}: {}", resp.body);
        assert_eq!(resp.content_type, "application/json", "{method} {path}");
        let message = resp.json()["message"].is_string();
        assert!(message, "{method} {path}: {}", resp.body);
    }
    // The admin token is no machine's either.
    let admin = [("Authorization", format!("Bearer {ADMIN_TOKEN}"))];
    let refused = send("GET", &url("/v1/heartbeat"), &admin, None);
    assert_eq!(refused.status, 401);
}
