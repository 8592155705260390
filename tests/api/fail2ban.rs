//! `contrib/fail2ban` with Debian's own fail2ban 1.0.2: a jail of the test's own
//! reads a log the test writes, and after four failed logins its greylist action
//! reports the address and adds it to the holder's list with the jail's name as
//! the comment; the unban removes an entry the ban added without a ttl and
//! leaves one with a ttl to expire by itself. fail2ban runs as root from a copy
//! of its configuration in a folder of the test's own (its own socket, pid
//! file, log and database); the action only calls the service, so nothing
//! touches the host's firewall. The banned addresses are in 85.0.0.0/8, which
//! no other test uses.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use greylist::domain::time::UnixTime;
use serde_json::{json, Value};

use crate::helpers::{fresh_state_dir, poll, Server, TestApp};

/// How long fail2ban and the service have to act, and how often that is looked at.
const WITHIN: Duration = Duration::from_secs(30);
const EVERY: Duration = Duration::from_millis(200);

const FAIL2BAN_SERVER: &str = "/usr/bin/fail2ban-server";
const FAIL2BAN_CLIENT: &str = "/usr/bin/fail2ban-client";

/// A fail2ban server of the test's own with one jail, stopped when it goes.
struct Fail2ban {
    dir: PathBuf,
    jail: String,
}

impl Fail2ban {
    /// fail2ban with one jail, `jail`: the sshd filter on a log of its own,
    /// four failures in ten minutes, bans of `bantime` seconds, and the
    /// repository's greylist action and script with `app`'s license key.
    fn start(app: &TestApp, jail: &str, bantime: i64) -> Self {
        assert!(
            Path::new(FAIL2BAN_SERVER).exists(),
            "{FAIL2BAN_SERVER} is missing: make test-tools installs it"
        );
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let state = fresh_state_dir();
        fs::create_dir_all(&state).unwrap();
        let dir = state.join("fail2ban");
        let copied = Command::new("cp")
            .arg("-R")
            .arg("/etc/fail2ban")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            copied.status.success(),
            "copying /etc/fail2ban: {}",
            String::from_utf8_lossy(&copied.stderr)
        );
        // This test's jail alone: Debian's jail.d/defaults-debian.conf (sshd on
        // the journal) and any jail the host adds there are left out.
        let _ = fs::remove_dir_all(dir.join("jail.d"));
        fs::create_dir_all(dir.join("jail.d")).unwrap();
        fs::copy(
            root.join("contrib/fail2ban/action.d/greylist.conf"),
            dir.join("action.d/greylist.conf"),
        )
        .unwrap();
        // A database of its own: the host's would restore this test's bans in the next run.
        fs::write(
            dir.join("fail2ban.local"),
            format!(
                "[Definition]\ndbfile = {}\n",
                dir.join("fail2ban.sqlite3").display()
            ),
        )
        .unwrap();
        let log = dir.join("auth.log");
        File::create(&log).unwrap();
        fs::write(
            dir.join("jail.local"),
            format!(
                "[{jail}]\n\
                 enabled = true\n\
                 filter = sshd\n\
                 backend = polling\n\
                 logpath = {log}\n\
                 maxretry = 4\n\
                 findtime = 600\n\
                 bantime = {bantime}\n\
                 action = greylist[greylist_key=\"{key}\", greylist_url=\"{url}\", greylist_command=\"{command}\"]\n",
                log = log.display(),
                key = app.license_key,
                url = app.server.base,
                command = root.join("contrib/fail2ban/greylist-fail2ban").display(),
            ),
        )
        .unwrap();
        let fail2ban = Self {
            dir,
            jail: jail.to_owned(),
        };
        // With -b the server goes to the background, and this command ends once
        // the configuration is loaded and the jail runs, or with an error.
        let out = File::create(fail2ban.path("start.log")).unwrap();
        let started = Command::new(FAIL2BAN_SERVER)
            .arg("-c")
            .arg(&fail2ban.dir)
            .arg("-s")
            .arg(fail2ban.path("f2b.sock"))
            .arg("-p")
            .arg(fail2ban.path("f2b.pid"))
            .arg("--logtarget")
            .arg(fail2ban.path("server.log"))
            .args(["-x", "-b"])
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .status()
            .expect("fail2ban-server starts");
        assert!(
            started.success(),
            "fail2ban-server: {started}\n{}",
            fail2ban.logs()
        );
        fail2ban
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn client(&self, args: &[&str]) -> Output {
        Command::new(FAIL2BAN_CLIENT)
            .arg("-c")
            .arg(&self.dir)
            .arg("-s")
            .arg(self.path("f2b.sock"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `times` failed logins of root from `ip`, now, as sshd logs them.
    fn fail(&self, ip: &str, times: u32) {
        let date = Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%M:%S+00:00"])
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
            .open(self.path("auth.log"))
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
    }

    /// Unbans `ip` as an administrator would; its actions have run when this returns.
    fn unban(&self, ip: &str) {
        let unbanned = self.client(&["set", &self.jail, "unbanip", "--report-absent", ip]);
        assert!(
            unbanned.status.success(),
            "unbanip {ip}: {}{}\n{}",
            String::from_utf8_lossy(&unbanned.stdout),
            String::from_utf8_lossy(&unbanned.stderr),
            self.logs()
        );
    }

    /// fail2ban's own log and its start's output, for a failure's message.
    fn logs(&self) -> String {
        let read = |name| fs::read_to_string(self.path(name)).unwrap_or_default();
        format!(
            "server.log:\n{}\nstart:\n{}",
            read("server.log"),
            read("start.log")
        )
    }

    /// Whether `pid` is this test's fail2ban server: its command line names this socket.
    fn is_ours(&self, pid: i32) -> bool {
        let socket = self.path("f2b.sock");
        fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
            line.split(|&b| b == 0)
                .any(|arg| arg == socket.as_os_str().as_bytes())
        })
    }
}

impl Drop for Fail2ban {
    fn drop(&mut self) {
        let _ = self.client(&["stop"]);
        // A server the stop did not end is killed by the pid it wrote.
        let Some(pid) = fs::read_to_string(self.path("f2b.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse::<i32>().ok())
        else {
            return;
        };
        let within = Duration::from_secs(10);
        let ours = || self.is_ours(pid);
        if poll(within, Duration::from_millis(100), ours, |ours| !ours).is_err() {
            // SAFETY: kill(2) on the pid of a process this test started; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The holder's entry for `ip`, if the list has it.
fn listed(app: &TestApp, ip: &str) -> Option<Value> {
    app.list(&[])["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["ip"] == ip)
        .cloned()
}

/// The holder's entry for `ip` once `until` holds of it, within 30 s.
fn entry_once(
    app: &TestApp,
    fail2ban: &Fail2ban,
    ip: &str,
    what: &str,
    until: impl Fn(&Option<Value>) -> bool,
) -> Option<Value> {
    poll(WITHIN, EVERY, || listed(app, ip), until).unwrap_or_else(|entry| {
        panic!(
            "{what}: the entry of {ip} is {entry:?}\n{}",
            fail2ban.logs()
        )
    })
}

/// The operator's lookup of `ip`'s reports once the holder's alarm has sent
/// them and they count one license, or as they are after 30 s.
fn reports_of(server: &Server, app: &TestApp, ip: &str) -> Value {
    let reports = || {
        server.run_holder_alarm(&app.license);
        let resp = server.admin("GET", &format!("/admin/lookup?ip={ip}"), None);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()["reports"].clone()
    };
    poll(WITHIN, EVERY, reports, |reports| reports["licenses"] == 1).unwrap_or_else(|seen| seen)
}

#[test]
fn debians_fail2ban_reports_a_banned_address_and_greylists_it_until_the_unban() {
    let server = Server::shared();
    let app = TestApp::on(&server);
    let fail2ban = Fail2ban::start(&app, "greylist-sshd", -1);
    // Three failures are under maxretry; their lines come first in the log.
    fail2ban.fail("85.1.0.2", 3);
    fail2ban.fail("85.1.0.1", 4);
    let entry = entry_once(
        &app,
        &fail2ban,
        "85.1.0.1",
        "the ban adds it",
        Option::is_some,
    )
    .unwrap();
    assert_eq!(entry["comment"], "greylist-sshd", "{entry}");
    assert_eq!(
        entry["expiresAt"],
        Value::Null,
        "a ban for ever adds the address without a ttl: {entry}"
    );
    assert_eq!(listed(&app, "85.1.0.2"), None, "three failures ban nothing");
    // The report was sent before the add.
    let reports = reports_of(&server, &app, "85.1.0.1");
    assert_eq!(reports["licenses"], 1, "{reports}");
    assert_eq!(
        reports["reporters"][0]["license"],
        app.license.as_str(),
        "{reports}"
    );
    assert_eq!(
        reports["reporters"][0]["categories"],
        json!(["brute-force"]),
        "{reports}"
    );
    fail2ban.unban("85.1.0.1");
    entry_once(
        &app,
        &fail2ban,
        "85.1.0.1",
        "the unban removes it",
        Option::is_none,
    );
}

#[test]
fn debians_fail2ban_greylists_a_ban_of_an_hour_with_its_ttl_and_the_unban_leaves_it_to_expire() {
    let server = Server::shared();
    let app = TestApp::on(&server);
    let fail2ban = Fail2ban::start(&app, "greylist-sshd-hour", 3600);
    fail2ban.fail("85.2.0.1", 4);
    let entry = entry_once(
        &app,
        &fail2ban,
        "85.2.0.1",
        "the ban adds it",
        Option::is_some,
    )
    .unwrap();
    assert_eq!(entry["comment"], "greylist-sshd-hour", "{entry}");
    let seconds = |field: &str| {
        entry[field]
            .as_str()
            .and_then(UnixTime::parse_rfc3339)
            .unwrap_or_else(|| panic!("{field}: {entry}"))
            .0
    };
    assert_eq!(
        seconds("expiresAt") - seconds("addedAt"),
        3600,
        "the ban's time is the entry's ttl: {entry}"
    );
    fail2ban.unban("85.2.0.1");
    assert!(
        fail2ban.logs().contains("Unban 85.2.0.1"),
        "{}",
        fail2ban.logs()
    );
    assert_eq!(
        listed(&app, "85.2.0.1"),
        Some(entry),
        "the unban leaves an entry with a ttl to expire by itself"
    );
}
