//! One license holder's personal list and daily counters: the rules the
//! Durable Object enforces, with storage behind a trait and time passed in.

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::holder::entry::{
    Entry, EntryDetails, HistoryEvent, HistoryKind, MIN_TTL_SECONDS,
};
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::time::UnixTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Check,
    Add,
    Remove,
}

impl Coded for Operation {
    const ALL: &'static [Self] = &[Self::Check, Self::Add, Self::Remove];

    fn code(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Add => "add",
            Self::Remove => "remove",
        }
    }
}

serde_by_code!(Operation);

/// Limits per license holder, from configuration: the daily ones (6000 and 1000 by
/// default, the specification's), and the most entries a personal list holds, so
/// that no holder's list grows without bound (permanent entries are allowed); the
/// most entries of the holder's allow list, and its adds and removes a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub additions: u32,
    pub removals: u32,
    pub entries: u32,
    pub allow_entries: u32,
    pub allow_changes: u32,
    /// Reports of attackers a day (`DAILY_REPORTS`).
    pub reports: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            additions: 6000,
            removals: 1000,
            entries: 1_000_000,
            allow_entries: 1000,
            allow_changes: 1000,
            reports: 6000,
        }
    }
}

/// At most this many history rows are kept; the oldest go first.
pub const MAX_HISTORY_ROWS: u64 = 100_000;

/// What one UTC day has used of the limits, and how many changes it refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DailyUsage {
    pub day: u64,
    pub added: u32,
    pub removed: u32,
    #[serde(default)]
    pub refused: u32,
    /// The day's adds and removes of the allow list.
    #[serde(default)]
    pub allow_changes: u32,
    /// The day's reports of attackers.
    #[serde(default)]
    pub reported: u32,
}

impl DailyUsage {
    /// The usage that counts on `day`: a stored usage of an earlier day counts as nothing.
    pub fn on(self, day: u64) -> Self {
        if self.day == day {
            self
        } else {
            Self {
                day,
                ..Self::default()
            }
        }
    }
}

/// One list operation as the worker hands it to the holder's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCall {
    pub operation: Operation,
    pub ip: PublicIp,
    /// Whether an IPv6 address is listed as itself or as its /64.
    #[serde(default)]
    pub prefix: Ipv6Prefix,
    #[serde(default)]
    pub details: EntryDetails,
    /// The address of the client that made the request, for the history.
    pub client: Option<String>,
    /// Whether the global challenge list holds the address, as the Worker found:
    /// the holder's allow list, which only the object knows, is stronger.
    #[serde(default)]
    pub global_challenge: bool,
}

/// What one holder's personal list answered (the Durable Object's reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonalOutcome {
    Unlisted,
    Listed,
    Added,
    AlreadyListed,
    Removed,
    NothingToRemove,
    LimitReached,
    /// The personal list holds the most entries it may.
    ListFull,
    /// The holder's own allow list holds the address: nothing is done.
    OwnAllowListed,
    /// The global challenge list holds the address, and the holder's allow list
    /// does not: a check's answer, and an add's.
    ListedGlobal,
    AlreadyGlobal,
}

impl Coded for PersonalOutcome {
    const ALL: &'static [Self] = &[
        Self::Unlisted,
        Self::Listed,
        Self::Added,
        Self::AlreadyListed,
        Self::Removed,
        Self::NothingToRemove,
        Self::LimitReached,
        Self::ListFull,
        Self::OwnAllowListed,
        Self::ListedGlobal,
        Self::AlreadyGlobal,
    ];

    /// Stable machine-readable code: `X-Greylist-Outcome`, and the wire form between worker and Durable Object.
    fn code(self) -> &'static str {
        match self {
            Self::Unlisted => "not_listed",
            Self::Listed => "listed_personal",
            Self::Added => "added",
            Self::AlreadyListed => "already_personal",
            Self::Removed => "removed",
            Self::NothingToRemove => "not_on_list",
            Self::LimitReached => "limit_reached",
            Self::ListFull => "list_full",
            Self::OwnAllowListed => "allow_listed_own",
            Self::ListedGlobal => "listed_global",
            Self::AlreadyGlobal => "already_global",
        }
    }
}

serde_by_code!(PersonalOutcome);

/// The object's answer: the outcome, the day's usage after it (for add and
/// remove; a check reads none) and the limits it ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListAnswer {
    pub outcome: PersonalOutcome,
    pub usage: Option<DailyUsage>,
    pub limits: Limits,
}

/// The storage one holder's list needs. Every call is synchronous so that a
/// whole operation runs without yielding: nothing can interleave with it.
pub trait ListStore {
    type Error;
    fn entry(&self, ip: Listed) -> Result<Option<Entry>, Self::Error>;
    /// Stores `entry`, replacing any row of the same address.
    fn insert(&mut self, entry: &Entry) -> Result<(), Self::Error>;
    fn delete(&mut self, ip: Listed) -> Result<(), Self::Error>;
    /// Entries stored, expired ones not yet swept included: what the list's bound counts.
    fn size(&self) -> Result<u64, Self::Error>;
    fn usage(&self) -> Result<DailyUsage, Self::Error>;
    fn save_usage(&mut self, usage: DailyUsage) -> Result<(), Self::Error>;
    /// Appends to the history, keeping only the newest `MAX_HISTORY_ROWS` rows.
    fn record(&mut self, event: &HistoryEvent) -> Result<(), Self::Error>;
    /// At most `limit` entries whose expiry is at or before `now`, earliest first.
    fn expired(&self, now: UnixTime, limit: usize) -> Result<Vec<Entry>, Self::Error>;
    /// Counts `count` entries that expired on `day`, for the day's activity.
    fn count_expired(&mut self, day: u64, count: u32) -> Result<(), Self::Error>;
}

/// Runs one operation of the state table: only an actual addition or removal
/// counts against the day's limit, and a refused one changes nothing but the
/// day's refusal count (and the history, for the day's first refusal).
pub fn perform<S: ListStore>(
    store: &mut S,
    call: &ListCall,
    now: UnixTime,
    limits: Limits,
) -> Result<ListAnswer, S::Error> {
    // An IPv6 address may be listed as itself and as its /64 (listed under each
    // setting of IPV6_PREFIX): both are found, and a remove takes both.
    let mut found = Vec::with_capacity(2);
    for key in Listed::candidates(call.ip, call.prefix) {
        match store.entry(key)? {
            Some(entry) if entry.is_live(now) => found.push(key),
            Some(expired) => {
                expire(store, &expired, now)?;
                store.count_expired(expiry_day(&expired, now), 1)?;
            }
            None => {}
        }
    }
    let listed = !found.is_empty();
    // An add lists the address as the prefix has it.
    let ip = found
        .first()
        .copied()
        .unwrap_or(Listed::keys(call.ip, call.prefix).0);
    let event_of = |ip: Listed, change| HistoryEvent {
        at: now,
        change,
        ip: ip.into(),
        client: call.client.clone(),
    };
    let event = |change| event_of(ip, change);
    let day = now.utc_day();
    let (outcome, usage) = match call.operation {
        Operation::Check => (
            if listed {
                PersonalOutcome::Listed
            } else {
                PersonalOutcome::Unlisted
            },
            None,
        ),
        Operation::Add => {
            let mut usage = store.usage()?.on(day);
            let outcome = if listed {
                PersonalOutcome::AlreadyListed
            } else if usage.added >= limits.additions {
                let refused = event(HistoryKind::LimitRefused);
                refuse(store, &mut usage, &refused, PersonalOutcome::LimitReached)?
            } else if store.size()? >= u64::from(limits.entries) {
                let refused = event(HistoryKind::LimitRefused);
                refuse(store, &mut usage, &refused, PersonalOutcome::ListFull)?
            } else {
                let details = call.details.clone();
                store.insert(&Entry {
                    ip,
                    added_at: now,
                    expires_at: details.expiry.map(|e| e.at(now)),
                    comment: details.comment,
                })?;
                store.record(&event(HistoryKind::Added))?;
                usage.added += 1;
                store.save_usage(usage)?;
                PersonalOutcome::Added
            };
            (outcome, Some(usage))
        }
        Operation::Remove => {
            let mut usage = store.usage()?.on(day);
            let outcome = if !listed {
                PersonalOutcome::NothingToRemove
            } else if usage.removed >= limits.removals {
                let refused = event(HistoryKind::LimitRefused);
                refuse(store, &mut usage, &refused, PersonalOutcome::LimitReached)?
            } else {
                for &key in &found {
                    store.delete(key)?;
                    store.record(&event_of(key, HistoryKind::Removed))?;
                }
                usage.removed += 1;
                store.save_usage(usage)?;
                PersonalOutcome::Removed
            };
            (outcome, Some(usage))
        }
    };
    Ok(ListAnswer {
        outcome,
        usage,
        limits,
    })
}

/// Moves the expiry of the live entry that lists `ip` to `until`, when that is
/// at least `MIN_TTL_SECONDS` later than its own, and records it as `extended`;
/// whether it moved. Never earlier, and a permanent entry stays permanent: what
/// a CrowdSec engine's alert for an address already listed does. It counts as
/// one of the day's additions and is not made past them: it rewrites a row and
/// writes history, so an engine re-sending decisions cannot rewrite the list
/// without bound; the minute keeps an engine that alerts on one address again
/// and again from writing a row each time.
pub fn extend<S: ListStore>(
    store: &mut S,
    ip: PublicIp,
    prefix: Ipv6Prefix,
    until: UnixTime,
    (client, limits): (Option<&str>, Limits),
    now: UnixTime,
) -> Result<bool, S::Error> {
    let mut usage = store.usage()?.on(now.utc_day());
    if usage.added >= limits.additions {
        return Ok(false);
    }
    for key in Listed::candidates(ip, prefix) {
        let Some(entry) = store.entry(key)?.filter(|entry| entry.is_live(now)) else {
            continue;
        };
        let later = entry
            .expires_at
            .is_some_and(|expires_at| until >= expires_at.plus(MIN_TTL_SECONDS));
        if later {
            store.insert(&Entry {
                expires_at: Some(until),
                ..entry
            })?;
            usage.added += 1;
            store.save_usage(usage)?;
            store.record(&HistoryEvent {
                at: now,
                change: HistoryKind::Extended,
                ip: key.into(),
                client: client.map(str::to_owned),
            })?;
        }
        return Ok(later);
    }
    Ok(false)
}

/// A script looping on a used-up quota, or a full list, must not grow the history
/// without bound: every refusal is counted for the day, and only the day's first
/// is recorded. Answers `outcome`, the limit that refused.
fn refuse<S: ListStore>(
    store: &mut S,
    usage: &mut DailyUsage,
    event: &HistoryEvent,
    outcome: PersonalOutcome,
) -> Result<PersonalOutcome, S::Error> {
    refuse_change(store, usage, event)?;
    Ok(outcome)
}

/// Counts a refused change for the day, recording the day's first: the allow
/// list's refusals count with the challenge list's.
pub(crate) fn refuse_change<S: ListStore>(
    store: &mut S,
    usage: &mut DailyUsage,
    event: &HistoryEvent,
) -> Result<(), S::Error> {
    usage.refused = usage.refused.saturating_add(1);
    if usage.refused == 1 {
        store.record(event)?;
    }
    store.save_usage(*usage)
}

/// The UTC day an expired entry counts on: the day it expired.
fn expiry_day(entry: &Entry, now: UnixTime) -> u64 {
    entry.expires_at.unwrap_or(now).utc_day()
}

/// Removes an entry whose expiry has passed and records it at its expiry time.
fn expire<S: ListStore>(store: &mut S, entry: &Entry, now: UnixTime) -> Result<(), S::Error> {
    store.delete(entry.ip)?;
    store.record(&HistoryEvent {
        at: entry.expires_at.unwrap_or(now),
        change: HistoryKind::Expired,
        ip: entry.ip.into(),
        client: None,
    })
}

/// Removes at most `batch` expired entries, so one sweep's memory and time stay
/// bounded however many entries share an expiry; returns how many it removed.
/// Fewer than `batch` means nothing expired is left.
pub fn sweep<S: ListStore>(store: &mut S, now: UnixTime, batch: usize) -> Result<usize, S::Error> {
    let expired = store.expired(now, batch)?;
    for entry in &expired {
        expire(store, entry, now)?;
    }
    // Earliest first: the entries of one day of expiry are next to each other.
    for run in expired.chunk_by(|a, b| expiry_day(a, now) == expiry_day(b, now)) {
        store.count_expired(expiry_day(&run[0], now), run.len() as u32)?;
    }
    Ok(expired.len())
}

#[cfg(test)]
pub mod memory {
    use std::collections::BTreeMap;
    use std::convert::Infallible;

    use super::*;
    use crate::domain::holder::allow::{AllowEntry, AllowStore};
    use crate::domain::holder::allow_range::AllowRange;

    /// An in-memory store for the native tests of the rules.
    #[derive(Debug, Default)]
    pub struct MemoryStore {
        pub entries: BTreeMap<Listed, Entry>,
        pub usage: DailyUsage,
        pub history: Vec<HistoryEvent>,
        /// Entries expired, by day of expiry.
        pub expired: BTreeMap<u64, u32>,
        pub allow: BTreeMap<AllowRange, AllowEntry>,
        pub reports: Vec<crate::domain::network::report::Outgoing>,
    }

    impl crate::domain::network::report::ReportStore for MemoryStore {
        fn keep_report(
            &mut self,
            report: &crate::domain::network::report::Outgoing,
        ) -> Result<(), Infallible> {
            self.reports.push(report.clone());
            Ok(())
        }
    }

    impl ListStore for MemoryStore {
        type Error = Infallible;

        fn entry(&self, ip: Listed) -> Result<Option<Entry>, Infallible> {
            Ok(self.entries.get(&ip).cloned())
        }

        fn insert(&mut self, entry: &Entry) -> Result<(), Infallible> {
            self.entries.insert(entry.ip, entry.clone());
            Ok(())
        }

        fn delete(&mut self, ip: Listed) -> Result<(), Infallible> {
            self.entries.remove(&ip);
            Ok(())
        }

        fn size(&self) -> Result<u64, Infallible> {
            Ok(self.entries.len() as u64)
        }

        fn usage(&self) -> Result<DailyUsage, Infallible> {
            Ok(self.usage)
        }

        fn save_usage(&mut self, usage: DailyUsage) -> Result<(), Infallible> {
            self.usage = usage;
            Ok(())
        }

        fn record(&mut self, event: &HistoryEvent) -> Result<(), Infallible> {
            self.history.push(event.clone());
            let excess = self.history.len().saturating_sub(MAX_HISTORY_ROWS as usize);
            self.history.drain(..excess);
            Ok(())
        }

        fn count_expired(&mut self, day: u64, count: u32) -> Result<(), Infallible> {
            *self.expired.entry(day).or_default() += count;
            Ok(())
        }

        fn expired(&self, now: UnixTime, limit: usize) -> Result<Vec<Entry>, Infallible> {
            let mut expired: Vec<Entry> = self
                .entries
                .values()
                .filter(|e| !e.is_live(now))
                .cloned()
                .collect();
            expired.sort_by_key(|e| e.expires_at);
            expired.truncate(limit);
            Ok(expired)
        }
    }

    impl AllowStore for MemoryStore {
        fn insert_allow(&mut self, entry: &AllowEntry) -> Result<(), Infallible> {
            self.allow.insert(entry.range, entry.clone());
            Ok(())
        }

        fn delete_allow(&mut self, range: AllowRange) -> Result<(), Infallible> {
            self.allow.remove(&range);
            Ok(())
        }

        fn covered(
            &self,
            range: AllowRange,
            now: UnixTime,
            at_most: u64,
        ) -> Result<u64, Infallible> {
            Ok(self.inside(range, now).take(at_most as usize).count() as u64)
        }

        fn remove_covered(
            &mut self,
            range: AllowRange,
            now: UnixTime,
            client: Option<&str>,
        ) -> Result<(), Infallible> {
            let covered: Vec<Listed> = self.inside(range, now).collect();
            for ip in covered {
                self.entries.remove(&ip);
                self.record(&HistoryEvent {
                    at: now,
                    change: HistoryKind::Removed,
                    ip: ip.into(),
                    client: client.map(str::to_owned),
                })?;
            }
            Ok(())
        }
    }

    impl MemoryStore {
        /// The live entries whose key lies inside `range`, as the rows' index finds them.
        fn inside(&self, range: AllowRange, now: UnixTime) -> impl Iterator<Item = Listed> + '_ {
            let (first, last) = range.span();
            self.entries
                .values()
                .filter(move |e| e.is_live(now))
                .map(|e| e.ip)
                .filter(move |ip| {
                    let key = u128::from_be_bytes(ip.key().octets());
                    // A /64's key sorts after its first address: inside when the range holds all of it.
                    let end = if ip.key().is_net64() {
                        key | u128::from(u64::MAX)
                    } else {
                        key
                    };
                    first <= key && end <= last
                })
        }
    }
}
