//! Local state survives the server being killed.

use crate::helpers::{Server, TestApp};

#[test]
fn entries_and_licenses_survive_a_killed_server() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    assert_eq!(app.add("1.0.0.1"), "[1.0.0.1] has been added to greylist");
    server.kill();

    let restarted = server.restart_from();
    let again = app.with_server(&restarted);
    assert_eq!(
        again.check("1.0.0.1"),
        "[1.0.0.1] is currently on your personal greylist"
    );
    assert_eq!(
        restarted.login(&app.license_key).status,
        200,
        "the license survived too"
    );
    restarted.kill();
}
