//! One `TestApp` per test: a fresh license on a real worker, the test build
//! (`build-test/`, with the clock the tests control) served as `wrangler dev`
//! serves it, by Miniflare (`tests/api/serve.mjs`).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

pub const JWT_SECRET: &str = "e2e-jwt-secret-0123456789abcdef0123456789abcdef";
pub const ADMIN_TOKEN: &str = "e2e-admin-token-0123456789abcdef";
/// The specified answer to a change over the day's limit.
pub const LIMIT: &str = "Sorry, but you have reached the maximum limit";
pub const UNAUTHORIZED: &str = "Unauthorized: the access token is missing or invalid";
pub const INTERNAL_ERROR: &str =
    "Internal error: the request could not be completed, try again later";

/// A server's process group (node and its `workerd`), killed when the last handle on it
/// goes, or when the test process ends, however it ends.
pub struct Server {
    pub base: String,
    pub state_dir: PathBuf,
    log_path: PathBuf,
    vars: Vec<(String, String)>,
    config: PathBuf,
    child: Mutex<Option<Child>>,
    /// How far the service's clock runs ahead of the real one.
    offset_ms: AtomicI64,
    /// Whether tests running at once share this server: its clock is then never moved.
    shared: AtomicBool,
    /// A shell that kills the group once its stdin closes: when the server is
    /// dropped, or when this process exits, however it exits.
    watchdog: Mutex<Option<Child>>,
}

/// Servers this process started: each one's log is a file of its own.
static SERVERS_STARTED: AtomicU32 = AtomicU32::new(0);

/// Seconds since the epoch, on this machine's clock.
pub fn real_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl Server {
    /// The server most tests share: default limits.
    pub fn shared() -> Arc<Server> {
        static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
        SERVER.get_or_init(|| Server::own(&[]).for_many()).clone()
    }

    /// A server with small daily limits (3 additions, 2 removals) for the limit tests.
    pub fn limited() -> Arc<Server> {
        static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
        SERVER
            .get_or_init(|| {
                Server::own(&[("DAILY_ADDITIONS", "3"), ("DAILY_REMOVALS", "2")]).for_many()
            })
            .clone()
    }

    /// Marks a server that several tests use at once, whose clock must stay put:
    /// moving it would expire the others' tokens and entries, or start their day again.
    pub fn for_many(self: Arc<Server>) -> Arc<Server> {
        self.shared.store(true, Ordering::SeqCst);
        self
    }

    /// A server of the test's own, on fresh state: for tests that move its clock, change
    /// the operator's lists in ways others would see, or kill it.
    pub fn own(extra_vars: &[(&str, &str)]) -> Arc<Server> {
        Arc::new(Server::start(&fresh_state_dir(), extra_vars, None))
    }

    /// `own`, on state prepared in `state_dir` (its `wrangler/` folder is what the server persists to).
    pub fn own_on(state_dir: &Path, extra_vars: &[(&str, &str)]) -> Arc<Server> {
        Arc::new(Server::start(state_dir, extra_vars, None))
    }

    /// `own`, on another wrangler configuration (made from `test_config()`).
    pub fn own_with_config(extra_vars: &[(&str, &str)], config: &Path) -> Arc<Server> {
        Arc::new(Server::start(&fresh_state_dir(), extra_vars, Some(config)))
    }

    fn start(state_dir: &Path, extra_vars: &[(&str, &str)], config: Option<&Path>) -> Server {
        let mut vars: Vec<(String, String)> = [
            ("JWT_SECRET", JWT_SECRET),
            ("ADMIN_TOKEN", ADMIN_TOKEN),
            ("CACHE_SECONDS", "0"),
            ("TOKEN_LIFETIME_SECONDS", "3600"),
            ("DAILY_ADDITIONS", "6000"),
            ("DAILY_REMOVALS", "1000"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (key, value) in extra_vars {
            vars.retain(|(k, _)| k != key);
            vars.push((key.to_string(), value.to_string()));
        }
        fs::create_dir_all(state_dir).unwrap();
        let config = config.map_or_else(test_config, Path::to_owned);
        let log_path = state_dir.join(format!(
            "server-{}.log",
            SERVERS_STARTED.fetch_add(1, Ordering::SeqCst)
        ));
        let (child, watchdog) = spawn_server(state_dir, &log_path, &vars, &config);
        let mut server = Server {
            base: String::new(),
            state_dir: state_dir.to_owned(),
            log_path,
            vars: vars.clone(),
            config: config.clone(),
            child: Mutex::new(Some(child)),
            offset_ms: AtomicI64::new(0),
            shared: AtomicBool::new(false),
            watchdog: Mutex::new(Some(watchdog)),
        };
        server.base = server
            .wait_until_ready()
            .unwrap_or_else(|log| panic!("{log}"));
        // The next 06:00 UTC: every test has 18 hours before the daily counters start
        // again, and the clock never runs behind the real one, so that an alarm set for
        // a moment the service thinks is ahead never falls in the real past.
        let now = real_now();
        let six = now - now % 86_400 + 6 * 3600;
        let start = if six >= now { six } else { six + 86_400 };
        server.set_offset((start - now) as i64 * 1000);
        server
    }

    /// Starts the same configuration again on the same persisted state, its clock where this one's was.
    pub fn restart_from(&self) -> Arc<Server> {
        let extra: Vec<(&str, &str)> = self
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let server = Server::start(&self.state_dir, &extra, Some(&self.config));
        server.set_offset(self.offset_ms.load(Ordering::SeqCst));
        Arc::new(server)
    }

    /// `restart_from`, with these settings changed (this one must be killed first).
    pub fn restart_with(&self, changed: &[(&str, &str)]) -> Arc<Server> {
        let mut vars: Vec<(&str, &str)> = self
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .filter(|(k, _)| !changed.iter().any(|(name, _)| name == k))
            .collect();
        vars.extend_from_slice(changed);
        let server = Server::start(&self.state_dir, &vars, Some(&self.config));
        server.set_offset(self.offset_ms.load(Ordering::SeqCst));
        Arc::new(server)
    }

    /// `restart_from`, on another wrangler configuration (made from `test_config()`).
    pub fn restart_with_config(&self, config: &Path) -> Arc<Server> {
        let extra: Vec<(&str, &str)> = self
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let server = Server::start(&self.state_dir, &extra, Some(config));
        server.set_offset(self.offset_ms.load(Ordering::SeqCst));
        Arc::new(server)
    }

    fn set_offset(&self, offset_ms: i64) {
        let resp = send(
            "POST",
            &format!("{}/__test/clock", self.base),
            &[],
            Some(json!({ "offsetMs": offset_ms }).to_string().as_bytes()),
        );
        assert_eq!(resp.status, 200, "setting the clock: {}", resp.body);
        self.offset_ms.store(offset_ms, Ordering::SeqCst);
    }

    /// The service's time, in seconds since the epoch.
    pub fn now(&self) -> u64 {
        (real_now() as i64 + self.offset_ms.load(Ordering::SeqCst) / 1000) as u64
    }

    /// Puts the service's clock on the real one, so that an alarm it sets falls
    /// when the runtime fires it: for a test of the runtime's own alarms (the
    /// day's counters then start again at the next real midnight).
    pub fn on_the_real_clock(&self) {
        assert!(
            !self.shared.load(Ordering::SeqCst),
            "a shared server's clock is never moved: start one of the test's own"
        );
        self.set_offset(0);
    }

    /// Puts the service's clock behind the real one, at the last 00:30 UTC: an
    /// alarm it sets for a moment soon falls in the real past and fires at once,
    /// as the alarms of a server on the real clock fire in their own time, while
    /// its day starts again no sooner than 23.5 hours from now. For examples that
    /// wait, as a newcomer would, for what alarms do (docs/api.md's walkthrough of the network).
    pub fn behind_the_real_clock(&self) {
        assert!(
            !self.shared.load(Ordering::SeqCst),
            "a shared server's clock is never moved: start one of the test's own"
        );
        let now = real_now();
        let half_past = now - now % 86_400 + 1800;
        let start = if half_past <= now {
            half_past
        } else {
            half_past - 86_400
        };
        self.set_offset(-((now - start) as i64) * 1000);
    }

    /// Moves the service's clock forward.
    pub fn advance(&self, seconds: u64) {
        assert!(
            !self.shared.load(Ordering::SeqCst),
            "a shared server's clock is never moved: start one of the test's own"
        );
        self.set_offset(self.offset_ms.load(Ordering::SeqCst) + seconds as i64 * 1000);
    }

    /// Runs the alarm of a license holder's object now, at the service's time.
    pub fn run_holder_alarm(&self, license: &str) {
        let resp = send(
            "POST",
            &format!("{}/__test/holders/{license}/alarm", self.base),
            &[],
            Some(b""),
        );
        assert_eq!(resp.status, 200, "the holder's alarm: {}", resp.body);
    }

    /// The second a license holder's object's alarm is set for, if one is set.
    pub fn holder_alarm_at(&self, license: &str) -> Option<u64> {
        let resp = send(
            "GET",
            &format!("{}/__test/holders/{license}/alarm", self.base),
            &[],
            None,
        );
        assert_eq!(resp.status, 200, "the holder's alarm: {}", resp.body);
        let answer: Value = serde_json::from_str(&resp.body).unwrap();
        answer["at"].as_u64()
    }

    /// Hands the lists' writer a batch of promotions and decays, as a report shard
    /// would, then runs its alarm, which publishes them: answers what the batch did.
    pub fn promote(&self, add: &[&str], remove: &[&str]) -> Value {
        let resp = send(
            "POST",
            &format!("{}/__test/lists/promote", self.base),
            &[],
            Some(
                json!({ "add": add, "remove": remove })
                    .to_string()
                    .as_bytes(),
            ),
        );
        assert_eq!(resp.status, 200, "the promotions: {}", resp.body);
        let alarm = send(
            "POST",
            &format!("{}/__test/lists/alarm", self.base),
            &[],
            Some(b""),
        );
        assert_eq!(alarm.status, 200, "the writer's alarm: {}", alarm.body);
        resp.json()
    }

    /// Runs every report shard's alarm (what decayed, and what waits, told to the
    /// lists' writer), then the writer's, which publishes what it took.
    pub fn run_report_shards(&self) {
        for hook in ["/__test/reports/alarm", "/__test/lists/alarm"] {
            let resp = send("POST", &format!("{}{hook}", self.base), &[], Some(b""));
            assert_eq!(resp.status, 200, "{hook}: {}", resp.body);
        }
    }

    /// SIGKILL to the whole process group: no chance to flush or shut down cleanly.
    pub fn kill(&self) {
        // Also from `drop` while a failed test unwinds: a poisoned lock still holds the child.
        let taken = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = taken {
            kill_group(child.id());
            let _ = child.wait();
        }
    }

    /// Waits for the server to say where the Worker answers, and for the Worker to
    /// answer there (a path no file answers reaches the Worker itself, so its 404
    /// proves the wasm is loaded); what went wrong, with the log, if it never does.
    fn wait_until_ready(&self) -> Result<String, String> {
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            let url = self
                .log()
                .lines()
                .find_map(|line| line.strip_prefix("ready on ").map(str::to_owned));
            if let Some(url) = url {
                if let Ok(resp) = try_send("GET", &format!("{url}/no-such-endpoint"), &[], None) {
                    if resp.status == 404 && resp.body.contains("no such endpoint") {
                        return Ok(url);
                    }
                }
            }
            if let Some(child) = self.child.lock().unwrap().as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("the server exited with {status}:\n{}", self.log()));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "the server did not answer within 180 s:\n{}",
            self.log()
        ))
    }

    /// The server's runtime processes (`workerd`, where the Worker and its Durable
    /// Objects run).
    fn runtime_processes(&self) -> Vec<String> {
        let group = self
            .child
            .lock()
            .unwrap()
            .as_ref()
            .expect("a running server")
            .id();
        group_processes(group)
            .into_iter()
            .filter(|pid| {
                fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "workerd")
            })
            .collect()
    }

    /// How far the runtime's resident memory rose above where it was while `work`
    /// ran, sampled every 5 ms, in KiB.
    pub fn memory_growth(&self, work: impl FnOnce()) -> u64 {
        let processes = self.runtime_processes();
        assert!(
            !processes.is_empty(),
            "no workerd process of this server to measure"
        );
        let resident = || -> u64 {
            processes
                .iter()
                .filter_map(|pid| {
                    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                    status
                        .lines()
                        .find_map(|line| line.strip_prefix("VmRSS:"))?
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .sum()
        };
        let before = resident();
        let done = AtomicBool::new(false);
        let peak = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| {
                let mut peak = before;
                while !done.load(Ordering::SeqCst) {
                    peak = peak.max(resident());
                    std::thread::sleep(Duration::from_millis(5));
                }
                peak.max(resident())
            });
            work();
            done.store(true, Ordering::SeqCst);
            sampler.join().unwrap()
        });
        peak.saturating_sub(before)
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The log once a line of it satisfies `seen`, or as it is after 10 s: a request's
    /// line reaches the file a moment after its answer, later when the machine is busy.
    pub fn log_once(&self, seen: impl Fn(&str) -> bool) -> String {
        let within = Duration::from_secs(10);
        poll(
            within,
            Duration::from_millis(100),
            || self.log(),
            |log| log.lines().any(&seen),
        )
        .unwrap_or_else(|log| log)
    }

    pub fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.try_admin(method, path, body)
            .unwrap_or_else(|why| panic!("{method} {path}: no answer ({why})"))
    }

    /// `admin`, or why there was no answer.
    fn try_admin(&self, method: &str, path: &str, body: Option<Value>) -> Result<Resp, String> {
        let headers = [
            ("Authorization", format!("Bearer {ADMIN_TOKEN}")),
            ("Content-Type", "application/json".to_owned()),
        ];
        let body = body.map(|b| b.to_string().into_bytes());
        try_send(
            method,
            &format!("{}{path}", self.base),
            &headers,
            body.as_deref(),
        )
    }

    /// Takes `entries` off `global-list` or `allow-list` when the guard goes, for a test
    /// on a shared server that adds them itself: the lists are as it found them even
    /// when it fails between its add and its own remove.
    pub fn taken_off_at_end(&self, list: &'static str, entries: &[&str]) -> Listed<'_> {
        Listed {
            server: self,
            list,
            entries: entries.iter().map(|e| e.to_string()).collect(),
        }
    }

    /// Adds `entries` to `global-list` or `allow-list` for as long as the guard lives:
    /// a test on a shared server leaves the lists as it found them, even when it fails.
    pub fn listed(&self, list: &'static str, entries: &[&str]) -> Listed<'_> {
        let resp = self.admin(
            "POST",
            &format!("/admin/{list}"),
            Some(json!({ "add": entries })),
        );
        assert_eq!(resp.status, 200, "{list}: {}", resp.body);
        self.taken_off_at_end(list, entries)
    }

    pub fn edit_global_list(&self, add: &[&str], remove: &[&str]) -> Resp {
        self.admin(
            "POST",
            "/admin/global-list",
            Some(json!({ "add": add, "remove": remove })),
        )
    }

    pub fn edit_allow_list(&self, add: &[&str], remove: &[&str]) -> Resp {
        self.admin(
            "POST",
            "/admin/allow-list",
            Some(json!({ "add": add, "remove": remove })),
        )
    }

    /// Replaces `global-list` or `allow-list` with the entries of an import.
    pub fn replace_list(&self, list: &str, text: &str) -> Resp {
        let headers = [
            ("Authorization", format!("Bearer {ADMIN_TOKEN}")),
            ("Content-Type", "text/plain".to_owned()),
        ];
        send(
            "PUT",
            &format!("{}/admin/{list}", self.base),
            &headers,
            Some(text.as_bytes()),
        )
    }

    pub fn create_license(&self) -> (String, String) {
        let resp = self.admin("POST", "/admin/licenses", None);
        assert_eq!(resp.status, 201, "{}", resp.body);
        let v = resp.json();
        (
            v["license"].as_str().unwrap().to_owned(),
            v["licenseKey"].as_str().unwrap().to_owned(),
        )
    }

    pub fn export_list(&self, list: &str, if_none_match: Option<&str>) -> Resp {
        let mut headers = vec![("Authorization", format!("Bearer {ADMIN_TOKEN}"))];
        headers.extend(if_none_match.map(|tag| ("If-None-Match", tag.to_owned())));
        send(
            "GET",
            &format!("{}/admin/{list}", self.base),
            &headers,
            None,
        )
    }

    pub fn status(&self) -> Value {
        let resp = self.admin("GET", "/admin/status", None);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    }

    pub fn login(&self, key: &str) -> Resp {
        let body = json!({ "licenseKey": key }).to_string();
        send(
            "POST",
            &format!("{}/v2/authentication/login/license", self.base),
            &[("Content-Type", "application/json".to_owned())],
            Some(body.as_bytes()),
        )
    }
}

/// Entries a test put on one of the operator's lists; removed when it goes.
pub struct Listed<'a> {
    server: &'a Server,
    list: &'static str,
    entries: Vec<String>,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        // No panic while a failed test unwinds, which would abort every test.
        let resp = self.server.try_admin(
            "POST",
            &format!("/admin/{}", self.list),
            Some(json!({ "remove": self.entries })),
        );
        if !std::thread::panicking() {
            let resp = resp.unwrap_or_else(|why| panic!("{}: no answer ({why})", self.list));
            assert_eq!(resp.status, 200, "{}: {}", self.list, resp.body);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if let Some(mut watchdog) = self.watchdog.lock().unwrap().take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// The repository's configuration serving the test build: `build-test/index.js`,
/// with absolute paths and no build command (`make e2e` builds it first).
pub fn test_config() -> PathBuf {
    static CONFIG: OnceLock<PathBuf> = OnceLock::new();
    CONFIG
        .get_or_init(|| configuration_file("wrangler", &[]))
        .clone()
}

/// `test_config()` without the lines that mention any of `left_out`, written to a
/// folder of its own, where the Miniflare options made of it are kept beside it
/// (`tests/api/serve.mjs`).
pub fn configuration_file(name: &str, left_out: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("config-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("wrangler.toml");
    fs::write(&path, configuration_without(left_out)).unwrap();
    // Options an earlier process of the same id kept for another configuration.
    let _ = fs::remove_file(dir.join("wrangler.toml.miniflare.json"));
    path
}

fn configuration_without(left_out: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    fs::read_to_string(root.join("wrangler.toml"))
        .unwrap()
        .lines()
        .filter(|line| !left_out.iter().any(|word| line.contains(word)))
        .filter(|line| !line.starts_with("command =") && !line.starts_with("watch_dir ="))
        .map(|line| {
            line.replace(
                "main = \"build/index.js\"",
                &format!("main = \"{}\"", root.join("build-test/index.js").display()),
            )
        })
        .map(|line| {
            line.replace(
                "directory = \"public\"",
                &format!("directory = \"{}\"", root.join("public").display()),
            )
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The test build on Miniflare (`tests/api/serve.mjs`), its output in `log_path`,
/// in a process group of its own, and a watchdog that kills the group once this
/// process lets go of it, however it ends.
fn spawn_server(
    state_dir: &Path,
    log_path: &Path,
    vars: &[(String, String)],
    config: &Path,
) -> (Child, Child) {
    use std::os::unix::process::CommandExt;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let log = File::create(log_path).unwrap();
    let vars: serde_json::Map<String, Value> = vars
        .iter()
        .map(|(key, value)| (key.clone(), Value::String(value.clone())))
        .collect();
    let child = node()
        .arg(root.join("tests/api/serve.mjs"))
        .arg(config)
        .arg(state_dir.join("wrangler"))
        .arg(Value::Object(vars).to_string())
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .expect("node (Node 20, a prerequisite: README)");
    let watchdog = Command::new("sh")
        .args([
            "-c",
            &format!("read _; kill -s KILL -- -{} 2>/dev/null", child.id()),
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    (child, watchdog)
}

/// Node with the large bundles' compiled code kept between starts
/// (`tests/node-code-cache.cjs`): Miniflare's for each server, wrangler's for
/// the first of a configuration and `kv_put_local`.
fn node() -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("node");
    command
        .args(["--no-warnings", "--require"])
        .arg(root.join("tests/node-code-cache.cjs"))
        .env("WRANGLER_SEND_METRICS", "false")
        .env(
            "GREYLIST_CODE_CACHE",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-code-cache"),
        );
    command
}

/// The pinned wrangler, run as its launcher (`node_modules/.bin/wrangler`) runs
/// it, without the launcher's second node process.
fn wrangler() -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = node();
    command
        .arg("--experimental-vm-modules")
        .arg(root.join("node_modules/wrangler/wrangler-dist/cli.js"));
    command
}

fn kill_group(pgid: u32) {
    let pgid = libc::pid_t::try_from(pgid).expect("a process id");
    assert!(pgid > 1, "refusing to signal process group {pgid}");
    // SAFETY: kill(2) with a negative pid signals exactly that process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// The processes of a process group (Linux `/proc`).
fn group_processes(group: u32) -> Vec<String> {
    let in_group = |pid: &str| {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The fields after the command name, which is in parentheses: state, ppid, pgrp.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        after
            .split_whitespace()
            .nth(2)
            .and_then(|pgrp| pgrp.parse::<u32>().ok())
            == Some(group)
    };
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()) && in_group(pid))
        .collect()
}

/// Writes a KV value into the state a server persists to in `state_dir`, as
/// `wrangler kv key put --local` does; no server may be running on it.
pub fn kv_put_local(state_dir: &Path, binding: &str, key: &str, value: &str) {
    let output = wrangler()
        .args([
            "kv",
            "key",
            "put",
            "--local",
            "--binding",
            binding,
            key,
            value,
        ])
        .arg("--config")
        .arg(test_config())
        .arg("--persist-to")
        .arg(state_dir.join("wrangler"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What `probe` sees once `done` holds of it, probing every `every` for at most
/// `within`; `Err` with what it saw last after that, for the caller's message or
/// to go on with. For what acts in its own time, which the service's clock does
/// not move: a real bouncer, engine or fail2ban, and the server's log.
pub fn poll<T>(
    within: Duration,
    every: Duration,
    mut probe: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> Result<T, T> {
    let deadline = Instant::now() + within;
    loop {
        let seen = probe();
        if done(&seen) {
            return Ok(seen);
        }
        if Instant::now() >= deadline {
            return Err(seen);
        }
        std::thread::sleep(every);
    }
}

pub fn fresh_state_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "e2e-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// A public address no other test in this process uses, for the shared global and allow lists.
pub fn unique_ip() -> String {
    static N: AtomicU32 = AtomicU32::new(1);
    let n = N.fetch_add(1, Ordering::SeqCst);
    format!("11.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
}

#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The `result` of a JSON-mode answer, after checking its status and shape.
    pub fn result(&self) -> String {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(self.content_type, "application/json", "{}", self.body);
        let value = self.json();
        assert_eq!(
            value.as_object().map(|o| o.len()),
            Some(1),
            "a single-field result: {}",
            self.body
        );
        value["result"].as_str().unwrap().to_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every request on a connection of its own. A server closes a keep-alive connection
/// that idled (`wrangler dev`'s Node server after 5 s); ureq reuses a pooled
/// connection and retries on a closed one only for idempotent requests, so a POST
/// written as the server closed its idle connection failed with "no answer" now and
/// then. A loopback connect costs far less than the request itself.
fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .max_idle_connections(0)
            .redirects(0)
            .build()
    })
}

pub fn send(method: &str, url: &str, headers: &[(&str, String)], body: Option<&[u8]>) -> Resp {
    try_send(method, url, headers, body)
        .unwrap_or_else(|why| panic!("{method} {url}: no answer ({why})"))
}

/// The answer, or why there was none: the transport error's kind and text, or a body cut off.
pub fn try_send(
    method: &str,
    url: &str,
    headers: &[(&str, String)],
    body: Option<&[u8]>,
) -> Result<Resp, String> {
    if let Some(bytes) = body.filter(|bytes| bytes.len() > ONE_WRITE_FROM) {
        return send_in_one_write(method, url, headers, bytes);
    }
    let mut request = agent().request(method, url);
    for (name, value) in headers {
        request = request.set(name, value);
    }
    let result = match body {
        Some(bytes) => request.send_bytes(bytes),
        None => request.call(),
    };
    let response = match result {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(ureq::Error::Transport(transport)) => {
            return Err(format!("{:?}: {transport}", transport.kind()))
        }
    };
    let headers = response
        .headers_names()
        .iter()
        .map(|name| (name.clone(), response.header(name).unwrap_or("").to_owned()))
        .collect();
    let (status, content_type) = (
        response.status(),
        response.header("Content-Type").unwrap_or("").to_owned(),
    );
    // A body cut off (the server was killed mid-answer) is no answer. Read whole,
    // however large: ureq's `into_string` stops at 10 MB.
    let mut body = String::new();
    std::io::Read::read_to_string(&mut response.into_reader(), &mut body)
        .map_err(|e| format!("body cut off: {e}"))?;
    Ok(Resp {
        status,
        content_type,
        headers,
        body,
    })
}

/// Bodies longer than the smallest limit a route sets (16 KiB) may be refused by their
/// `Content-Length` alone: the server answers 413 and closes the connection before it
/// reads them, and ureq, which writes the head and then the body, met a broken pipe
/// writing the body now and then and lost the answer. Such a request goes out in one
/// write, and its answer is read whether or not the write was cut short.
const ONE_WRITE_FROM: usize = 16 * 1024;

fn send_in_one_write(
    method: &str,
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<Resp, String> {
    use std::io::Read;
    let rest = url.strip_prefix("http://").ok_or("an http:// address")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut request = request.into_bytes();
    request.extend_from_slice(body);
    let mut stream = std::net::TcpStream::connect(host).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    // A write cut short by the server's early answer is no failure: the answer says.
    let _ = stream.write_all(&request);
    let mut answer = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buffer[..n]);
                // An answer whole by its own length is the answer: the server may
                // hold the connection open a while after it, reading what it drains.
                if let Ok(whole) = parse_answer(&answer, false) {
                    return Ok(whole);
                }
            }
            // A server that closes with the body unread resets the connection, after
            // its answer: an answer whole by its own length stands.
            Err(e) => {
                return parse_answer(&answer, true).map_err(|why| format!("{e}, and {why}"));
            }
        }
    }
    parse_answer(&answer, true)
}

/// An HTTP/1.1 answer: its status, headers and body (sent with a length, which it
/// must have whole, or chunked, to its last chunk, or else read to the
/// connection's end, once it is `closed`).
fn parse_answer(answer: &[u8], closed: bool) -> Result<Resp, String> {
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no answer's head in {} bytes", answer.len()))?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line in {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| value.clone())
    };
    let mut rest = &answer[end + 4..];
    let body = if header("Transfer-Encoding").is_some_and(|te| te.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let line_end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("a chunk cut off")?;
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..line_end]).trim(), 16)
                .map_err(|e| format!("a chunk's size: {e}"))?;
            rest = &rest[line_end + 2..];
            if size == 0 {
                break;
            }
            body.extend_from_slice(rest.get(..size).ok_or("a chunk cut off")?);
            rest = rest.get(size + 2..).ok_or("a chunk cut off")?;
        }
        body
    } else {
        let length = header("Content-Length")
            .map(|length| length.parse::<usize>())
            .transpose()
            .map_err(|e| format!("a Content-Length: {e}"))?;
        match length {
            Some(length) if length != rest.len() => {
                return Err(format!("a body of {} bytes of {length}", rest.len()))
            }
            None if !closed => return Err("a body without a length, still open".to_owned()),
            _ => rest.to_vec(),
        }
    };
    Ok(Resp {
        status,
        content_type: header("Content-Type").unwrap_or_default(),
        headers,
        body: String::from_utf8(body).map_err(|e| format!("a body not UTF-8: {e}"))?,
    })
}

/// Which answer a holder route is asked for: JSON (`?result_mode=json`) or plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    Plain,
}

impl Mode {
    fn query(self) -> &'static str {
        match self {
            Self::Json => "?result_mode=json",
            Self::Plain => "",
        }
    }
}

/// How a test sends the `ip` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Multipart,
    Urlencoded,
}

pub fn form_body(encoding: Encoding, fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    match encoding {
        Encoding::Urlencoded => {
            let body = fields
                .iter()
                .map(|(k, v)| format!("{k}={}", percent_encode(v)))
                .collect::<Vec<_>>()
                .join("&");
            (
                "application/x-www-form-urlencoded".to_owned(),
                body.into_bytes(),
            )
        }
        Encoding::Multipart => {
            let boundary = "------------------------e2eboundary";
            let mut body = Vec::new();
            for (k, v) in fields {
                write!(
                    body,
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                )
                .unwrap();
            }
            write!(body, "--{boundary}--\r\n").unwrap();
            (format!("multipart/form-data; boundary={boundary}"), body)
        }
    }
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A license holder with a fresh license and a valid access token.
pub struct TestApp {
    pub server: Arc<Server>,
    pub license: String,
    pub license_key: String,
    pub token: String,
}

impl TestApp {
    pub fn new() -> Self {
        Self::on(&Server::shared())
    }

    pub fn on(server: &Arc<Server>) -> Self {
        let server = server.clone();
        let (license, license_key) = server.create_license();
        let token = server.login(&license_key).json()["accessToken"]
            .as_str()
            .unwrap()
            .to_owned();
        Self {
            server,
            license,
            license_key,
            token,
        }
    }

    /// The same license holder on another server (one restarted on the same state).
    pub fn with_server(&self, server: &Arc<Server>) -> Self {
        Self {
            server: server.clone(),
            license: self.license.clone(),
            license_key: self.license_key.clone(),
            token: self.token.clone(),
        }
    }

    /// A list operation with `ip` sent in the given encoding; `json` selects `result_mode=json`.
    pub fn call(&self, path: &str, ip: &str, encoding: Encoding, mode: Mode) -> Resp {
        self.try_call(path, ip, encoding, mode)
            .unwrap_or_else(|why| panic!("POST {path}: no answer ({why})"))
    }

    /// `call`, or why the server did not answer.
    pub fn try_call(
        &self,
        path: &str,
        ip: &str,
        encoding: Encoding,
        mode: Mode,
    ) -> Result<Resp, String> {
        let (content_type, body) = form_body(encoding, &[("ip", ip)]);
        self.try_post(path, mode, &[("Content-Type", content_type)], &body)
    }

    pub fn post(&self, path: &str, mode: Mode, headers: &[(&str, String)], body: &[u8]) -> Resp {
        self.try_post(path, mode, headers, body)
            .unwrap_or_else(|why| panic!("POST {path}: no answer ({why})"))
    }

    fn try_post(
        &self,
        path: &str,
        mode: Mode,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Resp, String> {
        let mut all = vec![("Authorization", format!("Bearer {}", self.token))];
        all.extend(headers.iter().cloned());
        let query = mode.query();
        try_send(
            "POST",
            &format!("{}{path}{query}", self.server.base),
            &all,
            Some(body),
        )
    }

    /// The client this license's reports come from when a test says they come
    /// from its own network, as the edge would name it (`CF-Connecting-IP`): a
    /// /24 of `10.0.0.0/8` of its own, the same for every call of the license.
    pub fn own_client(&self) -> String {
        let hash = self.license.bytes().fold(0x811c_9dc5u32, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
        });
        format!("10.{}.{}.7", (hash >> 8) & 0xff, hash & 0xff)
    }

    /// A holder route with urlencoded fields, from `client` as the edge names it.
    pub fn form_from(&self, client: &str, path: &str, fields: &[(&str, &str)], mode: Mode) -> Resp {
        let (content_type, body) = form_body(Encoding::Urlencoded, fields);
        let headers = [
            ("Content-Type", content_type),
            ("CF-Connecting-IP", client.to_owned()),
        ];
        self.post(path, mode, &headers, &body)
    }

    /// A holder route with urlencoded fields.
    pub fn form(&self, path: &str, fields: &[(&str, &str)], mode: Mode) -> Resp {
        let (content_type, body) = form_body(Encoding::Urlencoded, fields);
        self.post(path, mode, &[("Content-Type", content_type)], &body)
    }

    /// The first page of the history, in JSON.
    pub fn history(&self) -> Value {
        let resp = self.form("/api/greylistHistory", &[], Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    }

    pub fn check(&self, ip: &str) -> String {
        self.call(
            "/api/checkIpOnGreylist",
            ip,
            Encoding::Multipart,
            Mode::Json,
        )
        .result()
    }

    pub fn add(&self, ip: &str) -> String {
        self.call("/api/addIpToGreylist", ip, Encoding::Multipart, Mode::Json)
            .result()
    }

    pub fn remove(&self, ip: &str) -> String {
        self.call(
            "/api/deleteIpFromGreylist",
            ip,
            Encoding::Multipart,
            Mode::Json,
        )
        .result()
    }

    pub fn list(&self, fields: &[(&str, &str)]) -> Value {
        let resp = self.form("/api/listGreylist", fields, Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    }

    pub fn add_with(&self, fields: &[(&str, &str)]) -> Resp {
        self.form("/api/addIpToGreylist", fields, Mode::Json)
    }
    pub fn bulk(&self, path: &str, content_type: &str, body: &str, mode: Mode) -> Resp {
        self.post(
            path,
            mode,
            &[("Content-Type", content_type.to_owned())],
            body.as_bytes(),
        )
    }

    pub fn feed_with(&self, authorization: &str, query: &str, if_none_match: Option<&str>) -> Resp {
        let mut headers = vec![("Authorization", authorization.to_owned())];
        headers.extend(if_none_match.map(|tag| ("If-None-Match", tag.to_owned())));
        send(
            "GET",
            &format!("{}/api/greylistFeed?{query}", self.server.base),
            &headers,
            None,
        )
    }

    pub fn feed(&self, query: &str) -> Resp {
        self.feed_with(&format!("Bearer {}", self.token), query, None)
    }

    pub fn feed_json(&self, query: &str) -> Value {
        let resp = self.feed(query);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    }

    /// A feed token of scope `all`: it reads every feed this holder may.
    pub fn create_feed_token(&self) -> Resp {
        send(
            "POST",
            &format!("{}/api/feedTokens", self.server.base),
            &[
                ("Authorization", format!("Bearer {}", self.token)),
                (
                    "Content-Type",
                    "application/x-www-form-urlencoded".to_owned(),
                ),
            ],
            Some(b"scope=all"),
        )
    }

    /// A feed token made with this JSON request (`scope`, `decisionType`): its id and the token.
    pub fn feed_token(&self, request: Value) -> (String, String) {
        let resp = self.feed_token_answer(request);
        assert_eq!(resp.status, 201, "{}", resp.body);
        let made = resp.json();
        (
            made["id"].as_str().unwrap().to_owned(),
            made["feedToken"].as_str().unwrap().to_owned(),
        )
    }

    /// `POST /api/feedTokens` with `request` as JSON, answered as it is.
    pub fn feed_token_answer(&self, request: Value) -> Resp {
        send(
            "POST",
            &format!("{}/api/feedTokens", self.server.base),
            &[
                ("Authorization", format!("Bearer {}", self.token)),
                ("Content-Type", "application/json".to_owned()),
            ],
            Some(request.to_string().as_bytes()),
        )
    }

    /// A check of 8.8.8.8 with this `Authorization` header (or none).
    pub fn check_with(&self, authorization: Option<String>, mode: Mode) -> Resp {
        let (content_type, body) = form_body(Encoding::Urlencoded, &[("ip", "8.8.8.8")]);
        let mut headers = vec![("Content-Type", content_type)];
        if let Some(value) = authorization {
            headers.push(("Authorization", value));
        }
        let query = mode.query();
        send(
            "POST",
            &format!("{}/api/checkIpOnGreylist{query}", self.server.base),
            &headers,
            Some(&body),
        )
    }

    /// An add of `ip` with another token than this holder's own.
    pub fn add_as(&self, token: &str, ip: &str) -> Resp {
        let (content_type, body) = form_body(Encoding::Multipart, &[("ip", ip)]);
        send(
            "POST",
            &format!("{}/api/addIpToGreylist?result_mode=json", self.server.base),
            &[
                ("Authorization", format!("Bearer {token}")),
                ("Content-Type", content_type),
            ],
            Some(&body),
        )
    }

    /// A `GET` of a holder route with this holder's access token.
    pub fn get(&self, path: &str) -> Resp {
        send(
            "GET",
            &format!("{}{path}", self.server.base),
            &[("Authorization", format!("Bearer {}", self.token))],
            None,
        )
    }
}

/// `bytes` gzipped by the system's gzip, as an engine or an operator's script sends them.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success());
    output.stdout
}

/// Starts a chunked POST, sends `total` bytes of body, each `filler`, then waits
/// up to `wait` for the status line before it ends the body: what a server that
/// reads the whole body before it answers never sends.
pub fn status_before_the_body_ends(
    base: &str,
    path: &str,
    headers: &[(&str, &str)],
    (filler, total): (u8, usize),
    wait: Duration,
) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let mut stream = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    let mut head =
        format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    let chunk = vec![filler; 4096];
    // A server that answered at the limit may close the connection while the rest is
    // still being written: the writes stop there, and the answer is read all the same.
    let mut send_chunk = || -> std::io::Result<()> {
        stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
        stream.write_all(&chunk)?;
        stream.write_all(b"\r\n")
    };
    let _ = (0..total.div_ceil(chunk.len())).try_for_each(|_| send_chunk());
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut status = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut status)
        .ok()?;
    // Then the body ends as a well-behaved client's would, so the server reads it to its end
    // (unless it closed the connection already).
    let _ = stream.write_all(b"0\r\n\r\n");
    Some(status.trim_end().to_owned()).filter(|s| !s.is_empty())
}
