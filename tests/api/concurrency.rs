//! Concurrent calls to one holder: the Durable Object serializes each
//! read-check-write, so "exactly once" and the limits hold under races.

use std::thread;

use crate::helpers::{Server, TestApp};

const LIMIT: &str = "Sorry, but you have reached the maximum limit";

/// Runs `calls` at once, each on its own thread, and returns their answers.
fn all_at_once(app: &TestApp, calls: Vec<(&'static str, String)>) -> Vec<String> {
    thread::scope(|scope| {
        let handles: Vec<_> = calls
            .into_iter()
            .map(|(op, ip)| {
                scope.spawn(move || {
                    if op == "add" {
                        app.add(&ip)
                    } else {
                        app.remove(&ip)
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn count(answers: &[String], text: &str) -> usize {
    answers.iter().filter(|a| a.as_str() == text).count()
}

#[test]
fn sixty_four_concurrent_adds_of_one_address_add_it_exactly_once() {
    let app = TestApp::new();
    let answers = all_at_once(&app, vec![("add", "48.48.48.48".to_owned()); 64]);
    assert_eq!(
        count(&answers, "[48.48.48.48] has been added to greylist"),
        1,
        "{answers:?}"
    );
    assert_eq!(
        count(&answers, "[48.48.48.48] is already on your greylist"),
        63,
        "{answers:?}"
    );
}

#[test]
fn sixty_four_concurrent_removes_of_one_address_remove_it_exactly_once() {
    let app = TestApp::new();
    app.add("49.49.49.49");
    let answers = all_at_once(&app, vec![("remove", "49.49.49.49".to_owned()); 64]);
    assert_eq!(
        count(&answers, "[49.49.49.49] has been removed from greylist"),
        1,
        "{answers:?}"
    );
    assert_eq!(
        count(&answers, "[49.49.49.49] is not on greylist"),
        63,
        "{answers:?}"
    );
}

#[test]
fn concurrent_adds_across_the_limit_add_exactly_the_limit() {
    let app = TestApp::on(&Server::limited());
    let ips: Vec<String> = (0..64).map(|n| format!("50.50.0.{n}")).collect();
    let answers = all_at_once(&app, ips.iter().map(|ip| ("add", ip.clone())).collect());
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.ends_with("has been added to greylist"))
            .count(),
        3,
        "adds at once take exactly the day's limit, no more: {answers:?}"
    );
    assert_eq!(count(&answers, LIMIT), 61);
    let listed = ips
        .iter()
        .filter(|ip| {
            app.check(ip)
                .ends_with("is currently on your personal greylist")
        })
        .count();
    assert_eq!(
        listed, 3,
        "the list holds exactly what was answered as added"
    );
    assert_eq!(
        app.add("50.50.1.1"),
        LIMIT,
        "and the counter is at the limit"
    );
}

#[test]
fn concurrent_removes_across_the_limit_remove_exactly_the_limit() {
    let app = TestApp::on(&Server::limited());
    let ips = ["51.51.0.1", "51.51.0.2", "51.51.0.3"];
    for ip in ips {
        app.add(ip);
    }
    let calls = (0..64).map(|n| ("remove", ips[n % 3].to_owned())).collect();
    let answers = all_at_once(&app, calls);
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.ends_with("has been removed from greylist"))
            .count(),
        2,
        "{answers:?}"
    );
    assert!(answers
        .iter()
        .all(|a| a.ends_with("has been removed from greylist")
            || a.ends_with("is not on greylist")
            || a == LIMIT));
    let listed = ips
        .iter()
        .filter(|ip| {
            app.check(ip)
                .ends_with("is currently on your personal greylist")
        })
        .count();
    assert_eq!(listed, 1, "the list lost exactly the two answered removals");
}
