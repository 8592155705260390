//! `contrib/greylist-ipset-sync` against the service: with a stand-in `ipset` as
//! strict as the real one (`tests/agent/ipset`), and with the real `ipset` in a
//! network namespace of the test's own, never the host's firewall.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::helpers::{fresh_state_dir, Server, TestApp};

/// Where the agent's `ipset` comes from.
enum Ipset {
    /// `tests/agent/ipset`, keeping its sets as files in this folder.
    StandIn(PathBuf),
    /// The real one, in the network namespace of this process (`unshare -n`).
    Real(Child),
}

/// One agent on one machine: its state folder and its ipset.
struct Agent {
    base: String,
    state: PathBuf,
    ipset: Ipset,
    /// `GREYLIST_SET_HEADROOM`, when the test sets it.
    headroom: Option<u32>,
}

const SET: &str = "blocked";
/// The set the agent keeps beside it for IPv6.
const SET6: &str = "blocked6";

impl Agent {
    fn new(base: &str, ipset: Ipset) -> Self {
        Self {
            base: base.to_owned(),
            state: fresh_state_dir().join("agent"),
            ipset,
            headroom: None,
        }
    }

    /// The agent leaving only this much room in a set it loads whole.
    fn with_headroom(mut self, members: u32) -> Self {
        self.headroom = Some(members);
        self
    }

    fn stand_in(base: &str) -> Self {
        let dir = fresh_state_dir().join("ipset");
        std::fs::create_dir_all(&dir).unwrap();
        Self::new(base, Ipset::StandIn(dir))
    }

    /// The real ipset in a network namespace made for this test. Not being root is a
    /// failure with its reason, not a skip: the test would prove nothing.
    fn real(base: &str) -> Self {
        let holder = Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare(1) from util-linux");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let agent = Self::new(base, Ipset::Real(holder));
        let probe = agent.ipset(&["list", "-n"]);
        assert!(
            probe.status.success(),
            "the real ipset in a network namespace of this test's own needs root (CAP_NET_ADMIN) and Debian's ipset: {}",
            String::from_utf8_lossy(&probe.stderr)
        );
        agent
    }

    fn path(&self) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let tools = match self.ipset {
            Ipset::StandIn(_) => root.join("tests/agent"),
            Ipset::Real(_) => root.join("tests/agent/netns"),
        };
        format!("{}:{}", tools.display(), std::env::var("PATH").unwrap())
    }

    fn environment(&self, command: &mut Command) {
        command.env("PATH", self.path());
        match &self.ipset {
            Ipset::StandIn(dir) => command.env("FAKE_IPSET_DIR", dir),
            Ipset::Real(holder) => command.env(
                "GREYLIST_TEST_NETNS",
                format!("/proc/{}/ns/net", holder.id()),
            ),
        };
    }

    /// Runs `ipset` as the agent would find it.
    fn ipset(&self, args: &[&str]) -> Output {
        let mut command = Command::new("ipset");
        command.args(args);
        self.environment(&mut command);
        command.output().unwrap()
    }

    fn run_against(&self, base: &str, feed_token: &str) -> Output {
        let mut command =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/greylist-ipset-sync"));
        command
            .arg(base)
            .arg(SET)
            .env("GREYLIST_FEED_TOKEN", feed_token)
            .env("GREYLIST_STATE_DIR", &self.state);
        if let Some(members) = self.headroom {
            command.env("GREYLIST_SET_HEADROOM", members.to_string());
        }
        self.environment(&mut command);
        command.output().unwrap()
    }

    fn run(&self, feed_token: &str) -> Output {
        self.run_against(&self.base, feed_token)
    }

    /// The IPv4 set's members, sorted; none when there is no set.
    fn set(&self) -> Vec<String> {
        self.members(SET)
    }

    /// Both sets' members, sorted, each checked to hold its own family only.
    fn both(&self) -> Vec<String> {
        let (v4, v6) = (self.members(SET), self.members(SET6));
        assert!(
            v4.iter().all(|m| !m.contains(':')),
            "the IPv4 set holds IPv4 alone: {v4:?}"
        );
        assert!(
            v6.iter().all(|m| m.contains(':')),
            "the IPv6 set holds IPv6 alone: {v6:?}"
        );
        let mut all: Vec<String> = v4.into_iter().chain(v6).collect();
        all.sort();
        all
    }

    /// A set's members, sorted; none when there is no set.
    fn members(&self, set: &str) -> Vec<String> {
        let listed = self.ipset(&["list", set]);
        let text = String::from_utf8_lossy(&listed.stdout);
        let mut members: Vec<String> = match &self.ipset {
            Ipset::StandIn(dir) => std::fs::read_to_string(dir.join(set))
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
            Ipset::Real(_) => text
                .lines()
                .skip_while(|line| *line != "Members:")
                .skip(1)
                .map(str::to_owned)
                .collect(),
        };
        members.sort();
        members
    }

    /// What the agent keeps between runs.
    fn remembered(&self) -> (String, String) {
        let read = |name| std::fs::read_to_string(self.state.join(name)).unwrap_or_default();
        (read("cursor"), read("etag"))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Ipset::Real(holder) = &mut self.ipset {
            let _ = holder.kill();
            let _ = holder.wait();
        }
    }
}

/// The feed a firewall of this holder should hold, sorted.
fn feed(app: &TestApp) -> Vec<String> {
    let mut entries: Vec<String> = app
        .feed("scope=all")
        .body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    entries.sort();
    entries
}

fn token(app: &TestApp) -> String {
    app.create_feed_token().json()["feedToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The agent through a holder's changes, an allow-list edit and its undoing, an
/// operator's edit (a reset, so a second whole load onto the set already there),
/// a lost set, and an expiry.
fn keeps_the_set_equal_to_the_feed(agent: &Agent, server: &Server, app: &TestApp) {
    let token = token(app);
    let run = |what: &str| {
        succeeded(&agent.run(&token), what);
        assert_eq!(agent.both(), feed(app), "{what}");
    };
    app.add("81.0.0.1");
    app.add("81.0.0.2");
    app.add("2a00:1450:4001:80b::1");
    let expiring = app.add_with(&[("ip", "81.0.0.3"), ("ttl", "60")]);
    assert_eq!(expiring.result(), "[81.0.0.3] has been added to greylist");
    run("the first run loads the whole feed");
    assert!(agent.set().contains(&"81.0.0.3".to_owned()));

    app.add("81.0.0.4");
    app.remove("81.0.0.1");
    app.add("2606:4700::1111");
    app.remove("2a00:1450:4001:80b::1");
    run("adds and removes arrive as deltas, each in its family's set");
    assert_eq!(agent.members(SET6), ["2606:4700::1111"]);
    run("nothing changed");

    assert_eq!(server.edit_allow_list(&["81.0.0.2"], &[]).status, 200);
    run("an allow-list edit arrives as a delta");
    assert!(!agent.set().contains(&"81.0.0.2".to_owned()));
    assert_eq!(server.edit_allow_list(&[], &["81.0.0.2"]).status, 200);
    run("and so does taking it back");
    assert!(agent.set().contains(&"81.0.0.2".to_owned()));

    assert_eq!(server.edit_global_list(&["82.2.2.2"], &[]).status, 200);
    run("a new version of the global list loads the whole feed again, onto the set that is there");

    assert!(agent.ipset(&["destroy", SET]).status.success());
    run("a set lost since the last run (a reboot) is loaded whole again");
    assert!(agent.ipset(&["destroy", SET6]).status.success());
    run("and so is the IPv6 set");

    server.advance(61);
    run("an expiry arrives as a delta");
    assert!(!agent.set().contains(&"81.0.0.3".to_owned()));
}

#[test]
fn the_agent_keeps_a_stand_in_set_equal_to_the_feed() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    assert_eq!(
        server
            .replace_list("global-list", "82.0.0.0/16\n82.1.1.1\n")
            .status,
        200
    );
    let agent = Agent::stand_in(&server.base);
    keeps_the_set_equal_to_the_feed(&agent, &server, &app);
    let Ipset::StandIn(dir) = &agent.ipset else {
        unreachable!()
    };
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    assert!(
        log.contains("restore") && log.contains("swap blocked.new blocked"),
        "{log}"
    );
    assert!(log.contains("del blocked 81.0.0.1 -exist"), "{log}");
}

#[test]
fn the_agent_keeps_a_real_ipset_equal_to_the_feed_in_a_namespace_of_its_own() {
    let server = Server::own(&[("IPV6", "on")]);
    let app = TestApp::on(&server);
    assert_eq!(
        server
            .replace_list("global-list", "82.0.0.0/16\n82.1.1.1\n")
            .status,
        200
    );
    let agent = Agent::real(&server.base);
    keeps_the_set_equal_to_the_feed(&agent, &server, &app);
    let header = String::from_utf8_lossy(&agent.ipset(&["list", SET]).stdout).into_owned();
    assert!(header.contains("Type: hash:net"), "{header}");
    let header6 = String::from_utf8_lossy(&agent.ipset(&["list", SET6]).stdout).into_owned();
    assert!(header6.contains("family inet6"), "{header6}");
}

/// A set loaded whole with little room, then a delta that would pass its maxelem:
/// the agent loads the whole feed into a larger set and says so, where a set that
/// kept its bound would refuse the additions ("Hash is full") on every later run.
fn grows_past_maxelem(agent: &Agent, app: &TestApp) {
    let token = token(app);
    app.add("84.0.0.1");
    app.add("84.0.0.2");
    succeeded(&agent.run(&token), "the first run");
    let bound = |agent: &Agent| {
        let terse = String::from_utf8_lossy(&agent.ipset(&["list", "-t", SET]).stdout).into_owned();
        terse
            .split_whitespace()
            .skip_while(|word| *word != "maxelem")
            .nth(1)
            .and_then(|word| word.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no maxelem in {terse}"))
    };
    let first = bound(agent);
    let feed_now = feed(app);
    assert_eq!(agent.set(), feed_now);
    for n in 0..first - feed_now.len() + 1 {
        app.add(&format!("84.0.1.{n}"));
    }
    let grown = agent.run(&token);
    succeeded(&grown, "the run whose delta passes maxelem");
    assert!(
        String::from_utf8_lossy(&grown.stdout).contains("into a larger set"),
        "the agent says it reloaded: {}",
        String::from_utf8_lossy(&grown.stdout)
    );
    assert_eq!(
        agent.set(),
        feed(app),
        "the larger set holds the whole feed"
    );
    assert!(bound(agent) > first, "the set's maxelem grew");
    app.add("84.0.2.1");
    succeeded(&agent.run(&token), "a delta into the larger set");
    assert_eq!(agent.set(), feed(app));
}

#[test]
fn the_agent_reloads_into_a_larger_stand_in_set_when_a_delta_would_pass_maxelem() {
    let server = Server::own(&[]);
    grows_past_maxelem(
        &Agent::stand_in(&server.base).with_headroom(1),
        &TestApp::on(&server),
    );
}

#[test]
fn the_agent_reloads_into_a_larger_real_ipset_when_a_delta_would_pass_maxelem() {
    let server = Server::own(&[]);
    grows_past_maxelem(
        &Agent::real(&server.base).with_headroom(1),
        &TestApp::on(&server),
    );
}

/// Answers every connection with `status` and a short body, as a failing server would.
fn failing_server(status: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n");
        }
    });
    base
}

#[test]
fn a_refused_token_a_server_error_or_no_network_leave_the_set_as_it_was() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add("83.0.0.1");
    let agent = Agent::stand_in(&server.base);
    let token = token(&app);
    succeeded(&agent.run(&token), "the first run");
    app.add("83.0.0.2");
    let (set, remembered) = (agent.set(), agent.remembered());
    assert_eq!(set, ["83.0.0.1"]);

    let unused_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let failures = [
        (
            agent.run("glf_0000000000000000000000000000000000000000000000000000000000000000"),
            "refused (401)",
        ),
        (
            agent.run_against(&failing_server("503 Service Unavailable"), &token),
            "answered HTTP 503",
        ),
        (
            agent.run_against(&failing_server("500 Internal Server Error"), &token),
            "answered HTTP 500",
        ),
        (
            agent.run_against(&format!("http://127.0.0.1:{unused_port}"), &token),
            "network error",
        ),
    ];
    for (output, message) in failures {
        assert!(
            !output.status.success(),
            "{message}: the agent exits non-zero"
        );
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(message),
            "{message}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            (agent.set(), agent.remembered()),
            (set.clone(), remembered.clone()),
            "{message}: the set and the cursor are as they were"
        );
    }
    succeeded(&agent.run(&token), "a run after the failures");
    assert_eq!(
        agent.set(),
        ["83.0.0.1", "83.0.0.2"],
        "the changes missed meanwhile arrive"
    );
}
