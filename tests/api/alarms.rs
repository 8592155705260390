//! The runtime's own alarms, on the real clock: no test hook runs an alarm here.
//! Every other test runs alarms through a hook, on a server whose clock runs
//! hours ahead of the real one, where no alarm falls while it runs. Each test
//! here runs a server of its own and mostly waits, so they come early in the
//! suite's order (libtest starts tests by name): waiting beside the tests that
//! keep both cores busy, not after them.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{poll, Server, TestApp};
use crate::network::global;
use crate::reports::{lookup_until, report, report_own};

/// The runtime itself fires a holder's object's alarm: nothing here runs it, and
/// the report reaches its shard by the next whole second. The other tests run
/// alarms through a test hook, which calls the object's own code past the
/// runtime, on servers whose clock runs hours ahead of the real one, where no
/// alarm falls while a test runs: none of them sees the runtime fire one. This
/// one runs on a server of its own, put on the real clock.
#[test]
fn the_runtime_fires_a_holders_alarm_which_sends_its_reports_on() {
    let server = Server::own(&[]);
    server.on_the_real_clock();
    let app = TestApp::on(&server);
    report(&app, &[("ip", "81.10.0.1")]);
    // Past the next whole second, room for the runtime's own retry of an alarm.
    let within = Duration::from_secs(5);
    let reports = lookup_until(&server, "81.10.0.1", within, |reports| !reports.is_null());
    assert_eq!(
        reports["licenses"],
        json!(1),
        "the runtime fired no alarm that sent the report on: {reports}"
    );
}

/// No test hook runs an alarm here: the holders' objects send their reports, the
/// shards promote and let go, and the writer publishes, each by the alarm it set
/// itself, on the real clock. The consensus's window and delay are their least,
/// 60 s: promoted within seconds of the fourth report, gone 60 s after the first.
#[test]
fn the_shards_own_alarms_promote_and_let_go() {
    let server = Server::own(&[
        ("PROMOTION_WINDOW_SECONDS", "60"),
        ("DELIST_AFTER_SECONDS", "60"),
    ]);
    server.on_the_real_clock();
    let apps: Vec<TestApp> = (0..5).map(|_| TestApp::on(&server)).collect();
    // From before the first report: the promotion stands until the first of the
    // four falls out of the window, which on a busy machine can be seconds
    // before the fourth is answered; the service counts whole seconds.
    let reported = std::time::Instant::now();
    for app in &apps[..4] {
        assert_eq!(
            report_own(app, &[("ip", "82.7.0.1")]),
            "[82.7.0.1] has been reported"
        );
    }
    let every = Duration::from_millis(500);
    let promoted = poll(
        Duration::from_secs(30),
        every,
        || global(&apps[4], "82.7.0.1"),
        |&g| g,
    );
    assert_eq!(promoted, Ok(true), "promoted by the shard's own alarm");
    let decayed = poll(
        Duration::from_secs(120),
        every,
        || global(&apps[4], "82.7.0.1"),
        |&g| !g,
    );
    assert_eq!(decayed, Ok(false), "let go by the shard's own alarm");
    assert!(
        reported.elapsed() >= Duration::from_secs(59),
        "not before the reports stop counting: {:?}",
        reported.elapsed()
    );
}
