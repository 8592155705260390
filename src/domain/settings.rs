//! The Worker's settings, read from its environment (`[vars]` and secrets) and
//! checked once: a value that would make the service unsafe or make it fail later
//! is refused here, with a message that names it.

use std::fmt;

use crate::domain::access::license::secrets_match;
use crate::domain::holder::list::Limits;
use crate::domain::net::address::{Ipv6, Ipv6Prefix};
use crate::domain::network::consensus::{Consensus, Review};

/// Shorter secrets can be guessed: `JWT_SECRET` offline from any issued token,
/// `ADMIN_TOKEN` online.
pub const MIN_SECRET_BYTES: usize = 32;
pub const DEFAULT_TOKEN_LIFETIME_SECONDS: u64 = 3600;
/// Thirty days: a stolen token stays useful no longer, and time arithmetic stays far from overflow.
pub const MAX_TOKEN_LIFETIME_SECONDS: u64 = 30 * 86_400;
/// The longest window and delisting delay of the consensus: a year.
pub const MAX_CONSENSUS_SECONDS: u64 = 365 * 86_400;
pub const DEFAULT_CACHE_SECONDS: u64 = 60;
/// A revocation, and a change to the global list or the allow list, shows
/// everywhere within this many seconds (the specification's settled decision).
pub const PROPAGATION_BOUND_SECONDS: u64 = 60;
/// Items in one page of a streamed answer (a feed, an export) unless set: what an
/// object and the Worker hold of it at once, whatever the list's size.
pub const DEFAULT_PAGE_ENTRIES: usize = 1000;
pub const MAX_PAGE_ENTRIES: usize = 10_000;

/// How long the two caches in front of every KV record (licenses, the global
/// list, the allow list) may keep it, both derived here from one setting,
/// `CACHE_SECONDS`, the most seconds a change may take to show everywhere.
/// KV's edge cache keeps a value at least `EDGE_SECONDS` (its minimum `cacheTtl`;
/// without one it keeps it 60), and an isolate keeps what it read for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    budget: u64,
}

impl Freshness {
    /// KV's shortest edge cache, asked for on every read.
    pub const EDGE_SECONDS: u64 = 30;

    /// None for a budget over the bound: no setting can make the caches add up past it.
    pub fn new(budget: u64) -> Option<Self> {
        (budget <= PROPAGATION_BOUND_SECONDS).then_some(Self { budget })
    }

    /// How long an isolate answers from a value it read, before it reads again.
    pub fn isolate_seconds(self) -> u64 {
        self.budget.saturating_sub(Self::EDGE_SECONDS)
    }

    /// The longest a change can take to show: a value at the end of its edge
    /// cache life, read by an isolate that then keeps it for its own period.
    pub fn worst_case_seconds(self) -> u64 {
        Self::EDGE_SECONDS + self.isolate_seconds()
    }
}

/// A secret setting: compared and used, never shown, not even in a debug print.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub jwt_secret: Secret,
    pub admin_token: Secret,
    /// A second operator token taken beside `ADMIN_TOKEN` while it is rotated
    /// (`ADMIN_TOKEN_NEXT`): set the new one here, move every client to it, then
    /// make it `ADMIN_TOKEN` and unset this, with no moment that refuses both.
    pub admin_token_next: Option<Secret>,
    pub token_lifetime_seconds: u64,
    pub objects: ObjectSettings,
    /// Whether new IPv6 input is taken (`IPV6`).
    pub ipv6: Ipv6,
    /// Whether an IPv6 address is listed as itself or as its /64 (`IPV6_PREFIX`).
    pub ipv6_prefix: Ipv6Prefix,
    /// Which requests write their log line (`REQUEST_LOG`).
    pub request_log: RequestLog,
}

/// What the Durable Objects run under, and all they read of the settings: no
/// secret is among them, so the objects start whatever the secrets are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectSettings {
    pub limits: Limits,
    /// Items in one page of a streamed answer (`PAGE_ENTRIES`).
    pub page_entries: usize,
    /// How holders' reports make the network's consensus (`PROMOTION_*`,
    /// `DELIST_AFTER_SECONDS`).
    pub consensus: Consensus,
    /// How long the operator's lists' snapshots are held (`CACHE_SECONDS`): the
    /// holders' objects read them too, for their Cloudflare lists.
    pub freshness: Freshness,
}

/// Which requests write their one log line. Each line is one Workers Logs bills
/// past its allowance, and the runtime's console takes a storage-free answer's
/// throughput down by about a twelfth one at a time and a seventh under load
/// (bench/README.md): a service answering firewalls' checks by the million may
/// keep only what was refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequestLog {
    /// Every request (the default).
    #[default]
    All,
    /// Only refusals and faults: an answer of 400 or more.
    Refusals,
}

impl RequestLog {
    /// Whether an answer of `status` writes its line.
    pub fn writes(self, status: u16) -> bool {
        self == Self::All || status >= 400
    }
}

impl Settings {
    /// Whether `token` is the operator's: `ADMIN_TOKEN`, or `ADMIN_TOKEN_NEXT`
    /// while it is set. Both are compared in constant time, every time.
    pub fn admits_operator(&self, token: &str) -> bool {
        let current = secrets_match(token, self.admin_token.expose());
        let next = self
            .admin_token_next
            .as_ref()
            .map(|next| secrets_match(token, next.expose()));
        current | next.unwrap_or(false)
    }

    /// `var` looks a setting up by name; an absent one takes its default, and a
    /// secret has none.
    pub fn parse(var: impl Fn(&'static str) -> Option<String>) -> Result<Self, String> {
        Ok(Self {
            jwt_secret: secret("JWT_SECRET", var("JWT_SECRET"))?,
            admin_token: secret("ADMIN_TOKEN", var("ADMIN_TOKEN"))?,
            admin_token_next: var("ADMIN_TOKEN_NEXT")
                .map(|value| secret("ADMIN_TOKEN_NEXT", Some(value)))
                .transpose()?,
            token_lifetime_seconds: seconds(
                "TOKEN_LIFETIME_SECONDS",
                var("TOKEN_LIFETIME_SECONDS"),
                60..=MAX_TOKEN_LIFETIME_SECONDS,
            )?
            .unwrap_or(DEFAULT_TOKEN_LIFETIME_SECONDS),
            objects: ObjectSettings::parse(&var)?,
            ipv6: either(
                "IPV6",
                var("IPV6"),
                Ipv6::Off,
                [("on", Ipv6::On), ("off", Ipv6::Off)],
            )?,
            ipv6_prefix: either(
                "IPV6_PREFIX",
                var("IPV6_PREFIX"),
                Ipv6Prefix::Whole,
                [("128", Ipv6Prefix::Whole), ("64", Ipv6Prefix::Net64)],
            )?,
            request_log: either(
                "REQUEST_LOG",
                var("REQUEST_LOG"),
                RequestLog::All,
                [("all", RequestLog::All), ("refusals", RequestLog::Refusals)],
            )?,
        })
    }
}

impl ObjectSettings {
    /// The objects' part of `Settings::parse`, read alone where only it is needed
    /// (through `dyn`: one copy of its code serves both).
    pub fn parse(var: &dyn Fn(&'static str) -> Option<String>) -> Result<Self, String> {
        Ok(Self {
            limits: Limits {
                additions: count("DAILY_ADDITIONS", var("DAILY_ADDITIONS"))?
                    .unwrap_or(Limits::default().additions),
                removals: count("DAILY_REMOVALS", var("DAILY_REMOVALS"))?
                    .unwrap_or(Limits::default().removals),
                entries: count("PERSONAL_LIST_ENTRIES", var("PERSONAL_LIST_ENTRIES"))?
                    .unwrap_or(Limits::default().entries),
                allow_entries: count("ALLOW_LIST_ENTRIES", var("ALLOW_LIST_ENTRIES"))?
                    .unwrap_or(Limits::default().allow_entries),
                allow_changes: count("DAILY_ALLOW_CHANGES", var("DAILY_ALLOW_CHANGES"))?
                    .unwrap_or(Limits::default().allow_changes),
                reports: count("DAILY_REPORTS", var("DAILY_REPORTS"))?
                    .unwrap_or(Limits::default().reports),
            },
            page_entries: match count("PAGE_ENTRIES", var("PAGE_ENTRIES"))? {
                None => DEFAULT_PAGE_ENTRIES,
                Some(n) if (1..=MAX_PAGE_ENTRIES).contains(&(n as usize)) => n as usize,
                Some(n) => {
                    return Err(format!(
                        "PAGE_ENTRIES must be 1 to {MAX_PAGE_ENTRIES}, not {n}"
                    ))
                }
            },
            consensus: consensus(var)?,
            freshness: match var("CACHE_SECONDS") {
                None => Freshness {
                    budget: DEFAULT_CACHE_SECONDS,
                },
                Some(text) => text
                    .trim()
                    .parse()
                    .ok()
                    .and_then(Freshness::new)
                    .ok_or_else(|| {
                        out_of_bounds("CACHE_SECONDS", &text, 0..=PROPAGATION_BOUND_SECONDS)
                    })?,
            },
        })
    }
}

/// The consensus's settings: `PROMOTION_NETWORKS` is `PROMOTION_HOLDERS` unless
/// set, and never more (more networks than licenses could never be met).
fn consensus(var: &dyn Fn(&'static str) -> Option<String>) -> Result<Consensus, String> {
    let defaults = Consensus::default();
    let holders = count("PROMOTION_HOLDERS", var("PROMOTION_HOLDERS"))?.unwrap_or(defaults.holders);
    let networks = match count("PROMOTION_NETWORKS", var("PROMOTION_NETWORKS"))? {
        None => holders.max(1),
        Some(n) if n >= 1 && n <= holders.max(1) => n,
        Some(n) => {
            return Err(format!(
                "PROMOTION_NETWORKS must be 1 (off) to PROMOTION_HOLDERS ({}), not {n}",
                holders.max(1)
            ))
        }
    };
    Ok(Consensus {
        holders,
        networks,
        window: seconds(
            "PROMOTION_WINDOW_SECONDS",
            var("PROMOTION_WINDOW_SECONDS"),
            60..=MAX_CONSENSUS_SECONDS,
        )?
        .unwrap_or(defaults.window),
        delist_after: seconds(
            "DELIST_AFTER_SECONDS",
            var("DELIST_AFTER_SECONDS"),
            60..=MAX_CONSENSUS_SECONDS,
        )?
        .unwrap_or(defaults.delist_after),
        probation: seconds(
            "PROMOTION_PROBATION_SECONDS",
            var("PROMOTION_PROBATION_SECONDS"),
            0..=MAX_CONSENSUS_SECONDS,
        )?
        .unwrap_or(defaults.probation),
        review: either(
            "PROMOTION_REVIEW",
            var("PROMOTION_REVIEW"),
            Review::Off,
            [("off", Review::Off), ("on", Review::On)],
        )?,
    })
}

fn secret(name: &str, value: Option<String>) -> Result<Secret, String> {
    match value {
        None => Err(format!("the secret {name} is not set")),
        Some(value) if value.len() < MIN_SECRET_BYTES => Err(format!(
            "the secret {name} must be at least {MIN_SECRET_BYTES} bytes"
        )),
        Some(value) => Ok(Secret(value)),
    }
}

fn seconds(
    name: &str,
    value: Option<String>,
    allowed: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, String> {
    let Some(text) = value else { return Ok(None) };
    match text.trim().parse::<u64>() {
        Ok(n) if allowed.contains(&n) => Ok(Some(n)),
        _ => Err(out_of_bounds(name, &text, allowed)),
    }
}

fn out_of_bounds(name: &str, text: &str, allowed: std::ops::RangeInclusive<u64>) -> String {
    format!(
        "{name} must be whole seconds from {} to {}, not {text:?}",
        allowed.start(),
        allowed.end()
    )
}

/// One of two words, `default` when the setting is absent.
fn either<T: Copy>(
    name: &str,
    value: Option<String>,
    default: T,
    [(one, a), (other, b)]: [(&str, T); 2],
) -> Result<T, String> {
    match value.as_deref().map(str::trim) {
        None => Ok(default),
        Some(text) if text == one => Ok(a),
        Some(text) if text == other => Ok(b),
        Some(text) => Err(format!("{name} must be {one} or {other}, not {text:?}")),
    }
}

fn count(name: &str, value: Option<String>) -> Result<Option<u32>, String> {
    let Some(text) = value else { return Ok(None) };
    text.trim()
        .parse()
        .map(Some)
        .map_err(|_| format!("{name} must be a whole number, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn parse(vars: &[(&str, &str)]) -> Result<Settings, String> {
        let all: Vec<(&str, &str)> = [("JWT_SECRET", SECRET), ("ADMIN_TOKEN", SECRET)]
            .into_iter()
            .chain(vars.iter().copied())
            .collect();
        Settings::parse(|name| {
            all.iter()
                .rev()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn absent_settings_take_their_defaults() {
        let settings = parse(&[]).unwrap();
        assert_eq!(
            (settings.token_lifetime_seconds, settings.objects.freshness),
            (3600, Freshness::new(60).unwrap())
        );
        assert_eq!(
            (settings.jwt_secret.expose(), settings.admin_token.expose()),
            (SECRET, SECRET)
        );
        assert_eq!(
            settings.objects.limits,
            Limits {
                additions: 6000,
                removals: 1000,
                entries: 1_000_000,
                allow_entries: 1000,
                allow_changes: 1000,
                reports: 6000,
            }
        );
    }

    #[test]
    fn daily_limits_are_whole_numbers_and_a_typo_is_refused_not_ignored() {
        assert_eq!(
            parse(&[
                ("DAILY_ADDITIONS", "5"),
                ("DAILY_REMOVALS", " 2 "),
                ("PERSONAL_LIST_ENTRIES", "7"),
                ("ALLOW_LIST_ENTRIES", "3"),
                ("DAILY_ALLOW_CHANGES", "4"),
                ("DAILY_REPORTS", "6"),
            ])
            .unwrap()
            .objects
            .limits,
            Limits {
                additions: 5,
                removals: 2,
                entries: 7,
                allow_entries: 3,
                allow_changes: 4,
                reports: 6,
            }
        );
        assert_eq!(
            parse(&[("DAILY_ADDITIONS", "lots")]).unwrap_err(),
            "DAILY_ADDITIONS must be a whole number, not \"lots\""
        );
        assert_eq!(
            parse(&[("DAILY_REMOVALS", "-1")]).unwrap_err(),
            "DAILY_REMOVALS must be a whole number, not \"-1\""
        );
        assert_eq!(parse(&[]).unwrap().objects.page_entries, 1000);
        assert_eq!(
            parse(&[("PAGE_ENTRIES", "10")])
                .unwrap()
                .objects
                .page_entries,
            10
        );
        assert_eq!(parse(&[]).unwrap().request_log, RequestLog::All);
        let refusals = parse(&[("REQUEST_LOG", "refusals")]).unwrap().request_log;
        assert_eq!(refusals, RequestLog::Refusals);
        assert!(parse(&[("REQUEST_LOG", "none")]).is_err());
        assert!(RequestLog::All.writes(200));
        assert!(
            !refusals.writes(200) && !refusals.writes(304),
            "REQUEST_LOG=refusals writes no line for an answer that is no refusal"
        );
        assert!(refusals.writes(400) && refusals.writes(429) && refusals.writes(500));
        assert_eq!(
            parse(&[("PAGE_ENTRIES", "0")]).unwrap_err(),
            "PAGE_ENTRIES must be 1 to 10000, not 0"
        );
        assert_eq!(parse(&[]).unwrap().ipv6, Ipv6::Off);
        assert_eq!(parse(&[("IPV6", "off")]).unwrap().ipv6, Ipv6::Off);
        assert_eq!(parse(&[("IPV6", " on ")]).unwrap().ipv6, Ipv6::On);
        assert_eq!(parse(&[]).unwrap().ipv6_prefix, Ipv6Prefix::Whole);
        assert_eq!(
            parse(&[("IPV6_PREFIX", "128")]).unwrap().ipv6_prefix,
            Ipv6Prefix::Whole
        );
        assert_eq!(
            parse(&[("IPV6_PREFIX", "64")]).unwrap().ipv6_prefix,
            Ipv6Prefix::Net64
        );
        assert_eq!(
            parse(&[("IPV6_PREFIX", "/64")]).unwrap_err(),
            "IPV6_PREFIX must be 128 or 64, not \"/64\""
        );
        assert_eq!(
            parse(&[("IPV6", "yes")]).unwrap_err(),
            "IPV6 must be on or off, not \"yes\""
        );
        assert_eq!(
            parse(&[("PERSONAL_LIST_ENTRIES", "1e6")]).unwrap_err(),
            "PERSONAL_LIST_ENTRIES must be a whole number, not \"1e6\""
        );
    }

    #[test]
    fn the_objects_settings_need_no_secret_and_read_as_the_whole_does() {
        let vars = [
            ("DAILY_ADDITIONS", "5"),
            ("PAGE_ENTRIES", "10"),
            ("PROMOTION_HOLDERS", "2"),
        ];
        let alone = ObjectSettings::parse(&|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
        .unwrap();
        assert_eq!(alone, parse(&vars).unwrap().objects);
        assert_eq!(
            (
                alone.limits.additions,
                alone.page_entries,
                alone.consensus.holders
            ),
            (5, 10, 2)
        );
    }

    #[test]
    fn the_networks_default_to_the_holders_and_never_exceed_them() {
        let consensus = |vars: &[(&str, &str)]| parse(vars).map(|s| s.objects.consensus);
        let defaults = consensus(&[]).unwrap();
        assert_eq!((defaults.holders, defaults.networks), (4, 4));
        assert_eq!((defaults.probation, defaults.review), (0, Review::Off));
        assert_eq!(
            consensus(&[("PROMOTION_HOLDERS", "6")]).unwrap().networks,
            6
        );
        assert_eq!(
            consensus(&[("PROMOTION_NETWORKS", "1")]).unwrap().networks,
            1
        );
        assert_eq!(
            consensus(&[("PROMOTION_HOLDERS", "0")]).unwrap().networks,
            1
        );
        assert_eq!(
            consensus(&[("PROMOTION_NETWORKS", "5")]).unwrap_err(),
            "PROMOTION_NETWORKS must be 1 (off) to PROMOTION_HOLDERS (4), not 5"
        );
        assert!(consensus(&[("PROMOTION_NETWORKS", "0")]).is_err());
        let chosen = consensus(&[
            ("PROMOTION_PROBATION_SECONDS", "86400"),
            ("PROMOTION_REVIEW", "on"),
        ])
        .unwrap();
        assert_eq!((chosen.probation, chosen.review), (86_400, Review::On));
        assert!(consensus(&[("PROMOTION_PROBATION_SECONDS", "31536001")]).is_err());
        assert_eq!(
            consensus(&[("PROMOTION_REVIEW", "yes")]).unwrap_err(),
            "PROMOTION_REVIEW must be off or on, not \"yes\""
        );
    }

    #[test]
    fn secrets_must_be_set_and_at_least_32_bytes() {
        for name in ["JWT_SECRET", "ADMIN_TOKEN"] {
            let short = &SECRET[1..];
            assert_eq!(
                parse(&[(name, short)]).unwrap_err(),
                format!("the secret {name} must be at least 32 bytes")
            );
            assert_eq!(
                parse(&[(name, "")]).unwrap_err(),
                format!("the secret {name} must be at least 32 bytes")
            );
        }
        let missing = Settings::parse(|name| (name == "ADMIN_TOKEN").then(|| SECRET.to_owned()));
        assert_eq!(missing.unwrap_err(), "the secret JWT_SECRET is not set");
    }

    #[test]
    fn the_token_lifetime_is_a_minute_to_thirty_days() {
        assert_eq!(
            parse(&[("TOKEN_LIFETIME_SECONDS", "60")])
                .unwrap()
                .token_lifetime_seconds,
            60
        );
        assert_eq!(
            parse(&[("TOKEN_LIFETIME_SECONDS", " 2592000 ")])
                .unwrap()
                .token_lifetime_seconds,
            2_592_000
        );
        for bad in [
            "2592001",
            "59",
            "0",
            "-1",
            "1e9",
            "",
            "18446744073709551615",
            "99999999999999999999",
        ] {
            let error = parse(&[("TOKEN_LIFETIME_SECONDS", bad)]).unwrap_err();
            assert!(
                error
                    .starts_with("TOKEN_LIFETIME_SECONDS must be whole seconds from 60 to 2592000"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn a_malformed_or_too_long_cache_setting_is_refused_not_ignored() {
        assert_eq!(
            parse(&[("CACHE_SECONDS", "0")])
                .unwrap()
                .objects
                .freshness
                .isolate_seconds(),
            0
        );
        for bad in ["soon", "61", "3600"] {
            assert!(
                parse(&[("CACHE_SECONDS", bad)])
                    .unwrap_err()
                    .starts_with("CACHE_SECONDS must be whole seconds from 0 to 60"),
                "{bad}"
            );
        }
        assert!(Freshness::new(61).is_none());
    }

    #[test]
    fn no_accepted_cache_setting_lets_a_change_take_over_60_seconds() {
        for budget in 0..=PROPAGATION_BOUND_SECONDS {
            let freshness = Freshness::new(budget).unwrap();
            assert!(
                freshness.worst_case_seconds() <= PROPAGATION_BOUND_SECONDS,
                "{budget}: {freshness:?}"
            );
            assert_eq!(
                freshness.worst_case_seconds(),
                budget.max(Freshness::EDGE_SECONDS),
                "the budget is the bound, or KV's minimum"
            );
        }
        let production = Freshness::new(DEFAULT_CACHE_SECONDS).unwrap();
        assert_eq!(
            (
                production.isolate_seconds(),
                production.worst_case_seconds()
            ),
            (30, 60),
            "half in the isolate, half at the edge"
        );
    }

    #[test]
    fn the_shipped_configuration_keeps_changes_within_60_seconds() {
        let config = include_str!("../../wrangler.toml");
        let configured = config
            .lines()
            .find_map(|line| line.trim().strip_prefix("CACHE_SECONDS = "))
            .map(|v| v.trim_matches('"').to_owned());
        let settings = parse(
            &configured
                .iter()
                .map(|v| ("CACHE_SECONDS", v.as_str()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert!(
            settings.objects.freshness.worst_case_seconds() <= PROPAGATION_BOUND_SECONDS,
            "{:?}",
            settings.objects.freshness
        );
    }

    #[test]
    fn a_second_operator_token_is_taken_beside_the_first_while_it_is_set() {
        let next = "fedcba9876543210fedcba9876543210";
        let rotating = parse(&[("ADMIN_TOKEN_NEXT", next)]).unwrap();
        assert!(rotating.admits_operator(SECRET) && rotating.admits_operator(next));
        assert!(!rotating.admits_operator("fedcba9876543210fedcba987654321"));
        let settled = parse(&[]).unwrap();
        assert!(settled.admits_operator(SECRET) && !settled.admits_operator(next));
        assert_eq!(
            parse(&[("ADMIN_TOKEN_NEXT", "short")]).unwrap_err(),
            "the secret ADMIN_TOKEN_NEXT must be at least 32 bytes"
        );
    }

    #[test]
    fn secrets_never_show_in_a_debug_print() {
        let settings = parse(&[]).unwrap();
        let printed = format!("{settings:?}");
        assert!(!printed.contains(SECRET), "{printed}");
        assert!(printed.contains("Secret(…)"));
    }
}
