//! What CrowdSec's components report of themselves to `POST /v1/usage-metrics`
//! (the Local API's `AllMetrics`): a bouncer (a remediation component, from
//! go-cs-bouncer's metrics provider every 15 minutes) its type, version, start
//! and what it dropped in the window since its last report; an engine (a log
//! processor, from CrowdSec 1.6.3 at start and every 30 minutes) its version,
//! start and data sources. The payload is read as the Local API binds it:
//! unknown fields ignored, a missing one empty, but a field of another type
//! than the Local API's is a payload that does not parse. Only what the
//! dashboards show is kept, each text bounded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::time::{UnixTime, SECONDS_PER_DAY};

/// A report's body at most, decompressed: a bouncer's is under 2 KiB; an
/// engine's names every hub item it runs, some tens of KiB for a whole hub.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Days of a bouncer's reports kept per feed token, today included; older days
/// are dropped by the next report and by the daily sweep.
pub const USAGE_DAYS: u64 = 30;
/// Characters kept of each text a report carries (the Local API takes 255).
const MAX_TEXT_CHARS: usize = 100;
/// A count past this would not cross into JavaScript exactly (the object's
/// storage hands integers over as numbers): counts stop there.
const MAX_COUNT: u64 = (1 << 53) - 1;

/// Who reports: the body must carry that component's part, exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// A bouncer, by its feed token: `remediation_components`.
    Bouncer,
    /// An engine, by its machine token: `log_processors`.
    Engine,
}

/// The Local API's `AllMetrics`, as far as this service reads it.
#[derive(Deserialize)]
struct AllMetrics {
    remediation_components: Option<Vec<Component>>,
    log_processors: Option<Vec<Component>>,
}

/// `BaseMetrics` with the fields of either component beside it (a bouncer's
/// `type` and `name`, an engine's `name` and `datasources`).
#[derive(Deserialize)]
struct Component {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    version: Option<String>,
    os: Option<Os>,
    utc_startup_timestamp: Option<i64>,
    metrics: Option<Vec<Window>>,
    datasources: Option<BTreeMap<String, i64>>,
}

#[derive(Deserialize)]
struct Os {
    name: Option<String>,
    version: Option<String>,
}

/// `DetailedMetrics`: the items counted over one window.
#[derive(Deserialize)]
struct Window {
    meta: Option<Meta>,
    items: Option<Vec<Item>>,
}

#[derive(Deserialize)]
struct Meta {
    window_size_seconds: Option<i64>,
}

/// `MetricsDetailItem`; its labels (origin, IP family) are not kept.
#[derive(Deserialize)]
struct Item {
    name: Option<String>,
    unit: Option<String>,
    value: Option<f64>,
}

/// Packets and bytes dropped, as a bouncer reports them: over the window since
/// its previous report (the firewall bouncer sends each counter's change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub packets: u64,
    pub bytes: u64,
}

impl Dropped {
    pub fn plus(self, other: Self) -> Self {
        Self {
            packets: self.packets.saturating_add(other.packets).min(MAX_COUNT),
            bytes: self.bytes.saturating_add(other.bytes).min(MAX_COUNT),
        }
    }
}

/// What a bouncer's report comes to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BouncerReport {
    /// `crowdsec-firewall-bouncer`, `crowdsec-custom-bouncer`, ...
    pub kind: Option<String>,
    pub name: Option<String>,
    pub version: Option<String>,
    /// The operating system's name and version, as one text.
    pub os: Option<String>,
    pub started_at: Option<UnixTime>,
    pub window_seconds: Option<u64>,
    pub dropped: Dropped,
}

impl BouncerReport {
    /// This report and a `later` one as one: the later's description, what
    /// both dropped and over both windows.
    pub fn then(self, later: Self) -> Self {
        let window_seconds = match (self.window_seconds, later.window_seconds) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        Self {
            dropped: self.dropped.plus(later.dropped),
            window_seconds,
            ..later
        }
    }
}

/// What an engine's report comes to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineReport {
    pub version: Option<String>,
    pub os: Option<String>,
    pub started_at: Option<UnixTime>,
    /// The data sources it reads, of every type.
    pub datasources: u64,
}

/// A report, of the part its reporter sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageReport {
    Bouncer(BouncerReport),
    Engine(EngineReport),
}

/// A report's body read for `reporter`, or why it is refused (a 400): a body
/// that is not the Local API's `AllMetrics`, or that carries none or more than
/// one of the reporter's part, as the Local API refuses them.
pub fn parse(body: &[u8], reporter: Reporter) -> Result<UsageReport, String> {
    let all: AllMetrics = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not CrowdSec's usage metrics: {e}"))?;
    let (part, what) = match reporter {
        Reporter::Bouncer => (all.remediation_components, "remediation component"),
        Reporter::Engine => (all.log_processors, "log processor"),
    };
    let mut part = part.unwrap_or_default();
    if part.len() > 1 {
        return Err(format!("the body carries more than one {what}"));
    }
    let component = part
        .pop()
        .ok_or_else(|| format!("the body carries no {what}"))?;
    Ok(match reporter {
        Reporter::Bouncer => UsageReport::Bouncer(bouncer(component)),
        Reporter::Engine => UsageReport::Engine(engine(component)),
    })
}

fn bouncer(component: Component) -> BouncerReport {
    let windows = component.metrics.unwrap_or_default();
    let window_seconds = windows
        .iter()
        .filter_map(|window| window.meta.as_ref()?.window_size_seconds)
        .find_map(kept);
    let mut dropped = Dropped::default();
    for item in windows.iter().flat_map(|w| w.items.iter().flatten()) {
        if item.name.as_deref() != Some("dropped") {
            continue;
        }
        let value = count(item.value);
        dropped = dropped.plus(match item.unit.as_deref() {
            Some("packet") => Dropped {
                packets: value,
                bytes: 0,
            },
            Some("byte") => Dropped {
                packets: 0,
                bytes: value,
            },
            _ => Dropped::default(),
        });
    }
    BouncerReport {
        kind: text(component.kind),
        name: text(component.name),
        version: text(component.version),
        os: os(component.os),
        started_at: started(component.utc_startup_timestamp),
        window_seconds,
        dropped,
    }
}

fn engine(component: Component) -> EngineReport {
    let datasources = component
        .datasources
        .unwrap_or_default()
        .values()
        .filter_map(|n| u64::try_from(*n).ok())
        .fold(0u64, |sum, n| sum.saturating_add(n))
        .min(MAX_COUNT);
    EngineReport {
        version: text(component.version),
        os: os(component.os),
        started_at: started(component.utc_startup_timestamp),
        datasources,
    }
}

/// A text as kept: trimmed, at most `MAX_TEXT_CHARS`; none when empty.
fn text(value: Option<String>) -> Option<String> {
    let value = value?;
    let kept: String = value.trim().chars().take(MAX_TEXT_CHARS).collect();
    (!kept.is_empty()).then_some(kept)
}

fn os(os: Option<Os>) -> Option<String> {
    let os = os?;
    let parts: Vec<String> = [text(os.name), text(os.version)]
        .into_iter()
        .flatten()
        .collect();
    text(Some(parts.join(" ")))
}

/// A number of seconds as kept: above 0, and within what the object's storage
/// carries exactly; none for anything else.
fn kept(n: i64) -> Option<u64> {
    u64::try_from(n)
        .ok()
        .filter(|n| (1..=MAX_COUNT).contains(n))
}

fn started(timestamp: Option<i64>) -> Option<UnixTime> {
    timestamp.and_then(kept).map(UnixTime)
}

/// A reported value as a count: whole, never negative (a counter reset the
/// bouncer did not notice), nothing for what is not a number.
fn count(value: Option<f64>) -> u64 {
    match value {
        Some(value) if value.is_finite() && value > 0.0 => (value.round() as u64).min(MAX_COUNT),
        _ => 0,
    }
}

/// A bouncer's last report as its holder and the operator see it on its feed
/// token, with what it dropped each of the last `USAGE_DAYS` days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BouncerUsage {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub name: Option<String>,
    pub version: Option<String>,
    pub os: Option<String>,
    pub started_at: Option<String>,
    pub reported_at: String,
    pub window_seconds: Option<u64>,
    /// What the last report said it dropped, over its window.
    pub dropped: Dropped,
    /// Oldest first, a day without a report as zeros.
    pub days: Vec<UsageDay>,
}

/// What a bouncer reported dropping over one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageDay {
    pub date: String,
    pub packets: u64,
    pub bytes: u64,
}

/// An engine's last report, as its holder and the operator see it on its machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineUsage {
    pub version: Option<String>,
    pub os: Option<String>,
    pub started_at: Option<String>,
    pub reported_at: String,
    pub datasources: u64,
}

/// The first day kept on `today`: older days' rows are dropped.
pub fn first_day(today: u64) -> u64 {
    today.saturating_sub(USAGE_DAYS - 1)
}

/// The last `USAGE_DAYS` days up to `today`, oldest first, from the days'
/// rows (day, what it dropped): a day without a row dropped nothing, and a row
/// outside the window is left out.
pub fn usage_days(rows: &[(u64, Dropped)], today: u64) -> Vec<UsageDay> {
    (first_day(today)..=today)
        .map(|day| {
            let dropped = rows
                .iter()
                .find(|(at, _)| *at == day)
                .map_or(Dropped::default(), |(_, dropped)| *dropped);
            UsageDay {
                date: UnixTime(day * SECONDS_PER_DAY).to_rfc3339()[..10].to_owned(),
                packets: dropped.packets,
                bytes: dropped.bytes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn two_reports_gathered_are_the_later_one_with_what_both_dropped_over_both_windows() {
        let report = |version: &str, window, packets, bytes| BouncerReport {
            version: Some(version.to_owned()),
            window_seconds: window,
            dropped: Dropped { packets, bytes },
            ..BouncerReport::default()
        };
        let gathered = report("0.0.30", Some(20), 3, 300).then(report("0.0.31", Some(40), 4, 400));
        assert_eq!(
            gathered,
            report("0.0.31", Some(60), 7, 700),
            "gathered reports lost a count or kept the older description"
        );
        assert_eq!(
            report("a", None, 1, 1)
                .then(report("b", Some(5), 1, 1))
                .window_seconds,
            Some(5)
        );
    }

    /// The body crowdsec-firewall-bouncer 0.0.30 posts (go-cs-bouncer's
    /// `MetricsProvider` and the bouncer's updater, as Go's `encoding/json`
    /// writes `models.AllMetrics`: `log_processors` null, `name` left out).
    fn firewall_bouncer_0_0_30() -> serde_json::Value {
        json!({
            "log_processors": null,
            "remediation_components": [{
                "feature_flags": [],
                "metrics": [{
                    "items": [
                        {"labels": {"ip_type": "ipv4", "origin": "CAPI"}, "name": "active_decisions", "unit": "ip", "value": 14_000},
                        {"labels": {"ip_type": "ipv4", "origin": "cscli"}, "name": "dropped", "unit": "byte", "value": 5_120},
                        {"labels": {"ip_type": "ipv4", "origin": "cscli"}, "name": "dropped", "unit": "packet", "value": 80},
                        {"labels": {"ip_type": "ipv6", "origin": "cscli"}, "name": "dropped", "unit": "byte", "value": 1_024.4},
                        {"labels": {"ip_type": "ipv6", "origin": "cscli"}, "name": "dropped", "unit": "packet", "value": 16},
                        {"labels": {"ip_type": "ipv4"}, "name": "processed", "unit": "byte", "value": 9_000_000},
                        {"labels": {"ip_type": "ipv4"}, "name": "processed", "unit": "packet", "value": 60_000}
                    ],
                    "meta": {"utc_now_timestamp": 1_795_263_300, "window_size_seconds": 900}
                }],
                "os": {"name": "debian", "version": "12"},
                "type": "crowdsec-firewall-bouncer",
                "utc_startup_timestamp": 1_795_262_400,
                "version": "v0.0.30-debian-pragmatic-amd64"
            }]
        })
    }

    fn parsed(body: serde_json::Value, reporter: Reporter) -> Result<UsageReport, String> {
        parse(body.to_string().as_bytes(), reporter)
    }

    #[test]
    fn the_firewall_bouncers_report_comes_to_its_type_version_start_and_drops() {
        let report = parsed(firewall_bouncer_0_0_30(), Reporter::Bouncer)
            .expect("a report is read whatever fields it carries beside those read");
        assert_eq!(
            report,
            UsageReport::Bouncer(BouncerReport {
                kind: Some("crowdsec-firewall-bouncer".to_owned()),
                name: None,
                version: Some("v0.0.30-debian-pragmatic-amd64".to_owned()),
                os: Some("debian 12".to_owned()),
                started_at: Some(UnixTime(1_795_262_400)),
                window_seconds: Some(900),
                dropped: Dropped {
                    packets: 96,
                    bytes: 6_144,
                },
            })
        );
    }

    #[test]
    fn an_engines_report_comes_to_its_version_start_and_data_sources() {
        let body = json!({
            "log_processors": [{
                "datasources": {"file": 3, "journalctl": 1},
                "feature_flags": ["re2_grok_support"],
                "hub_items": {"parsers": [{"name": "crowdsecurity/sshd-logs", "status": "official", "version": "2.9"}]},
                "metrics": [{"items": [], "meta": {"utc_now_timestamp": 1, "window_size_seconds": 0}}],
                "os": {"name": "ubuntu", "version": "24.04"},
                "utc_startup_timestamp": 1_795_262_400,
                "version": "v1.6.3-debian"
            }],
            "remediation_components": null
        });
        assert_eq!(
            parsed(body, Reporter::Engine).unwrap(),
            UsageReport::Engine(EngineReport {
                version: Some("v1.6.3-debian".to_owned()),
                os: Some("ubuntu 24.04".to_owned()),
                started_at: Some(UnixTime(1_795_262_400)),
                datasources: 4,
            })
        );
    }

    #[test]
    fn unknown_fields_are_ignored_and_missing_ones_are_empty() {
        let body = json!({
            "lapi": {"whatever": true},
            "remediation_components": [{"type": "custom", "extra": [1, 2], "metrics": null}]
        });
        let UsageReport::Bouncer(report) = parsed(body, Reporter::Bouncer)
            .expect("a report is read whatever fields it carries beside those read")
        else {
            panic!("a bouncer's report");
        };
        assert_eq!(
            report,
            BouncerReport {
                kind: Some("custom".to_owned()),
                ..BouncerReport::default()
            }
        );
    }

    #[test]
    fn a_body_that_does_not_parse_or_lacks_the_reporters_part_is_refused() {
        for (body, reporter, why) in [
            (json!([]), Reporter::Bouncer, "not CrowdSec's usage metrics"),
            (
                json!({"remediation_components": [{"version": 30}]}),
                Reporter::Bouncer,
                "not CrowdSec's usage metrics",
            ),
            (
                json!({"remediation_components": [{"metrics": [{"items": [{"name": "dropped", "value": "80"}]}]}]}),
                Reporter::Bouncer,
                "not CrowdSec's usage metrics",
            ),
            (json!({}), Reporter::Bouncer, "no remediation component"),
            (
                json!({"remediation_components": []}),
                Reporter::Bouncer,
                "no remediation component",
            ),
            (
                json!({"remediation_components": [{}, {}]}),
                Reporter::Bouncer,
                "more than one remediation component",
            ),
            (
                firewall_bouncer_0_0_30(),
                Reporter::Engine,
                "no log processor",
            ),
        ] {
            let refused = parsed(body.clone(), reporter).unwrap_err();
            assert!(refused.contains(why), "{body}: {refused}");
        }
        assert!(parse(b"{\"remediation_components\": [", Reporter::Bouncer).is_err());
        assert!(parse(b"", Reporter::Bouncer).is_err());
    }

    #[test]
    fn texts_are_bounded_and_counts_whole_and_never_negative() {
        let body = json!({"remediation_components": [{
            "type": format!("  {}  ", "x".repeat(300)),
            "version": "   ",
            "os": {"name": "", "version": "12"},
            "utc_startup_timestamp": -5,
            "metrics": [
                {"meta": {"window_size_seconds": -1}, "items": [
                    {"name": "dropped", "unit": "packet", "value": -40},
                    {"name": "dropped", "unit": "packet", "value": 2.5},
                    {"name": "dropped", "unit": "byte", "value": 1e300},
                    {"name": "dropped", "unit": "ip", "value": 7},
                    {"name": "dropped", "value": 7},
                    {"name": "Dropped", "unit": "packet", "value": 7}
                ]},
                {"meta": {"window_size_seconds": 60}, "items": [
                    {"name": "dropped", "unit": "packet", "value": 1}
                ]}
            ]
        }]});
        let UsageReport::Bouncer(report) = parsed(body, Reporter::Bouncer).unwrap() else {
            panic!("a bouncer's report");
        };
        assert_eq!(report.kind.as_deref().map(str::len), Some(MAX_TEXT_CHARS));
        assert_eq!(report.version, None);
        assert_eq!(report.os.as_deref(), Some("12"));
        assert_eq!(report.started_at, None);
        assert_eq!(report.window_seconds, Some(60));
        assert_eq!(
            report.dropped,
            Dropped {
                packets: 4,
                bytes: MAX_COUNT,
            }
        );
        let full = Dropped {
            packets: MAX_COUNT,
            bytes: 1,
        };
        assert_eq!(full.plus(full).packets, MAX_COUNT);
    }

    #[test]
    fn the_days_are_the_last_thirty_oldest_first_with_quiet_days_as_zeros() {
        let today = 20_780;
        let busy = Dropped {
            packets: 5,
            bytes: 300,
        };
        let days = usage_days(&[(today - 30, busy), (today - 1, busy)], today);
        assert_eq!(days.len(), USAGE_DAYS as usize);
        assert_eq!(days[0].date, "2026-10-25");
        assert_eq!(days[29].date, "2026-11-23");
        assert_eq!((days[28].packets, days[28].bytes), (5, 300));
        let packets: u64 = days.iter().map(|d| d.packets).sum();
        assert_eq!(packets, 5, "the old row is left out");
        assert_eq!(first_day(today), today - 29);
    }
}
