//! Daily limits, on a server configured with 3 additions and 2 removals a day.

use serde_json::json;

use crate::helpers::{send, Server, TestApp, LIMIT};

#[test]
fn additions_stop_at_the_daily_limit_without_changing_the_list() {
    let app = TestApp::on(&Server::limited());
    for n in 1..=3 {
        assert_eq!(
            app.add(&format!("5.5.5.{n}")),
            format!("[5.5.5.{n}] has been added to greylist")
        );
    }
    assert_eq!(
        app.add("5.5.5.4"),
        LIMIT,
        "an add past the day's limit is refused"
    );
    assert_eq!(
        app.check("5.5.5.4"),
        "[5.5.5.4] is currently not on global greylist"
    );
    assert_eq!(
        app.add("5.5.5.1"),
        "[5.5.5.1] is already on your greylist",
        "an add that changes nothing is answered"
    );
    assert_eq!(
        app.check("5.5.5.1"),
        "[5.5.5.1] is currently on your personal greylist",
        "check does not count"
    );
    assert_eq!(
        app.remove("5.5.5.1"),
        "[5.5.5.1] has been removed from greylist",
        "removals count separately"
    );
    assert_eq!(
        app.add("5.5.5.1"),
        LIMIT,
        "a removal does not give an addition back"
    );
}

#[test]
fn removals_stop_at_the_daily_limit_without_changing_the_list() {
    let app = TestApp::on(&Server::limited());
    for n in 1..=3 {
        app.add(&format!("6.6.6.{n}"));
    }
    assert_eq!(
        app.remove("6.6.6.1"),
        "[6.6.6.1] has been removed from greylist"
    );
    assert_eq!(
        app.remove("6.6.6.2"),
        "[6.6.6.2] has been removed from greylist"
    );
    assert_eq!(app.remove("6.6.6.3"), LIMIT);
    assert_eq!(
        app.check("6.6.6.3"),
        "[6.6.6.3] is currently on your personal greylist"
    );
    assert_eq!(
        app.remove("6.6.6.9"),
        "[6.6.6.9] is not on greylist",
        "a remove that changes nothing is answered"
    );
}

#[test]
fn limits_are_counted_per_license_holder() {
    let (first, second) = (
        TestApp::on(&Server::limited()),
        TestApp::on(&Server::limited()),
    );
    for n in 1..=3 {
        first.add(&format!("7.7.7.{n}"));
    }
    assert_eq!(first.add("7.7.7.4"), LIMIT);
    assert_eq!(
        second.add("7.7.7.4"),
        "[7.7.7.4] has been added to greylist"
    );
}

#[test]
fn a_script_looping_on_a_used_up_quota_leaves_one_history_row_a_day() {
    let app = TestApp::on(&Server::limited());
    for n in 1..=3 {
        app.add(&format!("7.8.9.{n}"));
    }
    app.remove("7.8.9.1");
    app.remove("7.8.9.2");
    for n in 0..25 {
        assert_eq!(app.add(&format!("7.8.10.{n}")), LIMIT);
        assert_eq!(app.remove("7.8.9.3"), LIMIT);
    }
    let history = app.history();
    let refusals: Vec<&str> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["change"] == "limit_refused")
        .map(|e| e["ip"].as_str().unwrap())
        .collect();
    assert_eq!(
        refusals,
        ["7.8.10.0"],
        "the day's first refusal only: {history}"
    );
    assert_eq!(history["result"], "6 changes");
}

#[test]
fn the_quota_route_says_what_the_day_has_used_and_left() {
    let app = TestApp::on(&Server::limited());
    let quota = |app: &TestApp| {
        let resp = app.get("/api/quota");
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    };
    let fresh = quota(&app);
    assert_eq!(
        (fresh["additions"].clone(), fresh["removals"].clone()),
        (
            json!({ "limit": 3, "used": 0, "left": 3 }),
            json!({ "limit": 2, "used": 0, "left": 2 })
        )
    );
    let seconds = fresh["resetsInSeconds"].as_u64().unwrap();
    assert!(
        (1..=86_400).contains(&seconds)
            && fresh["resetsAt"].as_str().unwrap().ends_with("T00:00:00Z"),
        "{fresh}"
    );

    for n in 1..=3 {
        app.add(&format!("7.9.9.{n}"));
    }
    app.add("7.9.9.4");
    app.remove("7.9.9.1");
    let used = quota(&app);
    assert_eq!(
        used["additions"],
        json!({ "limit": 3, "used": 3, "left": 0 }),
        "{used}"
    );
    assert_eq!(
        used["removals"],
        json!({ "limit": 2, "used": 1, "left": 1 })
    );
    assert_eq!(used["refused"], 1);

    let refused = send(
        "GET",
        &format!("{}/api/quota", app.server.base),
        &[("Authorization", "Bearer nope".to_owned())],
        None,
    );
    assert_eq!(refused.status, 401);
}

#[test]
fn the_daily_counters_start_again_at_midnight_utc_and_not_before() {
    // A token that outlives the hours the clock is moved.
    let server = Server::own(&[
        ("DAILY_ADDITIONS", "3"),
        ("DAILY_REMOVALS", "2"),
        ("TOKEN_LIFETIME_SECONDS", "2592000"),
    ]);
    let app = TestApp::on(&server);
    for n in 1..=3 {
        app.add(&format!("5.6.7.{n}"));
    }
    assert_eq!(app.add("5.6.7.4"), LIMIT);
    let to_midnight = 86_400 - server.now() % 86_400;
    // A few seconds before: room for a slow machine between reading the clock and asking.
    server.advance(to_midnight - 5);
    assert_eq!(app.add("5.6.7.4"), LIMIT, "still the same UTC day");
    server.advance(5);
    assert_eq!(
        app.add("5.6.7.4"),
        "[5.6.7.4] has been added to greylist",
        "a new UTC day starts the daily counters again"
    );
    let quota = app.get("/api/quota").json();
    assert_eq!(
        quota["additions"],
        json!({ "limit": 3, "used": 1, "left": 2 }),
        "{quota}"
    );
    assert!(
        quota["resetsInSeconds"].as_u64().unwrap() > 86_000,
        "{quota}"
    );
}
