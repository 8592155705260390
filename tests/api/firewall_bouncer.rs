//! Debian's own `crowdsec-firewall-bouncer`, in nftables mode, in a network
//! namespace of the test's own (never the host's firewall): its set holds the
//! holder's list after its first pull and follows adds and removals. The
//! service stays on the host; a bridge made by this test carries the
//! bouncer's connections from the namespace's loopback to it.

use std::fs::{self, File};
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use super::helpers::{fresh_state_dir, poll, Mode, Server, TestApp};
use super::machines::{machine, post_alerts};

const FIREWALL_BOUNCER: &str = "/usr/bin/crowdsec-firewall-bouncer";

/// A network namespace held open by a sleeping process, gone with it.
struct Namespace {
    holder: Child,
}

impl Namespace {
    fn new() -> Self {
        let holder = Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare(1)");
        std::thread::sleep(Duration::from_millis(100));
        let namespace = Self { holder };
        let up = namespace.run("ip", &["link", "set", "lo", "up"]);
        assert!(
            up.status.success(),
            "a network namespace needs root: {}",
            String::from_utf8_lossy(&up.stderr)
        );
        namespace
    }

    fn path(&self) -> String {
        format!("/proc/{}/ns/net", self.holder.id())
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new("nsenter")
            .arg(format!("--net={}", self.path()))
            .arg(program)
            .args(args)
            .output()
            .unwrap()
    }

    /// A port on the namespace's loopback whose connections reach `target` on the host.
    fn bridge_to(&self, target: &str) -> u16 {
        let target = target.to_owned();
        let path = self.path();
        let (port_tx, port_rx) = mpsc::channel();
        let (conn_tx, conn_rx) = mpsc::channel::<TcpStream>();
        // This thread moves into the namespace: what it listens on is there.
        std::thread::spawn(move || {
            let ns = File::open(&path).unwrap();
            // SAFETY: setns on a namespace file this thread opened; it moves this thread only.
            let moved = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(moved, 0, "setns: {}", io::Error::last_os_error());
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            port_tx.send(listener.local_addr().unwrap().port()).unwrap();
            for inside in listener.incoming().flatten() {
                if conn_tx.send(inside).is_err() {
                    return;
                }
            }
        });
        // This one stays on the host, and connects there.
        std::thread::spawn(move || {
            for inside in conn_rx {
                let Ok(outside) = TcpStream::connect(&target) else {
                    continue;
                };
                let (mut a, mut b) = (inside.try_clone().unwrap(), outside.try_clone().unwrap());
                let (mut c, mut d) = (outside, inside);
                std::thread::spawn(move || {
                    let _ = io::copy(&mut a, &mut b);
                    let _ = b.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = io::copy(&mut c, &mut d);
                    let _ = d.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        port_rx.recv_timeout(Duration::from_secs(10)).unwrap()
    }

    /// The addresses in the bouncer's nftables set.
    fn set(&self) -> String {
        let listed = self.run(
            "nft",
            &["list", "set", "ip", "crowdsec", "crowdsec-blacklists"],
        );
        String::from_utf8_lossy(&listed.stdout).into_owned()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

struct Bouncer {
    child: Child,
    log: std::path::PathBuf,
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(namespace: &Namespace, port: u16, key: &str) -> Bouncer {
    assert!(
        Path::new(FIREWALL_BOUNCER).exists(),
        "{FIREWALL_BOUNCER} is missing: make test-tools installs it"
    );
    let dir = fresh_state_dir();
    fs::create_dir_all(&dir).unwrap();
    let config = dir.join("bouncer.yaml");
    fs::write(
        &config,
        format!(
            "mode: nftables\npid_dir: {dir}\nupdate_frequency: 1s\ndaemonize: false\n\
             log_mode: stdout\nlog_level: info\n\
             api_url: http://127.0.0.1:{port}/\napi_key: {key}\n\
             insecure_skip_verify: false\ndisable_ipv6: true\ndeny_action: DROP\ndeny_log: false\n\
             supported_decisions_types:\n  - ban\n\
             blacklists_ipv4: crowdsec-blacklists\nblacklists_ipv6: crowdsec6-blacklists\n\
             ipset_type: nethash\niptables_chains:\n  - INPUT\n\
             nftables:\n  ipv4:\n    enabled: true\n    set-only: false\n    table: crowdsec\n    chain: crowdsec-chain\n\
             \x20 ipv6:\n    enabled: false\n    set-only: false\n    table: crowdsec6\n    chain: crowdsec6-chain\n\
             prometheus:\n  enabled: false\n  listen_addr: 127.0.0.1\n  listen_port: 60601\n",
            dir = dir.display(),
        ),
    )
    .unwrap();
    let log = dir.join("bouncer.log");
    let out = File::create(&log).unwrap();
    let child = Command::new("nsenter")
        .arg(format!("--net={}", namespace.path()))
        .arg(FIREWALL_BOUNCER)
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .spawn()
        .expect("the firewall bouncer starts");
    Bouncer { child, log }
}

/// Waits until the bouncer's set `holds` (or, false, no longer holds) each address.
fn wait_for(namespace: &Namespace, bouncer: &Bouncer, addresses: &[&str], holds: bool) {
    let within = Duration::from_secs(30);
    let as_asked = |set: &String| addresses.iter().all(|a| set.contains(a) == holds);
    if let Err(set) = poll(
        within,
        Duration::from_millis(100),
        || namespace.set(),
        as_asked,
    ) {
        let log = fs::read_to_string(&bouncer.log).unwrap_or_default();
        if holds {
            panic!("the set should hold {addresses:?}:\n{set}\nbouncer:\n{log}");
        }
        panic!("the bouncer's set should no longer hold {addresses:?}:\n{set}\nbouncer:\n{log}");
    }
}

#[test]
fn debians_firewall_bouncer_keeps_its_nftables_set_equal_to_the_holders_list() {
    let server = Server::shared();
    let app = TestApp::on(&server);
    app.add_with(&[("ip", "23.94.40.1"), ("comment", "scanner")]);
    app.add_with(&[("ip", "23.94.40.2"), ("ttl", "3600")]);
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    let namespace = Namespace::new();
    let port = namespace.bridge_to(server.base.trim_start_matches("http://"));
    let bouncer = start(&namespace, port, &key);
    wait_for(&namespace, &bouncer, &["23.94.40.1", "23.94.40.2"], true);
    app.add("23.94.40.3");
    wait_for(&namespace, &bouncer, &["23.94.40.3"], true);
    app.remove("23.94.40.1");
    wait_for(&namespace, &bouncer, &["23.94.40.1"], false);
    wait_for(&namespace, &bouncer, &["23.94.40.2", "23.94.40.3"], true);
    // The host's own firewall was never touched.
    let host = Command::new("nft")
        .args(["list", "tables"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&host.stdout).contains("crowdsec"));
}

/// The whole hours of a timeout as nft prints it: 3 for `3h59m58s` and for `4h`
/// less a second, 0 for `59m59s`; a whole `4h` counts as 3, the hour it began in.
fn whole_hours(timeout: &str) -> u64 {
    let seconds: u64 = timeout
        .split_inclusive(['h', 'm', 's'])
        .map(|part| {
            let (n, unit) = part.split_at(part.len() - 1);
            n.parse::<u64>().unwrap_or(0)
                * match unit {
                    "h" => 3600,
                    "m" => 60,
                    _ => 1,
                }
        })
        .sum();
    seconds.saturating_sub(1) / 3600
}

/// The timeout the bouncer's set gives `address`, as nft prints it (`4h`, `59m59s`).
fn timeout_of(namespace: &Namespace, address: &str) -> Option<String> {
    let set = namespace.set();
    let at = set.find(&format!("{address} timeout "))? + address.len() + " timeout ".len();
    set[at..].split([' ', ',', '\n']).next().map(str::to_owned)
}

#[test]
fn debians_firewall_bouncer_takes_a_moved_expiry_not_only_a_new_address() {
    // Its own server: the engine's login counts against the shared server's
    // logins from this address.
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    app.add_with(&[("ip", "23.94.41.1"), ("ttl", "3600")]);
    let (_, key) = app.feed_token(json!({ "scope": "personal" }));
    let namespace = Namespace::new();
    let port = namespace.bridge_to(server.base.trim_start_matches("http://"));
    let bouncer = start(&namespace, port, &key);
    wait_for(&namespace, &bouncer, &["23.94.41.1"], true);
    // An hour, less the seconds the pull took (`59m59s`, or `1h`).
    let hours = |timeout: &Option<String>| timeout.as_deref().map(whole_hours);
    assert_eq!(hours(&timeout_of(&namespace, "23.94.41.1")), Some(0));
    // A CrowdSec engine's alert moves the expiry to the machine's four hours.
    let engine = machine(&app, "web-1");
    let alert = json!([{ "scenario": "crowdsecurity/ssh-bf", "remediation": true,
        "source": { "scope": "Ip", "value": "23.94.41.1" } }]);
    assert_eq!(post_alerts(&server, &engine, &alert).status, 201);
    let moved = poll(
        Duration::from_secs(30),
        Duration::from_millis(100),
        || timeout_of(&namespace, "23.94.41.1"),
        |timeout| {
            timeout
                .as_deref()
                .is_some_and(|t| t.starts_with("3h") || t == "4h")
        },
    );
    if let Err(timeout) = moved {
        panic!(
            "the set should hold 23.94.41.1 for four hours, not {timeout:?}:\n{}\nbouncer:\n{}",
            namespace.set(),
            fs::read_to_string(&bouncer.log).unwrap_or_default()
        );
    }
}

#[test]
fn debians_firewall_bouncer_drops_a_global_address_the_holder_allows_and_takes_it_back_after() {
    // Its own server: the global list's edit would reach other tests' deltas.
    let server = Server::own(&[]);
    let edit = server.edit_global_list(&["79.9.0.5", "79.9.0.6"], &[]);
    assert_eq!(edit.status, 200, "{}", edit.body);
    let app = TestApp::on(&server);
    let (_, key) = app.feed_token(json!({ "scope": "all" }));
    let namespace = Namespace::new();
    let port = namespace.bridge_to(server.base.trim_start_matches("http://"));
    let bouncer = start(&namespace, port, &key);
    wait_for(&namespace, &bouncer, &["79.9.0.5", "79.9.0.6"], true);
    let allow = |route: &str| {
        let resp = app.form(&format!("/api/{route}"), &[("ip", "79.9.0.5")], Mode::Json);
        assert_eq!(resp.status, 200, "{}", resp.body);
    };
    allow("addIpToAllowlist");
    wait_for(&namespace, &bouncer, &["79.9.0.5"], false);
    wait_for(&namespace, &bouncer, &["79.9.0.6"], true);
    allow("deleteIpFromAllowlist");
    wait_for(&namespace, &bouncer, &["79.9.0.5", "79.9.0.6"], true);
}

/// The addresses the bouncer's nftables set holds, sorted.
fn elements(set: &str) -> Vec<String> {
    let Some(listed) = set.split("elements = {").nth(1) else {
        return Vec::new();
    };
    let listed = listed.split('}').next().unwrap_or_default();
    let mut elements: Vec<String> = listed
        .split(',')
        .filter_map(|element| element.split_whitespace().next())
        .map(String::from)
        .collect();
    elements.sort();
    elements
}

/// Waits until the bouncer's set holds exactly `addresses`.
fn wait_for_exactly(namespace: &Namespace, bouncer: &Bouncer, addresses: &[&str]) {
    if let Err(set) = poll(
        Duration::from_secs(30),
        Duration::from_millis(100),
        || namespace.set(),
        |set| elements(set) == addresses,
    ) {
        let log = fs::read_to_string(&bouncer.log).unwrap_or_default();
        panic!("the bouncer on a cut token does not hold exactly the cut {addresses:?}:\n{set}\nbouncer:\n{log}");
    }
}

#[test]
fn debians_firewall_bouncer_on_a_cut_token_holds_exactly_the_cut_after_every_change() {
    let server = Server::own(&[]);
    let app = TestApp::on(&server);
    // Listed a hundred seconds apart: .1 first.
    for ip in ["23.94.44.1", "23.94.44.2", "23.94.44.3"] {
        assert_eq!(app.add(ip), format!("[{ip}] has been added to greylist"));
        server.advance(100);
    }
    let (_, key) = app.feed_token(json!({ "scope": "personal", "maxItems": 2 }));
    let namespace = Namespace::new();
    let port = namespace.bridge_to(server.base.trim_start_matches("http://"));
    let bouncer = start(&namespace, port, &key);
    wait_for_exactly(&namespace, &bouncer, &["23.94.44.2", "23.94.44.3"]);
    // A newer entry pushes the oldest out.
    app.add("23.94.44.9");
    server.advance(100);
    wait_for_exactly(&namespace, &bouncer, &["23.94.44.3", "23.94.44.9"]);
    // Its removal lets it back in; another removal lets the first in.
    app.remove("23.94.44.9");
    wait_for_exactly(&namespace, &bouncer, &["23.94.44.2", "23.94.44.3"]);
    app.remove("23.94.44.3");
    wait_for_exactly(&namespace, &bouncer, &["23.94.44.1", "23.94.44.2"]);
}
