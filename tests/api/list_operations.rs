//! Every outcome of every operation, in both encodings and both response modes.

use crate::helpers::{unique_ip, Encoding, Mode, Server, TestApp};

const CHECK: &str = "/api/checkIpOnGreylist";
const ADD: &str = "/api/addIpToGreylist";
const REMOVE: &str = "/api/deleteIpFromGreylist";

#[test]
fn state_table_walk_in_json_mode() {
    let app = TestApp::new();
    let ip = "8.8.4.4";
    assert_eq!(
        app.check(ip),
        "[8.8.4.4] is currently not on global greylist"
    );
    assert_eq!(app.remove(ip), "[8.8.4.4] is not on greylist");
    assert_eq!(app.add(ip), "[8.8.4.4] has been added to greylist");
    assert_eq!(
        app.check(ip),
        "[8.8.4.4] is currently on your personal greylist"
    );
    assert_eq!(app.add(ip), "[8.8.4.4] is already on your greylist");
    assert_eq!(app.remove(ip), "[8.8.4.4] has been removed from greylist");
    assert_eq!(
        app.check(ip),
        "[8.8.4.4] is currently not on global greylist"
    );
}

#[test]
fn both_encodings_and_both_modes_give_the_same_messages() {
    let app = TestApp::new();
    for (n, encoding) in [Encoding::Multipart, Encoding::Urlencoded]
        .into_iter()
        .enumerate()
    {
        let ip = format!("9.9.9.{}", n + 1);
        let added = format!("[{ip}] has been added to greylist");

        let json = app.call(ADD, &ip, encoding, Mode::Json);
        assert_eq!(json.result(), added, "{encoding:?}");

        let plain = app.call(CHECK, &ip, encoding, Mode::Plain);
        assert_eq!(plain.status, 200);
        assert_eq!(plain.content_type, "text/plain; charset=utf-8");
        assert_eq!(
            plain.body,
            format!("[{ip}] is currently on your personal greylist")
        );

        let plain = app.call(REMOVE, &ip, encoding, Mode::Plain);
        assert_eq!(plain.body, format!("[{ip}] has been removed from greylist"));
    }
}

#[test]
fn other_result_mode_values_answer_in_plain_text() {
    let app = TestApp::new();
    let (content_type, body) =
        crate::helpers::form_body(Encoding::Urlencoded, &[("ip", "1.1.1.1")]);
    let resp = app.post(
        &format!("{CHECK}?result_mode=xml"),
        Mode::Plain,
        &[("Content-Type", content_type)],
        &body,
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.content_type, "text/plain; charset=utf-8");
    assert_eq!(resp.body, "[1.1.1.1] is currently not on global greylist");
}

#[test]
fn every_alias_path_reaches_its_operation() {
    let app = TestApp::new();
    let ip = "64.6.64.6";
    assert_eq!(
        app.call(
            "/api/addIpToChallengeList",
            ip,
            Encoding::Multipart,
            Mode::Json
        )
        .result(),
        "[64.6.64.6] has been added to greylist"
    );
    assert_eq!(
        app.call(
            "/api/checkIpOnChallengeList",
            ip,
            Encoding::Multipart,
            Mode::Json
        )
        .result(),
        "[64.6.64.6] is currently on your personal greylist"
    );
    for remove in [
        "/api/deleteIpToGreylist",
        "/api/deleteIpFromChallengeList",
        REMOVE,
    ] {
        app.add(ip);
        assert_eq!(
            app.call(remove, ip, Encoding::Urlencoded, Mode::Json)
                .result(),
            "[64.6.64.6] has been removed from greylist",
            "{remove}"
        );
    }
}

#[test]
fn invalid_and_private_addresses_are_refused_by_every_operation() {
    let app = TestApp::new();
    for path in [CHECK, ADD, REMOVE] {
        for encoding in [Encoding::Multipart, Encoding::Urlencoded] {
            assert_eq!(
                app.call(path, "1.2.3", encoding, Mode::Json).result(),
                "[1.2.3] is invalid"
            );
            assert_eq!(
                app.call(path, "01.2.3.4", encoding, Mode::Json).result(),
                "[01.2.3.4] is invalid"
            );
            assert_eq!(
                app.call(path, "  not an ip ", encoding, Mode::Json)
                    .result(),
                "[not an ip] is invalid"
            );
            assert_eq!(
                app.call(path, "", encoding, Mode::Json).result(),
                "[] is invalid"
            );
            assert_eq!(
                app.call(path, "192.168.1.1", encoding, Mode::Json).result(),
                "[192.168.1.1] is private"
            );
            assert_eq!(
                app.call(path, " 127.0.0.1\t", encoding, Mode::Plain).body,
                "[127.0.0.1] is private"
            );
        }
        let missing = app.post(
            path,
            Mode::Json,
            &[("Content-Type", "application/x-www-form-urlencoded".into())],
            b"other=1",
        );
        assert_eq!(missing.result(), "[] is invalid");
    }
    assert_eq!(app.check("10.0.0.1"), "[10.0.0.1] is private");
    assert_eq!(app.add("10.0.0.1"), "[10.0.0.1] is private");
}

#[test]
fn global_list_wins_over_the_personal_list() {
    let app = TestApp::new();
    let server = Server::shared();
    let ip = unique_ip();
    let _cleanup = server.taken_off_at_end("global-list", &[&ip]);
    assert_eq!(app.add(&ip), format!("[{ip}] has been added to greylist"));
    assert_eq!(server.edit_global_list(&[&ip], &[]).json()["added"], 1);

    assert_eq!(app.check(&ip), format!("[{ip}] is on global greylist"));
    assert_eq!(
        app.add(&ip),
        format!("[{ip}] is already on global greylist")
    );
    assert_eq!(
        app.remove(&ip),
        format!("[{ip}] has been removed from greylist"),
        "remove looks at the personal list only"
    );
    assert_eq!(app.remove(&ip), format!("[{ip}] is not on greylist"));

    let other = TestApp::new();
    assert_eq!(
        other.check(&ip),
        format!("[{ip}] is on global greylist"),
        "the global list is everyone's"
    );
    assert_eq!(
        other.add(&ip),
        format!("[{ip}] is already on global greylist")
    );
    assert_eq!(other.check(&ip), format!("[{ip}] is on global greylist"));

    server.edit_global_list(&[], &[&ip]);
    assert_eq!(
        other.check(&ip),
        format!("[{ip}] is currently not on global greylist"),
        "adding a global address changed nothing"
    );
}

#[test]
fn allow_listed_addresses_are_never_acted_on() {
    let app = TestApp::new();
    let server = Server::shared();
    let _cleanup = server.taken_off_at_end("allow-list", &["104.100.0.0/16"]);
    assert_eq!(server.edit_allow_list(&["104.100.0.0/16"], &[]).status, 200);
    for ip in ["104.100.0.0", "104.100.255.255"] {
        let expected = format!("[{ip}] is on the global allow list, no action was taken");
        assert_eq!(app.check(ip), expected);
        assert_eq!(app.add(ip), expected);
        assert_eq!(app.remove(ip), expected);
    }
    assert_eq!(
        app.add("104.101.0.0"),
        "[104.101.0.0] has been added to greylist",
        "just outside the range"
    );
    server.edit_allow_list(&[], &["104.100.0.0/16"]);
    assert_eq!(
        app.check("104.100.0.1"),
        "[104.100.0.1] is currently not on global greylist",
        "the add above changed nothing"
    );
}

#[test]
fn two_holders_never_see_each_others_lists() {
    let (alice, bob) = (TestApp::new(), TestApp::new());
    let ip = "4.4.4.4";
    assert_eq!(alice.add(ip), "[4.4.4.4] has been added to greylist");
    assert_eq!(
        bob.check(ip),
        "[4.4.4.4] is currently not on global greylist"
    );
    assert_eq!(bob.remove(ip), "[4.4.4.4] is not on greylist");
    assert_eq!(bob.add(ip), "[4.4.4.4] has been added to greylist");
    assert_eq!(bob.remove(ip), "[4.4.4.4] has been removed from greylist");
    assert_eq!(
        alice.check(ip),
        "[4.4.4.4] is currently on your personal greylist"
    );
}
