//! Debian's own `crowdsec-custom-bouncer`, unmodified, pointed at the service
//! with a feed token: it runs a script for every decision it takes, and the
//! script's calls are what a firewall behind it would do.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::helpers::{fresh_state_dir, poll, send, Server, TestApp};

/// How long the bouncer has to act on a change, and how often it is looked at.
const WITHIN: Duration = Duration::from_secs(30);
const EVERY: Duration = Duration::from_millis(100);

const CUSTOM_BOUNCER: &str = "/usr/bin/crowdsec-custom-bouncer";

/// A bouncer process, stopped when the test ends however it ends.
struct Bouncer {
    child: Child,
    calls: PathBuf,
    log: PathBuf,
}

impl Bouncer {
    /// Starts the bouncer on `base` with `key`, pulling every second; its script
    /// writes one line per call: `add|del <value> <seconds> <scenario>`.
    fn start(base: &str, key: &str) -> Self {
        assert!(
            Path::new(CUSTOM_BOUNCER).exists(),
            "{CUSTOM_BOUNCER} is missing: make test-tools installs it"
        );
        let dir = fresh_state_dir();
        fs::create_dir_all(&dir).unwrap();
        let calls = dir.join("calls");
        let script = dir.join("firewall");
        fs::write(
            &script,
            format!(
                "#!/bin/sh\nprintf '%s %s %s %s\\n' \"$1\" \"$2\" \"$3\" \"$4\" >> '{}'\n",
                calls.display()
            ),
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .unwrap();
        fs::write(&calls, "").unwrap();
        let config = dir.join("bouncer.yaml");
        fs::write(
            &config,
            format!(
                "bin_path: {}\nfeed_via_stdin: false\ntotal_retries: 0\n\
                 scenarios_containing: []\nscenarios_not_containing: []\norigins: []\n\
                 piddir: {}\nupdate_frequency: 1s\ncache_retention_duration: 1s\n\
                 daemonize: false\nlog_mode: stdout\nlog_level: info\n\
                 api_url: {base}/\napi_key: {key}\n\
                 prometheus:\n  enabled: false\n  listen_addr: 127.0.0.1\n  listen_port: 60602\n",
                script.display(),
                dir.display(),
            ),
        )
        .unwrap();
        let log = dir.join("bouncer.log");
        let out = fs::File::create(&log).unwrap();
        let child = Command::new(CUSTOM_BOUNCER)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("the custom bouncer starts");
        Self { child, calls, log }
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(&self.calls)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until the script was called with a line starting `call`.
    fn called(&self, call: &str) -> String {
        let line = |calls: &Vec<String>| calls.iter().find(|l| l.starts_with(call)).cloned();
        match poll(
            WITHIN,
            EVERY,
            || self.calls(),
            |calls| line(calls).is_some(),
        ) {
            Ok(calls) => line(&calls).unwrap(),
            Err(calls) => panic!(
                "the bouncer was never called with {call:?}; calls: {calls:?}\nbouncer: {}",
                fs::read_to_string(&self.log).unwrap_or_default()
            ),
        }
    }

    /// Waits until the bouncer's log has `count` lines holding `text`.
    fn logged(&self, text: &str, count: usize) {
        let log = || fs::read_to_string(&self.log).unwrap_or_default();
        let enough = |log: &String| log.lines().filter(|l| l.contains(text)).count() >= count;
        if let Err(log) = poll(WITHIN, EVERY, log, enough) {
            panic!("no {count} × {text:?} in\n{log}");
        }
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn debians_custom_bouncer_enforces_the_greylist_and_follows_every_change() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add_with(&[("ip", "23.94.20.1"), ("comment", "port scan")]);
    app.add_with(&[("ip", "23.94.20.2"), ("ttl", "120")]);
    assert_eq!(server.edit_global_list(&["45.90.0.0/16"], &[]).status, 200);
    let (id, key) = app.feed_token(json!({ "scope": "all" }));
    let bouncer = Bouncer::start(&server.base, &key);
    // Its first pull (startup): everything, each with its duration and scenario.
    assert_eq!(
        bouncer.called("add 23.94.20.1 "),
        "add 23.94.20.1 604800 port scan"
    );
    let expiring = bouncer.called("add 23.94.20.2 ");
    let seconds: u64 = expiring.split(' ').nth(2).unwrap().parse().unwrap();
    assert!((100..=120).contains(&seconds), "{expiring}");
    assert_eq!(
        bouncer.called("add 45.90.0.0/16 "),
        "add 45.90.0.0/16 604800 greylist/global"
    );
    // Then what changes, as it changes.
    app.add("23.94.20.3");
    bouncer.called("add 23.94.20.3 ");
    app.remove("23.94.20.1");
    bouncer.called("del 23.94.20.1 ");
    server.advance(121);
    bouncer.called("del 23.94.20.2 ");
    assert_eq!(
        server
            .edit_global_list(&["45.91.0.0/16"], &["45.90.0.0/16"])
            .status,
        200
    );
    bouncer.called("del 45.90.0.0/16 ");
    bouncer.called("add 45.91.0.0/16 ");
    assert_eq!(server.edit_allow_list(&["23.94.20.3"], &[]).status, 200);
    bouncer.called("del 23.94.20.3 ");
    // Each value was added once and deleted once: nothing was announced twice.
    let calls = bouncer.calls();
    for value in ["23.94.20.1", "23.94.20.2", "23.94.20.3", "45.90.0.0/16"] {
        let count = |verb: &str| {
            calls
                .iter()
                .filter(|c| c.starts_with(&format!("{verb} {value} ")))
                .count()
        };
        assert_eq!((count("add"), count("del")), (1, 1), "{value}: {calls:?}");
    }
    // Three days on, what stands is deleted and added again: a fresh timeout.
    server.advance(3 * 86_400);
    let renewed = |calls: &[String]| {
        let at = |call: &str| calls.iter().rposition(|c| c.starts_with(call));
        let adds = calls
            .iter()
            .filter(|c| c.starts_with("add 45.91.0.0/16 "))
            .count();
        adds == 2
            && matches!((at("del 45.91.0.0/16 "), at("add 45.91.0.0/16 ")), (Some(d), Some(a)) if d < a)
    };
    if let Err(calls) = poll(WITHIN, EVERY, || bouncer.calls(), |calls| renewed(calls)) {
        panic!(
            "three days on, what stands is not deleted and added again for a fresh timeout: {calls:?}"
        );
    }
    // Three days on, the holder's access token has long expired: it logs in again.
    let token = server.login(&app.license_key).json()["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let app = TestApp { token, ..app };
    // Revoked, its pulls are refused: it keeps what it had and takes nothing new.
    let revoked = send(
        "DELETE",
        &format!("{}/api/feedTokens/{id}", server.base),
        &[("Authorization", format!("Bearer {}", app.token))],
        None,
    );
    assert_eq!(revoked.status, 204);
    bouncer.logged("access forbidden", 1);
    app.add("23.94.20.4");
    bouncer.logged("access forbidden", 3);
    assert!(
        !bouncer.calls().iter().any(|c| c.contains("23.94.20.4")),
        "{:?}",
        bouncer.calls()
    );
}
