//! What a request costs in the calls Cloudflare bills, counted by the test build's
//! meter (`/__test/meter`) on a server of its own, so no other test's calls are
//! counted: an answer that needs no storage makes no storage call, a check of
//! the holder's own list is one Durable Object request, and an add writes its
//! few rows, a bulk add as many per address and one object request in all.

use serde_json::{json, Value};

use crate::helpers::{send, Mode, Server, TestApp};

/// The counts since the runtime started, of the Worker and its objects.
fn meter(app: &TestApp) -> Value {
    let resp = send(
        "GET",
        &format!("{}/__test/meter?license={}", app.server.base, app.license),
        &[],
        None,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["counts"].clone()
}

/// What `work` cost, without what reading the meter itself costs (its call to
/// the holder's object).
pub(crate) fn spent(app: &TestApp, work: impl FnOnce()) -> Value {
    let first = meter(app);
    let overhead = difference(&meter(app), &first);
    assert_eq!(count(&overhead, "durableObjectRequests"), 1, "{overhead}");
    let before = meter(app);
    work();
    let after = meter(app);
    difference(&difference(&after, &before), &overhead)
}

fn difference(after: &Value, before: &Value) -> Value {
    let fields = after.as_object().unwrap().iter().map(|(name, value)| {
        let delta = value.as_i64().unwrap() - before[name].as_i64().unwrap();
        (name.clone(), Value::from(delta))
    });
    Value::Object(fields.collect())
}

pub(crate) fn count(spent: &Value, field: &str) -> i64 {
    spent[field].as_i64().unwrap()
}

#[test]
fn storage_free_answers_make_no_billable_call_and_a_check_makes_one() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    server.edit_global_list(&["57.58.0.0/16", "57.59.0.9"], &[]);
    server.edit_allow_list(&["57.60.0.0/16"], &[]);
    // Warm: the isolate holds the snapshots and the license's standing.
    assert_eq!(app.check("57.58.1.1"), "[57.58.1.1] is on global greylist");
    assert_eq!(
        app.check("57.60.1.1"),
        "[57.60.1.1] is on the global allow list, no action was taken"
    );
    for (ip, answer) in [
        ("not-an-ip", "[not-an-ip] is invalid"),
        ("10.1.2.3", "[10.1.2.3] is private"),
        (
            "57.60.1.1",
            "[57.60.1.1] is on the global allow list, no action was taken",
        ),
        ("57.58.1.1", "[57.58.1.1] is on global greylist"),
        ("57.59.0.9", "[57.59.0.9] is on global greylist"),
    ] {
        let spent = spent(&app, || {
            for _ in 0..5 {
                assert_eq!(app.check(ip), answer);
            }
        });
        for field in [
            "durableObjectRequests",
            "kvReads",
            "kvWrites",
            "kvLists",
            "rowsRead",
            "rowsWritten",
        ] {
            assert_eq!(
                count(&spent, field),
                0,
                "an answer that needs no storage spends nothing billable: {ip}: {field} in {spent}"
            );
        }
    }
    let add = spent(&app, || {
        assert_eq!(
            app.add("57.59.0.9"),
            "[57.59.0.9] is already on global greylist"
        );
    });
    assert_eq!(count(&add, "durableObjectRequests"), 0, "{add}");
    let check = spent(&app, || {
        for _ in 0..5 {
            assert_eq!(
                app.check("57.61.0.1"),
                "[57.61.0.1] is currently not on global greylist"
            );
        }
    });
    assert_eq!(count(&check, "durableObjectRequests"), 5, "{check}");
    assert_eq!(count(&check, "kvReads"), 0, "{check}");
    assert_eq!(count(&check, "rowsWritten"), 0, "{check}");
}

#[test]
fn only_a_holder_with_allow_list_entries_pays_an_object_call_for_what_the_global_list_answers() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    server.edit_global_list(&["57.62.0.0/16"], &[]);
    let allow = |route: &str, ip: &str| {
        let resp = app.form(&format!("/api/{route}"), &[("ip", ip)], Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.result()
    };
    let global = "[57.62.1.1] is on global greylist";
    assert_eq!(app.check("57.62.1.1"), global);
    let without = spent(&app, || assert_eq!(app.check("57.62.1.1"), global));
    assert_eq!(count(&without, "durableObjectRequests"), 0, "{without}");
    // An entry elsewhere: the license's record says so once the isolate's period is over.
    allow("addIpToAllowlist", "57.63.0.0/16");
    server.advance(61);
    assert_eq!(app.check("57.62.1.1"), global);
    let with = spent(&app, || {
        for _ in 0..5 {
            assert_eq!(app.check("57.62.1.1"), global);
        }
    });
    assert_eq!(
        count(&with, "durableObjectRequests"),
        5,
        "a holder with allow-list entries has its object weigh each check: {with}"
    );
    assert_eq!(
        count(&with, "rowsRead"),
        0,
        "the object holds its allow list: {with}"
    );
    assert_eq!(count(&with, "rowsWritten"), 0, "{with}");
    // Its last entry gone, the flag goes with it.
    allow("deleteIpFromAllowlist", "57.63.0.0/16");
    server.advance(61);
    assert_eq!(app.check("57.62.1.1"), global);
    let again = spent(&app, || assert_eq!(app.check("57.62.1.1"), global));
    assert_eq!(count(&again, "durableObjectRequests"), 0, "{again}");
}

/// An add writes the entry and its age index, the list's size, the day's counter,
/// the history event, its by-address index and the history's sequence: seven rows.
const ROWS_PER_ADD: i64 = 7;

#[test]
fn an_add_writes_seven_rows_and_a_bulk_add_as_many_per_address_in_one_object_request() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    // Warm: the first check has the writer publish the empty lists, and the isolate read them.
    assert_eq!(
        app.check("57.62.0.1"),
        "[57.62.0.1] is currently not on global greylist"
    );
    let add = spent(&app, || {
        assert_eq!(
            app.add("57.62.0.1"),
            "[57.62.0.1] has been added to greylist"
        );
    });
    assert_eq!(count(&add, "durableObjectRequests"), 1, "{add}");
    assert_eq!(
        count(&add, "rowsWritten"),
        ROWS_PER_ADD,
        "an add writes its seven rows and no more: {add}"
    );
    assert_eq!(count(&add, "kvWrites"), 0, "{add}");
    let again = spent(&app, || {
        assert_eq!(
            app.add("57.62.0.1"),
            "[57.62.0.1] is already on your greylist"
        );
    });
    assert_eq!(
        count(&again, "rowsWritten"),
        0,
        "an add that changes nothing writes no row: {again}"
    );
    let body: String = (0..100).map(|n| format!("57.63.0.{n}\n")).collect();
    let bulk = spent(&app, || {
        let resp = app.post(
            "/api/addIpsToGreylist",
            crate::helpers::Mode::Json,
            &[("Content-Type", "text/plain".to_owned())],
            body.as_bytes(),
        );
        assert_eq!(resp.json()["counts"]["added"], 100, "{}", resp.body);
    });
    assert_eq!(count(&bulk, "durableObjectRequests"), 1, "{bulk}");
    assert_eq!(count(&bulk, "rowsWritten"), 100 * ROWS_PER_ADD, "{bulk}");
}

/// An operator call with a request of the caller's own token.
fn operator_call(server: &Server, token: &str, method: &str, path: &str, body: &str) -> u16 {
    send(
        method,
        &format!("{}{path}", server.base),
        &[("Authorization", format!("Bearer {token}"))],
        Some(body.as_bytes()),
    )
    .status
}

#[test]
fn an_operator_key_costs_no_object_request_more_than_the_admin_token_and_a_list_edit_one_for_its_audit_row(
) {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let made = server.admin(
        "POST",
        "/admin/keys",
        Some(serde_json::json!({ "name": "deputy", "role": "admin" })),
    );
    let key = made.json()["key"].as_str().unwrap().to_owned();
    let admin = crate::helpers::ADMIN_TOKEN;
    let requests = |token: &str, method: &str, path: &str, body: &str, status: u16| {
        let spent = spent(&app, || {
            assert_eq!(operator_call(&server, token, method, path, body), status);
        });
        count(&spent, "durableObjectRequests")
    };
    // The status asks the writer and the directory.
    assert_eq!(requests(admin, "GET", "/admin/status", "", 200), 2);
    assert_eq!(
        requests(&key, "GET", "/admin/status", "", 200),
        2,
        "the key is checked against the keys in KV, not by the directory"
    );
    let edit = r#"{"add": ["57.64.0.1"], "remove": []}"#;
    assert_eq!(
        requests(admin, "POST", "/admin/global-list", edit, 200),
        2,
        "the writer's edit and its audit row"
    );
    let undo = r#"{"add": [], "remove": ["57.64.0.1"]}"#;
    assert_eq!(requests(&key, "POST", "/admin/global-list", undo, 200), 2);
    assert_eq!(
        requests("wrong", "GET", "/admin/status", "", 401),
        1,
        "the first refusal of a minute is one directory request, which records it"
    );
    for _ in 0..3 {
        assert_eq!(
            requests("wrong", "GET", "/admin/status", "", 401),
            0,
            "the rest of the minute's are counted in the isolate"
        );
    }
}

/// Adds the thousand addresses `nth` names to the holder's list, in one bulk request.
fn add_thousand(app: &TestApp, nth: impl Fn(usize) -> String) {
    let ips: Vec<String> = (0..1000).map(nth).collect();
    let body = json!({ "ips": ips }).to_string();
    let added = app.bulk(
        "/api/addIpsToGreylist",
        "application/json",
        &body,
        Mode::Json,
    );
    assert_eq!(added.status, 200, "{}", added.body);
}

/// A page of the history reads its page, not the history: its total is from the
/// first number kept to the last, two rows, where a count would read them all.
#[test]
fn a_history_page_reads_its_rows_not_the_whole_history() {
    let server = Server::own(&[("CACHE_SECONDS", "60")]);
    let app = TestApp::on(&server);
    for thousand in 0..2 {
        add_thousand(&app, |n| {
            format!("57.{}.{}.{}", 64 + thousand, n / 256, n % 256)
        });
    }
    let page = spent(&app, || {
        let resp = app.form("/api/greylistHistory", &[("limit", "10")], Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(resp.json()["result"], "2000 changes", "{}", resp.body);
    });
    assert_eq!(count(&page, "durableObjectRequests"), 1, "{page}");
    assert!(count(&page, "rowsRead") < 100, "a page of ten: {page}");
}

/// An allow-list entry over more of the holder's entries than the day's removals
/// left can take is refused having read no more of them than that, whatever the
/// range covers.
#[test]
fn an_allow_list_entry_refused_for_the_days_removals_reads_no_more_than_they_could_take() {
    let server = Server::own(&[("CACHE_SECONDS", "60"), ("DAILY_REMOVALS", "100")]);
    let app = TestApp::on(&server);
    for thousand in 0..2 {
        add_thousand(&app, |n| {
            format!("57.70.{}.{}", 4 * thousand + n / 256, n % 256)
        });
    }
    let refused = spent(&app, || {
        let resp = app.form(
            "/api/addIpToAllowlist",
            &[("ip", "57.70.0.0/16")],
            Mode::Json,
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(
            resp.result(),
            "Sorry, but you have reached the maximum limit"
        );
    });
    assert!(
        count(&refused, "rowsRead") < 500,
        "100 removals left, 2 000 covered: {refused}"
    );
}
