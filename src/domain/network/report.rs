//! A holder's report of an attacker: the address, what it did (categories from a
//! small fixed set) and an optional comment. Reports change nothing on the
//! holder's own lists; many holders' reports of one address promote it to the
//! global challenge list (`consensus`).

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::holder::entry::MAX_COMMENT_CHARS;
use crate::domain::holder::list::{DailyUsage, Limits, ListStore};
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::time::UnixTime;

/// What a reported address did, as AbuseIPDB's and CrowdSec's reports name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Ssh,
    Web,
    Mail,
    Scan,
    BruteForce,
    Spam,
    Ddos,
    Other,
}

impl Coded for Category {
    const ALL: &'static [Self] = &[
        Self::Ssh,
        Self::Web,
        Self::Mail,
        Self::Scan,
        Self::BruteForce,
        Self::Spam,
        Self::Ddos,
        Self::Other,
    ];

    fn code(self) -> &'static str {
        match self {
            Self::Ssh => "ssh",
            Self::Web => "web",
            Self::Mail => "mail",
            Self::Scan => "scan",
            Self::BruteForce => "brute-force",
            Self::Spam => "spam",
            Self::Ddos => "ddos",
            Self::Other => "other",
        }
    }
}

serde_by_code!(Category);

/// A set of categories, one bit each in the order of `Category::ALL`: how a
/// report carries them and a tally keeps them, whatever their number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Categories(u16);

impl Categories {
    /// A comma list of names, as a form field gives it (`ssh, brute-force`);
    /// spaces around a name and empty names are ignored, and so is the case. An
    /// unknown name refuses the whole list, naming it and the names there are.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut set = Self::default();
        for name in text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            let category = Category::from_code(&name.to_ascii_lowercase()).ok_or_else(|| {
                let known: Vec<&str> = Category::ALL.iter().map(|c| c.code()).collect();
                format!(
                    "unknown category {name:?}: categories are {}",
                    known.join(", ")
                )
            })?;
            set = set.with(category);
        }
        Ok(set)
    }

    pub fn with(self, category: Category) -> Self {
        let bit = Category::ALL
            .iter()
            .position(|&c| c == category)
            .unwrap_or(0);
        Self(self.0 | 1 << bit)
    }

    /// Both sets' categories.
    pub fn and(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub fn bits(self) -> u16 {
        self.0
    }

    /// The set of stored bits; bits no category has are dropped.
    pub fn from_bits(bits: u16) -> Self {
        Self(bits & ((1 << Category::ALL.len()) - 1))
    }

    /// The categories, in the order of `Category::ALL`.
    pub fn iter(self) -> impl Iterator<Item = Category> {
        Category::ALL
            .iter()
            .enumerate()
            .filter(move |(bit, _)| self.0 & (1 << bit) != 0)
            .map(|(_, &category)| category)
    }
}

/// A report's optional comment, at most `MAX_COMMENT_CHARS` characters.
pub fn comment(text: Option<&str>) -> Result<Option<String>, String> {
    match text {
        Some(text) if text.chars().count() > MAX_COMMENT_CHARS => Err(format!(
            "comment must be at most {MAX_COMMENT_CHARS} characters"
        )),
        Some(text) if !text.is_empty() => Ok(Some(text.to_owned())),
        _ => Ok(None),
    }
}

/// One report as the Worker hands it to the holder's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportCall {
    pub ip: PublicIp,
    /// With `IPV6_PREFIX` 64, an IPv6 address is reported, and counted, as its /64.
    #[serde(default)]
    pub prefix: Ipv6Prefix,
    pub categories: Categories,
    #[serde(default)]
    pub comment: Option<String>,
    /// A canary holds the address: the report is answered and counted against
    /// the day as any other, and kept for nothing.
    #[serde(default)]
    pub canary: bool,
}

impl ReportCall {
    /// What the report counts under: the address, or its /64.
    pub fn subject(&self) -> Listed {
        Listed::keys(self.ip, self.prefix).0
    }

    /// The tests' usual report: `ip` for `categories`, nothing else said.
    #[cfg(test)]
    pub fn of(ip: &str, categories: &str) -> Self {
        Self {
            ip: ip.parse().unwrap(),
            prefix: Ipv6Prefix::Whole,
            categories: Categories::parse(categories).unwrap(),
            comment: None,
            canary: false,
        }
    }
}

/// What a report answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportOutcome {
    Reported,
    /// The holder's own allow list holds the address: nothing is reported.
    OwnAllowListed,
    LimitReached,
}

impl Coded for ReportOutcome {
    const ALL: &'static [Self] = &[Self::Reported, Self::OwnAllowListed, Self::LimitReached];

    fn code(self) -> &'static str {
        match self {
            Self::Reported => "reported",
            Self::OwnAllowListed => "allow_listed_own",
            Self::LimitReached => "limit_reached",
        }
    }
}

serde_by_code!(ReportOutcome);

/// The object's answer to one report, with the day's usage after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportAnswer {
    pub outcome: ReportOutcome,
    pub usage: Option<DailyUsage>,
    pub limits: Limits,
}

/// A report kept by the holder's object until it goes to its shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    pub subject: Listed,
    pub categories: Categories,
    pub at: UnixTime,
    /// The network it came from; `None` for a report kept before networks were,
    /// which counts as a network of its own.
    #[serde(default)]
    pub network: Option<ReporterNetwork>,
    /// It names a canary: kept as any report (its address's reporters count it
    /// as any other's), it never counts towards a consensus.
    #[serde(default)]
    pub canary: bool,
}

/// What reports need of storage beyond the personal list's day.
pub trait ReportStore: ListStore {
    /// Keeps a report until the holder's object sends it on.
    fn keep_report(&mut self, report: &Outgoing) -> Result<(), Self::Error>;
}

/// Counts one report against the day's reports and keeps it to send on, with
/// the network it came `from`; past the day's limit, the limit's answer and
/// nothing kept. A report of a canary is counted, answered and kept the same,
/// marked so that it never counts. A report changes nothing on the holder's
/// own lists.
pub fn perform_report<S: ReportStore>(
    store: &mut S,
    call: &ReportCall,
    from: ReporterNetwork,
    (now, limits): (UnixTime, Limits),
) -> Result<ReportAnswer, S::Error> {
    let mut usage = store.usage()?.on(now.utc_day());
    let outcome = if usage.reported >= limits.reports {
        usage.refused = usage.refused.saturating_add(1);
        ReportOutcome::LimitReached
    } else {
        store.keep_report(&Outgoing {
            subject: call.subject(),
            categories: call.categories,
            at: now,
            network: Some(from),
            canary: call.canary,
        })?;
        usage.reported += 1;
        ReportOutcome::Reported
    };
    store.save_usage(usage)?;
    Ok(ReportAnswer {
        outcome,
        usage: Some(usage),
        limits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_a_comma_list_of_known_names_and_an_unknown_one_is_named() {
        let set = Categories::parse(" ssh, Brute-Force,,ssh ").unwrap();
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Category::Ssh, Category::BruteForce]
        );
        assert_eq!(Categories::parse("").unwrap(), Categories::default());
        assert_eq!(
            Categories::parse("ssh,phishing").unwrap_err(),
            "unknown category \"phishing\": categories are ssh, web, mail, scan, brute-force, spam, ddos, other"
        );
        assert_eq!(Categories::from_bits(set.bits()), set);
        assert_eq!(
            Categories::from_bits(u16::MAX).iter().count(),
            Category::ALL.len()
        );
        assert_eq!(
            serde_json::to_value(Category::BruteForce).unwrap(),
            "brute-force"
        );
    }

    #[test]
    fn a_report_counts_against_the_days_reports_and_past_them_keeps_nothing() {
        use crate::domain::holder::list::memory::MemoryStore;
        let mut store = MemoryStore::default();
        let limits = Limits {
            reports: 2,
            ..Limits::default()
        };
        let call = ReportCall::of("8.8.8.8", "ssh");
        let now = UnixTime(1_795_262_400);
        let from = ReporterNetwork::of_client(Some("192.0.2.7"));
        let outcomes: Vec<ReportOutcome> = (0..3)
            .map(|_| {
                perform_report(&mut store, &call, from, (now, limits))
                    .unwrap()
                    .outcome
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                ReportOutcome::Reported,
                ReportOutcome::Reported,
                ReportOutcome::LimitReached
            ]
        );
        assert_eq!(store.reports.len(), 2);
        assert_eq!(store.reports[0].network, Some(from));
        assert!(
            store.entries.is_empty(),
            "a report changes nothing on the lists"
        );
        let next_day = perform_report(&mut store, &call, from, (now.plus(86_400), limits)).unwrap();
        assert_eq!(next_day.outcome, ReportOutcome::Reported);
        // A canary's report: answered, counted and kept the same, marked.
        let canary = ReportCall {
            canary: true,
            ..call.clone()
        };
        let answer = perform_report(&mut store, &canary, from, (now.plus(86_400), limits)).unwrap();
        assert_eq!(answer.outcome, ReportOutcome::Reported);
        assert_eq!(
            answer.usage.unwrap().reported,
            2,
            "a canary's report is counted against the day's reports as any other"
        );
        assert_eq!(store.reports.len(), 4);
        assert!(
            store.reports[3].canary && !store.reports[2].canary,
            "a canary's report is kept as any report, marked planted"
        );
        let past = perform_report(&mut store, &canary, from, (now.plus(86_400), limits)).unwrap();
        assert_eq!(past.outcome, ReportOutcome::LimitReached);
        // With IPV6_PREFIX 64, an IPv6 address counts as its /64.
        let v6 = ReportCall {
            ip: "2a00:1450:4001:80b::200e".parse().unwrap(),
            prefix: Ipv6Prefix::Net64,
            ..call
        };
        assert_eq!(v6.subject().to_string(), "2a00:1450:4001:80b::/64");
    }

    #[test]
    fn a_comment_is_at_most_255_characters_and_an_empty_one_is_none() {
        assert_eq!(comment(None), Ok(None));
        assert_eq!(comment(Some("")), Ok(None));
        assert_eq!(comment(Some("sshd")), Ok(Some("sshd".into())));
        assert!(comment(Some(&"é".repeat(256))).unwrap_err().contains("255"));
    }
}
