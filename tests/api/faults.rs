//! Server-side faults: a killed server loses no answered write, a broken
//! dependency answers a clear 5xx that is logged, never a panic, a list change
//! made while the directory fails gets its audit row once it answers, and a
//! panic in an object is logged and the object answers again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use serde_json::json;

use std::sync::Arc;

use crate::helpers::{
    configuration_file, poll, send, try_send, Encoding, Mode, Server, TestApp, INTERNAL_ERROR,
};

const BURST_LIMIT: usize = 400;

#[test]
fn sigkill_during_a_burst_of_adds_loses_no_answered_addition() {
    let server = Server::own(&[("DAILY_ADDITIONS", "400")]);
    let app = TestApp::on(&server);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let killing = AtomicBool::new(false);
    let answered = Mutex::new(Vec::new());
    let address = |n: usize| format!("52.52.{}.{}", n / 256, n % 256);

    thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= 300 {
                        break;
                    }
                    match app.try_call(
                        "/api/addIpToGreylist",
                        &address(n),
                        Encoding::Multipart,
                        Mode::Json,
                    ) {
                        Ok(resp) if resp.status == 200 => {
                            assert_eq!(
                                resp.result(),
                                format!("[{}] has been added to greylist", address(n))
                            );
                            answered.lock().unwrap().push(n);
                        }
                        // Once the kill is under way there may be no answer, or the dev proxy's 503 for
                        // a worker it just lost; before it, either is a fault of its own.
                        Ok(resp) => {
                            assert!(
                                killing.load(Ordering::SeqCst),
                                "before the kill: {} {}",
                                resp.status,
                                resp.body
                            );
                            break;
                        }
                        Err(why) => {
                            assert!(
                                killing.load(Ordering::SeqCst),
                                "no answer before the kill: {why}"
                            );
                            break;
                        }
                    }
                }
            });
        }
        // The kill comes once some forty adds are answered, or after 60 s whatever
        // came: the check below sees whether the burst was still under way.
        let answers = || answered.lock().unwrap().len();
        let _ = poll(
            Duration::from_secs(60),
            Duration::from_millis(5),
            answers,
            |n| *n >= 40,
        );
        killing.store(true, Ordering::SeqCst);
        server.kill();
        stop.store(true, Ordering::SeqCst);
    });
    let answered = answered.into_inner().unwrap();
    let attempted = next.load(Ordering::SeqCst).min(300);
    assert!(
        answered.len() < attempted,
        "the kill landed after the burst ended; nothing was tested"
    );

    let restarted = server.restart_from();
    let again = app.with_server(&restarted);
    for &n in &answered {
        assert_eq!(
            again.check(&address(n)),
            format!("[{}] is currently on your personal greylist", address(n))
        );
    }
    let listed = (0..attempted)
        .filter(|&n| {
            again
                .check(&address(n))
                .ends_with("is currently on your personal greylist")
        })
        .count();
    assert!(listed >= answered.len());
    // The day's counter equals what the list holds (every committed addition, answered or
    // cut off by the kill): exactly the rest of the limit can still be added.
    let more = (0..BURST_LIMIT)
        .filter(|n| {
            again
                .add(&format!("53.53.{}.{}", n / 256, n % 256))
                .ends_with("has been added to greylist")
        })
        .count();
    assert_eq!(
        listed + more,
        BURST_LIMIT,
        "counter and list disagree: {listed} listed, {more} more allowed"
    );
    restarted.kill();
}

/// `REQUEST_LOG=refusals`: an answer under 400 writes no line, a refusal and a
/// fault still do (the console's call is the largest cost of a plain answer).
#[test]
fn with_request_log_refusals_only_refused_and_failed_requests_write_their_line() {
    let server = Server::own(&[("REQUEST_LOG", "refusals")]);
    let app = TestApp::on(&server);
    let check = app.call(
        "/api/checkIpOnGreylist",
        "20.1.2.3",
        Encoding::Multipart,
        Mode::Json,
    );
    assert_eq!(check.status, 200);
    assert_eq!(app.add_as("not-a-token", "47.47.47.47").status, 401);
    let log = server.log_once(|line| line.contains("\"status\":401"));
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"operation\""))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("\"status\":401")),
        "the refusal's line: {log}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("\"status\":200")),
        "REQUEST_LOG=refusals wrote a line for the login or the check: {lines:?}"
    );
}

#[test]
fn a_broken_holder_object_answers_500_and_is_logged_with_license_and_operation() {
    // A deploy whose holder objects cannot be reached: the binding is missing. The
    // holder logged in before it went (a login asks the holder's object too).
    let healthy = Server::own(&[]);
    let app = TestApp::on(&healthy);
    healthy.kill();
    let server = healthy.restart_with_config(&configuration_file("without-HOLDERS", &["HOLDERS"]));
    let app = app.with_server(&server);
    assert_eq!(
        server.login(&app.license_key).status,
        500,
        "a login asks the holder's object"
    );
    let resp = app.call(
        "/api/addIpToGreylist",
        "54.54.54.54",
        Encoding::Multipart,
        Mode::Json,
    );
    assert_eq!(resp.status, 500);
    assert_eq!(resp.json(), json!({ "result": INTERNAL_ERROR }));
    assert_eq!(
        app.check("10.0.0.1"),
        "[10.0.0.1] is private",
        "answers that need no storage still work"
    );

    let add_failed = |l: &str| l.contains("\"status\":500") && l.contains("\"operation\":\"add\"");
    let log = server.log_once(add_failed);
    let line = log
        .lines()
        .find(|l| add_failed(l))
        .unwrap_or_else(|| panic!("no log line for the 500:\n{log}"));
    assert!(line.contains(&app.license), "{line}");
    assert!(
        line.contains("HOLDERS"),
        "the detail names the fault: {line}"
    );
    assert!(!log.contains("panicked"), "{log}");
    server.kill();
}

/// A server on the test configuration without the lines that mention `binding`,
/// as a deploy that forgot it would be.
fn server_without(binding: &str) -> Arc<Server> {
    Server::own_with_config(
        &[],
        &configuration_file(&format!("without-{binding}"), &[binding]),
    )
}

#[test]
fn a_missing_kv_namespace_answers_500_and_is_logged_with_license_and_operation() {
    let server = server_without("GLOBAL_LIST");
    let app = TestApp::on(&server);

    let resp = app.call(
        "/api/addIpToGreylist",
        "55.55.55.55",
        Encoding::Urlencoded,
        Mode::Plain,
    );
    assert_eq!((resp.status, resp.body.as_str()), (500, INTERNAL_ERROR));
    assert_eq!(
        app.check("10.0.0.1"),
        "[10.0.0.1] is private",
        "answers that need no storage still work"
    );

    let log = server.log_once(|line| line.contains("\"status\":500"));
    let line = log
        .lines()
        .find(|l| l.contains("\"status\":500"))
        .unwrap_or_else(|| panic!("no log line for the 500:\n{log}"));
    assert!(
        line.contains(&app.license)
            && line.contains("\"operation\":\"add\"")
            && line.contains("GLOBAL_LIST"),
        "{line}"
    );
    assert!(!log.contains("panicked"), "{log}");
    server.kill();
}

#[test]
fn a_storage_fault_of_the_lists_writer_is_a_logged_500_that_changes_nothing() {
    let server = Server::own(&[]);
    assert_eq!(server.edit_global_list(&["9.9.9.1"], &[]).status, 200);
    let hook = send(
        "POST",
        &format!("{}/__test/lists/fail-next-save", server.base),
        &[],
        Some(b""),
    );
    assert_eq!(hook.status, 200, "{}", hook.body);
    let failed = server.edit_global_list(&["9.9.9.2"], &[]);
    assert_eq!(
        (failed.status, failed.json()),
        (500, json!({ "message": INTERNAL_ERROR })),
        "a fault of ours, not a bad request"
    );
    let log = server.log_once(|line| line.contains("\"status\":500"));
    let line = log
        .lines()
        .find(|l| l.contains("\"status\":500"))
        .unwrap_or_else(|| panic!("no log line for the 500:\n{log}"));
    assert!(
        line.contains("\"operation\":\"edit_global_list\"") && line.contains("storage fault"),
        "{line}"
    );
    let export = server.export_list("global-list", None);
    assert!(
        export.body.contains("9.9.9.1\n") && !export.body.contains("9.9.9.2"),
        "the failed edit left the list as it was:\n{}",
        export.body
    );
    assert_eq!(
        server.edit_global_list(&["9.9.9.2"], &[]).json(),
        json!({ "added": 1, "removed": 0 }),
        "the next edit is saved"
    );
}

#[test]
fn a_change_saved_but_not_published_is_published_by_the_alarm_after_a_restart() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(server.edit_global_list(&["9.9.8.1"], &[]).status, 200);
    let hook = send(
        "POST",
        &format!("{}/__test/lists/fail-publications", server.base),
        &[],
        Some(b""),
    );
    assert_eq!(hook.status, 200, "{}", hook.body);
    let failed = server.edit_global_list(&["9.9.8.2"], &[]);
    assert_eq!(
        failed.status, 500,
        "KV failed before the manifest: {}",
        failed.body
    );
    assert_eq!(
        app.check("9.9.8.2"),
        "[9.9.8.2] is currently not on global greylist",
        "not published yet"
    );
    server.kill();
    let server = server.restart_from();
    let app = app.with_server(&server);
    let alarm = send(
        "POST",
        &format!("{}/__test/lists/alarm", server.base),
        &[],
        Some(b""),
    );
    assert_eq!(
        alarm.json(),
        json!({ "wasScheduled": true }),
        "an alarm stands for the saved change"
    );
    assert_eq!(
        app.check("9.9.8.2"),
        "[9.9.8.2] is on global greylist",
        "published by the alarm"
    );
    server.kill();
}

/// The operator's changes of the lists in the audit log, oldest first: action,
/// target and detail.
fn list_changes(server: &Server) -> Vec<(String, String, String)> {
    let resp = server.admin("GET", "/admin/audit?limit=100", None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let rows = resp.json()["entries"].as_array().unwrap().clone();
    rows.iter()
        .rev()
        .filter(|row| row["action"].as_str().unwrap().starts_with("list."))
        .map(|row| {
            let text = |field: &str| row[field].as_str().unwrap().to_owned();
            (text("action"), text("target"), text("detail"))
        })
        .collect()
}

fn lists_hook(server: &Server, path: &str, body: serde_json::Value) {
    let resp = send(
        "POST",
        &format!("{}/__test/lists/{path}", server.base),
        &[],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(resp.status, 200, "{path}: {}", resp.body);
}

#[test]
fn a_list_change_made_while_the_directory_fails_has_its_audit_row_once_it_answers_again() {
    let server = Server::own(&[]);
    lists_hook(&server, "fail-forwards", json!({ "failing": true }));
    assert_eq!(
        server.edit_global_list(&["9.9.7.1"], &[]).json(),
        json!({ "added": 1, "removed": 0 }),
        "the change is made, and answered"
    );
    let replaced = server.replace_list("allow-list", "9.9.6.0/24\n");
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let version = replaced.json()["version"].as_str().unwrap().to_owned();
    assert!(
        list_changes(&server).is_empty(),
        "the directory took no row yet"
    );
    lists_hook(&server, "alarm", json!({}));
    assert!(
        list_changes(&server).is_empty(),
        "nor while it keeps failing"
    );

    lists_hook(&server, "fail-forwards", json!({ "failing": false }));
    lists_hook(&server, "alarm", json!({}));
    let row = |action: &str, target: &str, detail: &str| {
        (action.to_owned(), target.to_owned(), detail.to_owned())
    };
    let both = [
        row("list.edited", "global list", "added 1, removed 0"),
        row(
            "list.replaced",
            "allow list",
            &format!("1 entries, added 1, removed 0, version {version}"),
        ),
    ];
    assert_eq!(list_changes(&server), both, "each change has its row, once");
    lists_hook(&server, "alarm", json!({}));
    assert_eq!(list_changes(&server), both, "and never twice");

    // A row the writer kept is sent by the instance after a restart.
    lists_hook(&server, "fail-forwards", json!({ "failing": true }));
    assert_eq!(server.edit_global_list(&[], &["9.9.7.1"]).status, 200);
    server.kill();
    let server = server.restart_from();
    lists_hook(&server, "alarm", json!({}));
    let mut all = both.to_vec();
    all.push(row("list.edited", "global list", "added 0, removed 1"));
    assert_eq!(list_changes(&server), all);
    server.kill();
}

/// A panic in a holder's object (a bug: nothing a client sends causes one) logs
/// its message and place, and the object answers its next call. The call that
/// panicked is never answered: under `panic = "abort"` the trap leaves its
/// promise unsettled, and its caller waits until the client gives up, so the
/// test does not wait for it.
#[test]
fn a_panic_in_an_object_is_logged_and_the_object_answers_again() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(
        app.add("56.56.56.56"),
        "[56.56.56.56] has been added to greylist"
    );

    let panic = format!("{}/__test/holders/{}/panic", server.base, app.license);
    thread::spawn(move || try_send("POST", &panic, &[], Some(b"")));
    let log = server.log_once(|line| line.contains("a panic the tests asked for"));
    assert!(
        log.contains("panicked at src/objects/holder/object.rs"),
        "the panic's message and place are logged:\n{log}"
    );
    // The new instance of the module starts with the test build's clock on the
    // real one: it is put back where the test had it.
    server.advance(0);

    assert_eq!(
        app.check("56.56.56.56"),
        "[56.56.56.56] is currently on your personal greylist"
    );
    assert_eq!(
        app.add("56.56.56.57"),
        "[56.56.56.57] has been added to greylist"
    );
    server.kill();
}
