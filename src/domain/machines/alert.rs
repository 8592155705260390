//! What a CrowdSec engine's alerts do. The engine posts what its scenarios
//! detected (`POST /v1/alerts`, a JSON array): each alert a scenario, a source,
//! whether it asks for remediation, or decisions made on its host. Each alert is
//! read on its own and leniently: one the service cannot read, or will not act
//! on, is acknowledged and changes nothing, since a refusal would block the
//! engine's buffer for good. What an alert asks becomes a report of the address
//! (as `reportIp` takes it) and an add for the machine's ttl, or an add per
//! decision; the holder's object applies them by the rules of `reportIp` and
//! `addIpToGreylist` (`take_alert`), except that an address already listed may
//! have its expiry moved later (`holder::extend`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::holder::entry::{
    EntryDetails, Expiry, MAX_COMMENT_CHARS, MAX_TTL_SECONDS, MIN_TTL_SECONDS,
};
use crate::domain::holder::list::PersonalOutcome;
use crate::domain::holder::list::{extend, perform, Limits, ListCall, Operation};
use crate::domain::machines::credentials::{AlertCounts, MachineSettings};
use crate::domain::net::address::{Ipv6, Ipv6Prefix, PublicIp};
use crate::domain::network::report::{
    perform_report, Categories, Category, ReportCall, ReportOutcome, ReportStore,
};
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::precedence::{weigh_then_perform, Holding, Weighing};
use crate::domain::time::UnixTime;

/// The alerts past the ones a request takes, as the log line gives them after their count.
const PAST_THE_MOST: &str = " past the 100, or the first MiB, a request takes";
/// Decisions one request takes, over all its alerts: `cscli decisions import`
/// puts thousands in one alert. The rest are left, as an alert past `MAX_ALERTS` is.
pub const MAX_DECISIONS: usize = 1000;
/// An alert as the engine sends it: the fields this service reads, each of which
/// may be missing or `null` (Go leaves `remediation` out when it is false).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AlertIn {
    pub scenario: Option<String>,
    pub source: Option<SourceIn>,
    pub remediation: Option<bool>,
    pub simulated: Option<bool>,
    pub decisions: Option<Vec<DecisionIn>>,
}

/// What an alert is about: its scope (`Ip`, `Range`, a country...) and value.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct SourceIn {
    pub scope: Option<String>,
    pub value: Option<String>,
    pub ip: Option<String>,
}

/// A decision an alert carries, as `cscli decisions add` makes them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DecisionIn {
    pub scope: Option<String>,
    pub value: Option<String>,
    /// As Go prints a duration (`4h`, `3h59m59s`).
    pub duration: Option<String>,
    pub scenario: Option<String>,
    pub simulated: Option<bool>,
}

/// One element of the array an engine posts: an alert, or something this
/// service cannot read as one (a field of another type), which it acknowledges.
#[derive(Debug)]
pub enum PostedAlert {
    Alert(AlertIn),
    Unreadable,
}

impl<'de> Deserialize<'de> for PostedAlert {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Any JSON value is an element; only one of the alert's shape is an alert.
        let value = serde_json::Value::deserialize(deserializer)?;
        let alert = AlertIn::deserialize(value);
        Ok(alert.map_or(Self::Unreadable, Self::Alert))
    }
}

/// The ids the Local API answers a post with, one per element posted, from the
/// first the holder's object gave: written one at a time, never held as a list.
pub struct AlertIds {
    pub first: u64,
    pub total: u64,
}

impl Serialize for AlertIds {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // As strings: the engine reads no numbers.
        serializer.collect_seq((self.first..self.first + self.total).map(|id| id.to_string()))
    }
}

/// Why an alert changes nothing, before the holder's object sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not an alert of the shape the Local API takes.
    Unreadable,
    /// The engine only simulates its scenario: it asks for nothing.
    Simulated,
    /// About something other than one address (a range, a country, a user name).
    Scope,
    /// The address is invalid or not public (or IPv6 while `IPV6` is off).
    NotPublic,
    /// Its decisions were all of those kinds, or past `MAX_DECISIONS`.
    NoDecision,
}

impl Skip {
    const ALL: [Self; 5] = [
        Self::Unreadable,
        Self::Simulated,
        Self::Scope,
        Self::NotPublic,
        Self::NoDecision,
    ];

    /// The reason as the log line gives it, after its count.
    fn reason(self) -> &'static str {
        match self {
            Self::Unreadable => " unreadable",
            Self::Simulated => " simulated",
            Self::Scope => " not about one address",
            Self::NotPublic => " not a public address",
            Self::NoDecision => " no decision to take",
        }
    }
}

/// What one request's alerts came to nothing for before the holder's object saw
/// them, by reason, for the request's log line: the engine is told nothing (every
/// alert is acknowledged), and the machine's counts say how many, not why.
/// `None` when every alert was taken.
pub fn skipped(skips: &[Skip], beyond: u64) -> Option<String> {
    let mut line = String::new();
    let mut part = |count: u64, what: &str| {
        if count > 0 {
            line.push_str(if line.is_empty() {
                "alerts ignored: "
            } else {
                ", "
            });
            line.push_str(&count.to_string());
            line.push_str(what);
        }
    };
    for kind in Skip::ALL {
        part(
            skips.iter().filter(|&&skip| skip == kind).count() as u64,
            kind.reason(),
        );
    }
    part(beyond, PAST_THE_MOST);
    (!line.is_empty()).then_some(line)
}

/// What one alert asks of the holder's lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifiedAlert {
    /// What a scenario detected: a report of the address in the scenario's
    /// categories, and, when the engine asks for remediation, an add for the
    /// machine's ttl (the scenario as its comment).
    Detection {
        ip: PublicIp,
        categories: Categories,
        remediation: bool,
        scenario: Option<String>,
    },
    /// Decisions made on the engine's host: an add of each address for its
    /// duration, and no report (nothing was detected).
    Decisions(Vec<AlertDecision>),
    Ignored(Skip),
}

/// One decision as an add: the address, for how long, and its scenario as the comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertDecision {
    pub ip: PublicIp,
    pub seconds: u64,
    pub scenario: Option<String>,
}

/// Reads the alerts of one request, each in order as what it asks. The caller
/// keeps at most `MAX_ALERTS` of them; decisions past `MAX_DECISIONS` over the
/// whole request are left.
pub fn classify(sent: Vec<PostedAlert>, ipv6: Ipv6) -> Vec<ClassifiedAlert> {
    let mut decisions_left = MAX_DECISIONS;
    sent.into_iter()
        .map(|sent| match sent {
            PostedAlert::Alert(alert) => read(alert, ipv6, &mut decisions_left),
            PostedAlert::Unreadable => ClassifiedAlert::Ignored(Skip::Unreadable),
        })
        .collect()
}

fn read(alert: AlertIn, ipv6: Ipv6, decisions_left: &mut usize) -> ClassifiedAlert {
    if alert.simulated == Some(true) {
        return ClassifiedAlert::Ignored(Skip::Simulated);
    }
    let scenario = alert.scenario.as_deref().map(comment);
    match alert.decisions {
        // `cscli decisions add` and its kin: an alert that carries what to do.
        Some(decisions) if !decisions.is_empty() => {
            let mut decided = Vec::new();
            for decision in decisions {
                if *decisions_left == 0 {
                    break;
                }
                *decisions_left -= 1;
                decided.extend(read_decision(decision, ipv6, scenario.as_deref()));
            }
            if decided.is_empty() {
                ClassifiedAlert::Ignored(Skip::NoDecision)
            } else {
                ClassifiedAlert::Decisions(decided)
            }
        }
        _ => {
            let Some(source) = alert.source else {
                return ClassifiedAlert::Ignored(Skip::Scope);
            };
            if !is_ip_scope(source.scope.as_deref()) {
                return ClassifiedAlert::Ignored(Skip::Scope);
            }
            let value = source.value.or(source.ip).unwrap_or_default();
            match PublicIp::parse(&value, ipv6) {
                Ok(given) => ClassifiedAlert::Detection {
                    ip: given.ip,
                    categories: categories_of(alert.scenario.as_deref().unwrap_or_default()),
                    remediation: alert.remediation.unwrap_or(false),
                    scenario,
                },
                Err(_) => ClassifiedAlert::Ignored(Skip::NotPublic),
            }
        }
    }
}

/// A decision as an add, unless it is simulated, of another scope, for an
/// address that is not public, or of a duration that is not one or has ended.
/// Its duration is taken between an add's bounds: at least a minute, at most a year.
fn read_decision(
    decision: DecisionIn,
    ipv6: Ipv6,
    alert_scenario: Option<&str>,
) -> Option<AlertDecision> {
    if decision.simulated == Some(true) || !is_ip_scope(decision.scope.as_deref()) {
        return None;
    }
    let ip = PublicIp::parse(decision.value.as_deref()?, ipv6).ok()?.ip;
    let seconds = go_seconds(decision.duration.as_deref()?)?;
    let seconds = u64::try_from(seconds).ok().filter(|&s| s > 0)?;
    Some(AlertDecision {
        ip,
        seconds: seconds.clamp(MIN_TTL_SECONDS, MAX_TTL_SECONDS),
        scenario: decision
            .scenario
            .as_deref()
            .map(comment)
            .or_else(|| alert_scenario.map(str::to_owned)),
    })
}

/// Whether a scope names one address: CrowdSec writes `Ip`, and its tools
/// take any case.
fn is_ip_scope(scope: Option<&str>) -> bool {
    scope.is_some_and(|scope| scope.trim().eq_ignore_ascii_case("ip"))
}

/// A scenario as an entry's comment: at most `MAX_COMMENT_CHARS` characters.
fn comment(scenario: &str) -> String {
    scenario.chars().take(MAX_COMMENT_CHARS).collect()
}

/// How a row of the table matches a scenario's name.
#[derive(Clone, Copy)]
enum Match {
    Starts(&'static str),
    Contains(&'static str),
}

/// The categories of a report from a scenario's name, read without its author
/// (`crowdsecurity/ssh-bf` is `ssh-bf`) and in lower case. Every row that matches
/// adds its category; a name no row matches is `other`. So `ssh-bf` is ssh and
/// brute-force, `http-probing` web, `postfix-spam` mail and spam.
///
/// | the name | category |
/// |---|---|
/// | starts with `ssh` | ssh |
/// | starts with `http-`, `nginx-`, `apache` | web |
/// | starts with `exim`, `postfix`, `dovecot`, `mail-` | mail |
/// | contains `spam` | spam |
/// | contains `scan` | scan |
/// | contains `-bf`, `_bf`, `bruteforce`, `user-enum`, `user_enum` | brute-force |
/// | contains `ddos`, `req-limit` | ddos |
const CATEGORY_TABLE: [(Match, Category); 17] = [
    (Match::Starts("ssh"), Category::Ssh),
    (Match::Starts("http-"), Category::Web),
    (Match::Starts("nginx-"), Category::Web),
    (Match::Starts("apache"), Category::Web),
    (Match::Starts("exim"), Category::Mail),
    (Match::Starts("postfix"), Category::Mail),
    (Match::Starts("dovecot"), Category::Mail),
    (Match::Starts("mail-"), Category::Mail),
    (Match::Contains("spam"), Category::Spam),
    (Match::Contains("scan"), Category::Scan),
    (Match::Contains("-bf"), Category::BruteForce),
    (Match::Contains("_bf"), Category::BruteForce),
    (Match::Contains("bruteforce"), Category::BruteForce),
    (Match::Contains("user-enum"), Category::BruteForce),
    (Match::Contains("user_enum"), Category::BruteForce),
    (Match::Contains("ddos"), Category::Ddos),
    (Match::Contains("req-limit"), Category::Ddos),
];

/// The categories `CATEGORY_TABLE` gives a scenario's name.
pub fn categories_of(scenario: &str) -> Categories {
    let name = scenario
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let categories = CATEGORY_TABLE
        .iter()
        .filter(|(how, _)| match *how {
            Match::Starts(prefix) => name.starts_with(prefix),
            Match::Contains(part) => name.contains(part),
        })
        .fold(Categories::default(), |set, &(_, category)| {
            set.with(category)
        });
    if categories == Categories::default() {
        Categories::default().with(Category::Other)
    } else {
        categories
    }
}

/// The whole seconds of a duration as Go writes one (`4h`, `3h59m59s`, `1.5h`,
/// `-3s`, `250ms`), rounded toward zero; `None` when the text is not one.
pub fn go_seconds(text: &str) -> Option<i64> {
    const SECOND: u128 = 1_000_000_000;
    let text = text.trim();
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        rest = after;
        let unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => SECOND,
            "m" => 60 * SECOND,
            "h" => 3600 * SECOND,
            _ => return None,
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        nanos = nanos.checked_add(whole.checked_mul(unit)?)?;
        let mut scale = unit;
        for digit in fraction.bytes() {
            if !digit.is_ascii_digit() {
                return None;
            }
            scale /= 10;
            nanos = nanos.checked_add(u128::from(digit - b'0') * scale)?;
        }
    }
    let seconds = i64::try_from(nanos / SECOND).ok()?;
    Some(if negative { -seconds } else { seconds })
}

/// One alert as the Worker hands it to the holder's object, once the
/// operator's lists weighed it: the report it makes and the adds it asks for.
/// An alert that asks nothing (ignored, or an operator's list answered it) is
/// an empty call, so that the object counts every alert.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertCall {
    #[serde(default)]
    pub report: Option<ReportCall>,
    #[serde(default)]
    pub adds: Vec<AlertAdd>,
}

/// An add an alert asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertAdd {
    pub ip: PublicIp,
    #[serde(default)]
    pub prefix: Ipv6Prefix,
    /// How long it stands, in seconds; none for the machine's own ttl (a detection's).
    #[serde(default)]
    pub ttl: Option<u64>,
    #[serde(default)]
    pub comment: Option<String>,
    /// Whether the global challenge list holds the address, as the Worker found.
    #[serde(default)]
    pub global_challenge: bool,
}

/// What one alert took: whether it reported, and its adds taken (an entry
/// added, or one listed already given a later expiry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlertTaken {
    pub reported: bool,
    pub added: u32,
}

impl AlertTaken {
    /// The counts of one alert that took this.
    pub fn counts(self) -> AlertCounts {
        let took = self.reported || self.added > 0;
        AlertCounts {
            alerts: 1,
            reported: u64::from(self.reported),
            added: u64::from(self.added),
            ignored: u64::from(!took),
        }
    }
}

/// Applies one alert of a machine with `settings`, in the holder's object:
/// its report as `reportIp` takes one (the holder's allow list refuses it, the
/// day's reports count it), then, when the machine adds, each add as
/// `addIpToGreylist` takes one (the holder's allow list, the global list as the
/// Worker found it, the day's additions), except that an address already
/// listed has its expiry moved later (`extend`). `own_allow` says whether the
/// holder's allow list holds an address; `client` is the engine's address, for
/// the history.
pub fn take_alert<S: ReportStore>(
    store: &mut S,
    call: &AlertCall,
    settings: MachineSettings,
    own_allow: impl Fn(PublicIp) -> bool,
    client: Option<&str>,
    (now, limits): (UnixTime, Limits),
) -> Result<AlertTaken, S::Error> {
    // A list stronger than the personal list that governs the address takes nothing.
    let reported = match &call.report {
        Some(report) => {
            let holding = Holding {
                global_challenge: false,
                own_allow: own_allow(report.ip),
            };
            weigh_then_perform(
                Weighing::Report,
                holding,
                |list| list.report_outcome().map(|_| false),
                || {
                    let from = ReporterNetwork::of_client(client);
                    let answer = perform_report(store, report, from, (now, limits))?;
                    Ok(answer.outcome == ReportOutcome::Reported)
                },
            )?
        }
        None => false,
    };
    let mut added = 0;
    for add in call.adds.iter().filter(|_| settings.adds) {
        let holding = Holding {
            global_challenge: add.global_challenge,
            own_allow: own_allow(add.ip),
        };
        let ttl = add.ttl.unwrap_or(settings.ttl);
        let listing = ListCall {
            operation: Operation::Add,
            ip: add.ip,
            prefix: add.prefix,
            details: EntryDetails {
                expiry: Some(Expiry::After(ttl)),
                comment: add.comment.clone(),
            },
            client: client.map(str::to_owned),
            global_challenge: add.global_challenge,
        };
        let took = weigh_then_perform(
            Operation::Add,
            holding,
            |list| list.object_outcome(Operation::Add.into()).map(|_| false),
            || match perform(store, &listing, now, limits)?.outcome {
                PersonalOutcome::Added => Ok(true),
                PersonalOutcome::AlreadyListed => extend(
                    store,
                    add.ip,
                    add.prefix,
                    now.plus(ttl),
                    (client, limits),
                    now,
                ),
                _ => Ok(false),
            },
        )?;
        added += u32::from(took);
    }
    Ok(AlertTaken { reported, added })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::decision::go_duration;
    use crate::domain::holder::list::memory::MemoryStore;
    use crate::domain::holder::list::ListStore;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn alerts(json: &str) -> Vec<ClassifiedAlert> {
        classify(
            serde_json::from_str::<Vec<PostedAlert>>(json).unwrap(),
            Ipv6::Off,
        )
    }

    fn ip(text: &str) -> PublicIp {
        text.parse().unwrap()
    }

    fn categories(names: &str) -> Categories {
        Categories::parse(names).unwrap()
    }

    #[test]
    fn a_posts_ids_are_one_string_per_element_from_the_first() {
        let ids = AlertIds {
            first: 41,
            total: 3,
        };
        assert_eq!(serde_json::to_string(&ids).unwrap(), r#"["41","42","43"]"#);
        let none = AlertIds { first: 7, total: 0 };
        assert_eq!(serde_json::to_string(&none).unwrap(), "[]");
    }

    #[test]
    fn the_scenario_table_names_each_categories() {
        for (scenario, expected) in [
            ("crowdsecurity/ssh-bf", "ssh, brute-force"),
            ("crowdsecurity/ssh-slow-bf", "ssh, brute-force"),
            ("crowdsecurity/sshesame-honeypot", "ssh"),
            ("crowdsecurity/http-probing", "web"),
            ("crowdsecurity/http-bf-wordpress_bf", "web, brute-force"),
            ("crowdsecurity/nginx-req-limit-exceeded", "web, ddos"),
            ("crowdsecurity/apache_log4j2_cve-2021-44228", "web"),
            ("crowdsecurity/postfix-spam", "mail, spam"),
            ("crowdsecurity/exim-bf", "mail, brute-force"),
            ("crowdsecurity/iptables-scan-multi_ports", "scan"),
            ("crowdsecurity/asterisk_user_enum", "brute-force"),
            ("crowdsecurity/CVE-2021-4034", "other"),
            ("SSH-BF", "ssh, brute-force"),
            ("", "other"),
        ] {
            assert_eq!(categories_of(scenario), categories(expected), "{scenario}");
        }
    }

    #[test]
    fn a_detection_of_a_public_address_is_a_report_and_asks_for_remediation_as_told() {
        let asked = alerts(
            r#"[{"scenario": "crowdsecurity/ssh-bf", "source": {"ip": "8.8.8.8", "scope": "Ip",
                 "value": "8.8.8.8"}, "events_count": 8, "events": [{"meta": [{"key": "a"}]}],
                 "remediation": true, "simulated": false, "decisions": null},
                {"scenario": "crowdsecurity/http-probing", "source": {"scope": "ip",
                 "value": " 9.9.9.9 "}}]"#,
        );
        assert_eq!(
            asked,
            [
                ClassifiedAlert::Detection {
                    ip: ip("8.8.8.8"),
                    categories: categories("ssh, brute-force"),
                    remediation: true,
                    scenario: Some("crowdsecurity/ssh-bf".to_owned()),
                },
                ClassifiedAlert::Detection {
                    ip: ip("9.9.9.9"),
                    categories: categories("web"),
                    remediation: false,
                    scenario: Some("crowdsecurity/http-probing".to_owned()),
                }
            ]
        );
    }

    #[test]
    fn what_came_to_nothing_is_told_by_reason_in_a_fixed_order() {
        use Skip::{NotPublic, Scope, Simulated, Unreadable};
        assert_eq!(skipped(&[], 0), None);
        use crate::domain::machines::posted::{MAX_ALERTS, MAX_KEPT_BYTES};
        assert!(PAST_THE_MOST.contains(&format!(" {MAX_ALERTS},")));
        assert!(PAST_THE_MOST.contains(" first MiB,") && MAX_KEPT_BYTES == 1 << 20);
        assert_eq!(
            skipped(&[NotPublic, Scope, Unreadable, NotPublic, Simulated], 3).as_deref(),
            Some(
                "alerts ignored: 1 unreadable, 1 simulated, 1 not about one address, \
                 2 not a public address, 3 past the 100, or the first MiB, a request takes"
            )
        );
    }

    #[test]
    fn simulated_other_scopes_private_invalid_and_unreadable_alerts_ask_nothing() {
        use Skip::{NotPublic, Scope, Simulated, Unreadable};
        for (alert, skip) in [
            (
                r#"{"source": {"scope": "Ip", "value": "8.8.8.8"}, "simulated": true}"#,
                Simulated,
            ),
            (
                r#"{"source": {"scope": "Range", "value": "8.8.8.0/24"}}"#,
                Scope,
            ),
            (r#"{"source": {"scope": "Country", "value": "FR"}}"#, Scope),
            (r#"{"scenario": "s"}"#, Scope),
            (
                r#"{"source": {"scope": "Ip", "value": "10.0.0.1"}}"#,
                NotPublic,
            ),
            (
                r#"{"source": {"scope": "Ip", "value": "8.8.8"}}"#,
                NotPublic,
            ),
            (
                r#"{"source": {"scope": "Ip", "value": "2a00:1450::1"}}"#,
                NotPublic,
            ),
            (
                r#"{"scenario": 7, "source": {"scope": "Ip", "value": "8.8.8.8"}}"#,
                Unreadable,
            ),
            (r#""an alert""#, Unreadable),
            ("null", Unreadable),
            ("3", Unreadable),
        ] {
            let asked = alerts(&format!("[{alert}]"));
            assert_eq!(
                asked,
                [ClassifiedAlert::Ignored(skip)],
                "{alert}: asks nothing, ignored for its reason"
            );
        }
        // With IPV6 on, an IPv6 source is an address like any other.
        let sent = r#"[{"source": {"scope": "Ip", "value": "2a00:1450:4001:80b::200e"}}]"#;
        let v6 = classify(serde_json::from_str(sent).unwrap(), Ipv6::On);
        assert!(matches!(v6[0], ClassifiedAlert::Detection { .. }), "{v6:?}");
    }

    #[test]
    fn an_alert_with_decisions_is_an_add_per_decision_for_its_duration_between_an_adds_bounds() {
        let asked = alerts(
            r#"[{"scenario": "manual 'ban' from 'host'",
                 "source": {"scope": "Ip", "value": "8.8.8.8"}, "remediation": true, "decisions": [
                   {"scope": "Ip", "value": "8.8.8.8", "duration": "4h", "type": "ban"},
                   {"scope": "Ip", "value": "8.8.4.4", "duration": "30s", "scenario": "mine"},
                   {"scope": "Ip", "value": "1.1.1.1", "duration": "87600h"},
                   {"scope": "Ip", "value": "1.0.0.1", "duration": "-3s"},
                   {"scope": "Ip", "value": "9.9.9.9", "duration": "4h", "simulated": true},
                   {"scope": "Range", "value": "9.9.9.0/24", "duration": "4h"},
                   {"scope": "Ip", "value": "192.168.1.1", "duration": "4h"},
                   {"scope": "Ip", "value": "9.9.9.10", "duration": "soon"}]},
                {"decisions": [{"scope": "Range", "value": "9.9.9.0/24", "duration": "4h"}]}]"#,
        );
        let manual = Some("manual 'ban' from 'host'".to_owned());
        let decided = |text, seconds, scenario: &Option<String>| AlertDecision {
            ip: ip(text),
            seconds,
            scenario: scenario.clone(),
        };
        assert_eq!(
            asked,
            [
                ClassifiedAlert::Decisions(vec![
                    decided("8.8.8.8", 14_400, &manual),
                    decided("8.8.4.4", 60, &Some("mine".to_owned())),
                    decided("1.1.1.1", MAX_TTL_SECONDS, &manual),
                ]),
                ClassifiedAlert::Ignored(Skip::NoDecision),
            ]
        );
    }

    #[test]
    fn decisions_past_the_requests_budget_are_left() {
        let decision = r#"{"scope": "Ip", "value": "8.8.8.8", "duration": "1h"}"#;
        let many = vec![decision; MAX_DECISIONS - 1].join(",");
        let json = format!(
            r#"[{{"decisions": [{many}]}}, {{"decisions": [{decision}, {decision}]}},
                {{"decisions": [{decision}]}}]"#
        );
        let asked = alerts(&json);
        let counted: Vec<usize> = asked
            .iter()
            .map(|asked| match asked {
                ClassifiedAlert::Decisions(decided) => decided.len(),
                _ => 0,
            })
            .collect();
        assert_eq!(counted, [MAX_DECISIONS - 1, 1, 0]);
        assert_eq!(asked[2], ClassifiedAlert::Ignored(Skip::NoDecision));
    }

    #[test]
    fn go_durations_read_back_as_go_prints_them() {
        for seconds in [0, 1, 59, 60, 3599, 3600, 14_400, 604_799, -3, -3661] {
            let printed = go_duration(seconds);
            assert_eq!(go_seconds(&printed), Some(seconds), "{printed}");
        }
        for (text, seconds) in [
            ("4h", 14_400),
            ("1.5h", 5400),
            ("1h30m", 5400),
            ("250ms", 0),
            ("2.9s", 2),
            ("90000000us", 90),
            ("+5m", 300),
            (" 10s ", 10),
        ] {
            assert_eq!(go_seconds(text), Some(seconds), "{text}");
        }
        let huge = "99999999999999999999999999999999999999h";
        for bad in ["", "4", "h", "4d", "1..5h", ".h", "-", "4h 5m", huge] {
            assert_eq!(go_seconds(bad), None, "{bad:?}");
        }
    }

    fn detection(text: &str) -> AlertCall {
        AlertCall {
            report: Some(ReportCall::of(text, "ssh")),
            adds: vec![AlertAdd {
                ip: ip(text),
                prefix: Ipv6Prefix::Whole,
                ttl: None,
                comment: Some("crowdsecurity/ssh-bf".to_owned()),
                global_challenge: false,
            }],
        }
    }

    /// What `call` takes at `at`, for a holder whose allow list holds nothing.
    fn take(
        store: &mut MemoryStore,
        call: &AlertCall,
        settings: MachineSettings,
        (at, limits): (UnixTime, Limits),
    ) -> (bool, u32) {
        let client = Some("203.0.114.9");
        let taken = take_alert(store, call, settings, |_| false, client, (at, limits)).unwrap();
        (taken.reported, taken.added)
    }

    #[test]
    fn a_detection_reports_and_adds_for_the_machines_ttl_and_a_repeat_extends_never_shortens() {
        let mut store = MemoryStore::default();
        let settings = MachineSettings::default();
        let limits = Limits::default();
        let expiry = |store: &MemoryStore| {
            let entry = store.entry(ip("8.8.8.8").into()).unwrap().unwrap();
            (entry.added_at, entry.expires_at)
        };
        let first = take(&mut store, &detection("8.8.8.8"), settings, (NOW, limits));
        assert_eq!(first, (true, 1));
        assert_eq!(expiry(&store), (NOW, Some(NOW.plus(14_400))));
        let comment = store.entries.values().next().unwrap().comment.clone();
        assert_eq!(comment.as_deref(), Some("crowdsecurity/ssh-bf"));
        // An hour on, the same alert moves the expiry an hour later, counted as an addition.
        let later = NOW.plus(3600);
        let again = take(&mut store, &detection("8.8.8.8"), settings, (later, limits));
        assert_eq!(again, (true, 1));
        assert_eq!(expiry(&store), (NOW, Some(later.plus(14_400))));
        assert_eq!(store.usage().unwrap().added, 2);
        assert_eq!(store.usage().unwrap().reported, 2);
        // A machine with a shorter ttl never shortens what stands.
        let short = MachineSettings {
            ttl: 600,
            adds: true,
        };
        let sooner = take(&mut store, &detection("8.8.8.8"), short, (later, limits));
        assert_eq!(sooner, (true, 0));
        assert_eq!(expiry(&store), (NOW, Some(later.plus(14_400))));
        // With adds off, alerts report and add nothing.
        let off = MachineSettings {
            adds: false,
            ..settings
        };
        let reported = take(&mut store, &detection("8.8.4.4"), off, (later, limits));
        assert_eq!(reported, (true, 0));
        assert!(store.entry(ip("8.8.4.4").into()).unwrap().is_none());
    }

    #[test]
    fn the_holders_allow_list_the_global_list_and_each_daily_limit_stop_their_half() {
        let mut store = MemoryStore::default();
        let settings = MachineSettings::default();
        let at = (NOW, Limits::default());
        let call = detection("8.8.8.8");
        let allowed = take_alert(&mut store, &call, settings, |_| true, None, at);
        assert_eq!(
            allowed.unwrap(),
            AlertTaken::default(),
            "an address on the holder's allow list is neither reported nor added"
        );
        let mut global = detection("8.8.8.8");
        global.adds[0].global_challenge = true;
        let reported = take(&mut store, &global, settings, at);
        assert_eq!(
            reported,
            (true, 0),
            "on the global list: reported, not added"
        );
        let none_left = Limits {
            reports: 1,
            additions: 0,
            ..Limits::default()
        };
        let call = detection("8.8.4.4");
        let limited = take(&mut store, &call, settings, (NOW, none_left));
        assert_eq!(
            limited,
            (false, 0),
            "the day's reports and additions are used up"
        );
        assert_eq!(
            AlertTaken::default().counts(),
            AlertCounts {
                alerts: 1,
                ignored: 1,
                ..AlertCounts::default()
            }
        );
    }
}
