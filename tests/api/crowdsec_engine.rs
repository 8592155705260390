//! Debian's own `crowdsec` 1.4.6, its engine alone (`crowdsec -no-api`),
//! offline with the hub its package ships, pointed at the service with a
//! machine made through `POST /api/machines` and nothing else: eight failed
//! SSH logins written to the log it reads reach the service as a report and as
//! an entry on the holder's greylist that expires after the machine's ttl;
//! with its simulation on, its alert changes nothing; once the machine is
//! revoked, the engine's next login is refused. Its files come from the
//! package, which `make test-tools` unpacks into its tools folder (installing
//! it fails offline); the attackers are in 87.0.0.0/8, which no other test uses.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use greylist::domain::time::UnixTime;
use serde_json::{json, Value};

use crate::helpers::{fresh_state_dir, poll, send, Resp, Server, TestApp};

/// How long the engine has to act, and how often what it did is looked at.
const WITHIN: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(250);

/// The package the Makefile unpacks (`CROWDSEC_VERSION`), under its tools folder.
const PACKAGE: &str = "crowdsec-1.4.6-6~deb12u1+b1";

/// Where `make test-tools` unpacked the package: `CROWDSEC_DIR` as the
/// Makefile passes it, or the folder it unpacks it to by default.
fn package() -> PathBuf {
    let dir = std::env::var_os("CROWDSEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_default();
            Path::new(&home).join(".cache/greylist-tools").join(PACKAGE)
        });
    assert!(
        dir.join("usr/bin/crowdsec").exists(),
        "{}: no crowdsec there; make test-tools unpacks it",
        dir.display()
    );
    dir
}

/// The parsers and scenario an sshd log needs, as `cscli` installs them: each
/// a link from the configuration folder into the hub.
const INSTALLED: [(&str, &str); 4] = [
    ("parsers/s00-raw", "syslog-logs"),
    ("parsers/s01-parse", "sshd-logs"),
    ("parsers/s02-enrich", "dateparse-enrich"),
    ("scenarios", "ssh-bf"),
];

/// An engine of the test's own, in a folder of its own, stopped when it goes.
struct Engine {
    dir: PathBuf,
    child: Option<Child>,
}

impl Engine {
    /// The package's configuration, hub and data copied into a folder of the
    /// engine's own, its paths pointed there (no daemon, the log on standard
    /// output, no Prometheus), the sshd parsers and scenario installed, and the
    /// machine's credentials file.
    fn prepare(base: &str, machine_id: &str, password: &str) -> Self {
        let package = package();
        let state = fresh_state_dir();
        let dir = state.join("crowdsec");
        fs::create_dir_all(dir.join("data")).unwrap();
        let copy = |from: PathBuf, to: &Path| {
            let copied = Command::new("cp")
                .arg("-R")
                .arg(&from)
                .arg(to)
                .output()
                .unwrap();
            assert!(
                copied.status.success(),
                "copying {}: {}",
                from.display(),
                String::from_utf8_lossy(&copied.stderr)
            );
        };
        copy(package.join("etc/crowdsec/."), &dir);
        copy(package.join("usr/share/crowdsec/hub"), &dir);
        copy(package.join("usr/share/crowdsec/data/."), &dir.join("data"));
        let folder = format!("{}/", dir.display());
        let shipped = fs::read_to_string(dir.join("config.yaml")).unwrap();
        let config = shipped
            .replace("/etc/crowdsec/", &folder)
            .replace("/var/lib/crowdsec/data/", &format!("{folder}data/"))
            .replace("/var/lib/crowdsec/hub/", &format!("{folder}hub/"))
            .replace("/usr/lib/crowdsec/plugins/", &format!("{folder}plugins/"))
            .replace("log_dir: /var/log/", &format!("log_dir: {folder}"))
            .replace("daemonize: true", "daemonize: false")
            .replace("log_media: file", "log_media: stdout")
            .replace("  enabled: true", "  enabled: false");
        fs::write(dir.join("config.yaml"), config).unwrap();
        for (kind, name) in INSTALLED {
            let (installed, hub) = (dir.join(kind), dir.join("hub").join(kind));
            fs::create_dir_all(&installed).unwrap();
            let file = format!("{name}.yaml");
            symlink(hub.join("crowdsecurity").join(&file), installed.join(&file)).unwrap();
        }
        fs::write(
            dir.join("local_api_credentials.yaml"),
            format!("url: {base}/\nlogin: {machine_id}\npassword: {password}\n"),
        )
        .unwrap();
        Self { dir, child: None }
    }

    /// Starts the engine as an agent only, reading `log` (a file of its
    /// folder), with its scenarios simulated or not.
    fn start(&mut self, log: &str, simulation: bool) {
        let log = self.dir.join(log);
        File::create(&log).unwrap();
        let log = log.display();
        fs::write(
            self.dir.join("acquis.yaml"),
            format!("filenames:\n  - {log}\nlabels:\n  type: syslog\n"),
        )
        .unwrap();
        let simulation = if simulation { "on" } else { "off" };
        fs::write(
            self.dir.join("simulation.yaml"),
            format!("simulation: {simulation}\n"),
        )
        .unwrap();
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("crowdsec.log"))
            .unwrap();
        let child = Command::new(package().join("usr/bin/crowdsec"))
            .arg("-c")
            .arg(self.dir.join("config.yaml"))
            .arg("-no-api")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("crowdsec starts");
        self.child = Some(child);
    }

    /// Kills the engine this test started, by its process id.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `times` failed logins of root from `ip`, now, as sshd logs them through syslog.
    fn fail(&self, log: &str, ip: &str, times: u32) {
        // As syslog writes it, in the local time zone and English month names.
        let date = Command::new("date")
            .arg("+%b %d %H:%M:%S")
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let date = String::from_utf8(date.stdout).unwrap();
        let lines: String = (0..times)
            .map(|n| {
                format!(
                    "{} host sshd[{}]: Failed password for root from {ip} port {} ssh2\n",
                    date.trim(),
                    4000 + n,
                    50000 + n
                )
            })
            .collect();
        OpenOptions::new()
            .append(true)
            .open(self.dir.join(log))
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("crowdsec.log")).unwrap_or_default()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
    }
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

/// `app`'s machine `id` once `until` holds of it, within 60 s.
fn machine_once(
    app: &TestApp,
    engine: &Engine,
    id: &str,
    what: &str,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let machine = || {
        let listed = holder_call(app, "GET", "/api/machines", None).json();
        listed["machines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|machine| machine["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    poll(WITHIN, EVERY, machine, until).unwrap_or_else(|machine| {
        panic!(
            "{what}: the machine is {machine}\ncrowdsec:\n{}",
            engine.log()
        )
    })
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

/// Writes eight failed logins from `ip` to `log`, and again every five
/// seconds, until `done` holds or a minute has passed: the engine reads its log
/// from the end once its acquisition has started, which its login does not
/// wait for, and a bucket that overflowed holds the address a minute, so a
/// batch written too early is made up for and one too many changes nothing.
fn attack_until(engine: &Engine, (log, ip): (&str, &str), what: &str, done: impl Fn() -> bool) {
    let mut next = Instant::now();
    let attacked = || {
        if done() {
            return true;
        }
        if Instant::now() >= next {
            engine.fail(log, ip, 8);
            next = Instant::now() + Duration::from_secs(5);
        }
        false
    };
    if poll(WITHIN, EVERY, attacked, |done| *done).is_err() {
        panic!("{what}\ncrowdsec:\n{}", engine.log());
    }
}

/// What `app`'s machine `id` has sent, as its holder's list of machines counts it.
fn alerts_of(app: &TestApp, id: &str) -> u64 {
    let listed = holder_call(app, "GET", "/api/machines", None).json();
    let machines = listed["machines"].as_array().cloned().unwrap_or_default();
    let machine = machines.iter().find(|machine| machine["id"] == id);
    machine.map_or(0, |machine| machine["counts"]["alerts"].as_u64().unwrap())
}

/// The operator's lookup of `ip`'s reports, once the holder's object sent what it kept.
fn reports_of(app: &TestApp, ip: &str) -> Value {
    let server = &app.server;
    server.run_holder_alarm(&app.license);
    let resp = server.admin("GET", &format!("/admin/lookup?ip={ip}"), None);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["reports"].clone()
}

/// How many of the server's log lines are of `operation` with `outcome`.
fn logged(server: &Server, operation: &str, outcome: &str) -> usize {
    let (operation, outcome) = (
        format!("\"operation\":\"{operation}\""),
        format!("\"outcome\":\"{outcome}\""),
    );
    server
        .log()
        .lines()
        .filter(|line| line.contains(&operation) && line.contains(&outcome))
        .count()
}

/// Waits until the server has logged more than `before` lines of `operation`
/// with `outcome`, within 60 s.
fn logged_more(server: &Server, engine: &Engine, call: (&str, &str), before: usize) {
    let count = || logged(server, call.0, call.1);
    if poll(WITHIN, EVERY, count, |count| *count > before).is_err() {
        panic!(
            "no more {call:?} than {before}\ncrowdsec:\n{}",
            engine.log()
        );
    }
}

#[test]
fn debians_crowdsec_engine_reports_and_greylists_what_it_detects() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    let named = json!({ "name": "ssh" });
    let made = holder_call(&app, "POST", "/api/machines", Some(named));
    assert_eq!(made.status, 201, "{}", made.body);
    let made = made.json();
    let id = made["id"].as_str().unwrap();
    let path = format!("/api/machines/{id}");
    let shorter = holder_call(&app, "PATCH", &path, Some(json!({ "ttl": 7200 })));
    assert_eq!(shorter.status, 200, "{}", shorter.body);
    let mut engine = Engine::prepare(
        &server.base,
        made["machineId"].as_str().unwrap(),
        made["password"].as_str().unwrap(),
    );
    // It logs in at its start, naming the scenario it runs.
    engine.start("auth.log", false);
    let logged_in = machine_once(&app, &engine, id, "the engine's login", |machine| {
        machine["lastLoginAt"].is_string()
    });
    assert_eq!(logged_in["scenarios"], json!(["crowdsecurity/ssh-bf"]));
    // Eight failed logins: a report, and an entry for the machine's ttl.
    let listed = || entry(&app, "87.1.0.1").is_some();
    let first = ("auth.log", "87.1.0.1");
    attack_until(&engine, first, "87.1.0.1 never listed", listed);
    let listed = entry(&app, "87.1.0.1").unwrap();
    assert_eq!(listed["comment"], "crowdsecurity/ssh-bf");
    let at = |field: &str| UnixTime::parse_rfc3339(listed[field].as_str().unwrap()).unwrap();
    assert_eq!(at("expiresAt").0 - at("addedAt").0, 7200, "{listed}");
    let reports = reports_of(&app, "87.1.0.1");
    assert_eq!(reports["licenses"], 1, "{reports}");
    let categories = reports["reporters"][0]["categories"].clone();
    assert_eq!(categories, json!(["ssh", "brute-force"]));
    let counted = machine_once(&app, &engine, id, "the alert counted", |machine| {
        machine["counts"]["added"] == 1
    });
    assert!(counted["lastAlertAt"].is_string(), "{counted}");
    // With its simulation on, its alert is acknowledged and changes nothing.
    let logins = logged(&server, "machine_login", "ok");
    engine.stop();
    engine.start("auth2.log", true);
    logged_more(&server, &engine, ("machine_login", "ok"), logins);
    let before = alerts_of(&app, id);
    let sent = || alerts_of(&app, id) > before;
    let second = ("auth2.log", "87.1.0.2");
    attack_until(&engine, second, "no simulated alert", sent);
    let simulated = machine_once(&app, &engine, id, "the simulated alert", |_| true);
    let counts = &simulated["counts"];
    let (alerts, ignored) = (counts["alerts"].as_u64(), counts["ignored"].as_u64());
    assert_eq!(ignored, alerts.map(|alerts| alerts - before), "{simulated}");
    assert_eq!(entry(&app, "87.1.0.2"), None);
    let reports = reports_of(&app, "87.1.0.2");
    assert!(reports.is_null() || reports["licenses"] == 0, "{reports}");
    // Revoked: its token is refused, and so is the login it tries again with.
    let refusals = logged(&server, "machine_login", "machine_login_refused");
    assert_eq!(holder_call(&app, "DELETE", &path, None).status, 204);
    let refused = || logged(&server, "machine_login", "machine_login_refused") > refusals;
    let third = ("auth2.log", "87.1.0.3");
    attack_until(&engine, third, "no refused login", refused);
    assert_eq!(entry(&app, "87.1.0.3"), None);
}
