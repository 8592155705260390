//! One license holder's personal list and daily counters: the rules the
//! Durable Object enforces, with storage behind a trait and time passed in.

use serde::{Deserialize, Serialize};

use super::code::{serde_by_code, Coded};
use super::entry::{Change, Entry, EntryDetails, HistoryEvent};
use super::ipv4::PublicIpv4;
use super::outcome::PersonalOutcome;
use super::time::UnixTime;

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

/// Daily limits per license holder (decisions.md: configuration, defaults 6000 and 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub additions: u32,
    pub removals: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            additions: 6000,
            removals: 1000,
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
pub struct Call {
    pub operation: Operation,
    pub ip: PublicIpv4,
    #[serde(default)]
    pub details: EntryDetails,
    /// The address of the client that made the request, for the history.
    pub client: Option<String>,
}

/// The object's answer: the outcome, the day's usage after it (for add and
/// remove; a check reads none) and the limits it ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub outcome: PersonalOutcome,
    pub usage: Option<DailyUsage>,
    pub limits: Limits,
}

/// The storage one holder's list needs. Every call is synchronous so that a
/// whole operation runs without yielding: nothing can interleave with it.
pub trait ListStore {
    type Error;
    fn entry(&self, ip: PublicIpv4) -> Result<Option<Entry>, Self::Error>;
    /// Stores `entry`, replacing any row of the same address.
    fn insert(&mut self, entry: &Entry) -> Result<(), Self::Error>;
    fn delete(&mut self, ip: PublicIpv4) -> Result<(), Self::Error>;
    fn usage(&self) -> Result<DailyUsage, Self::Error>;
    fn save_usage(&mut self, usage: DailyUsage) -> Result<(), Self::Error>;
    /// Appends to the history, keeping only the newest `MAX_HISTORY_ROWS` rows.
    fn record(&mut self, event: &HistoryEvent) -> Result<(), Self::Error>;
    /// At most `limit` entries whose expiry is at or before `now`, earliest first.
    fn expired(&self, now: UnixTime, limit: usize) -> Result<Vec<Entry>, Self::Error>;
}

/// Runs one operation of the state table: only an actual addition or removal
/// counts against the day's limit, and a refused one changes nothing but the
/// day's refusal count (and the history, for the day's first refusal).
pub fn perform<S: ListStore>(
    store: &mut S,
    call: &Call,
    now: UnixTime,
    limits: Limits,
) -> Result<Answer, S::Error> {
    let ip = call.ip;
    let event = |change| HistoryEvent {
        at: now,
        change,
        ip,
        client: call.client.clone(),
    };
    let listed = match store.entry(ip)? {
        Some(entry) if entry.is_live(now) => true,
        Some(expired) => {
            expire(store, &expired, now)?;
            false
        }
        None => false,
    };
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
                refuse(store, &mut usage, &event(Change::LimitRefused))?
            } else {
                let details = call.details.clone();
                store.insert(&Entry {
                    ip,
                    added_at: now,
                    expires_at: details.expiry.map(|e| e.at(now)),
                    comment: details.comment,
                })?;
                store.record(&event(Change::Added))?;
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
                refuse(store, &mut usage, &event(Change::LimitRefused))?
            } else {
                store.delete(ip)?;
                store.record(&event(Change::Removed))?;
                usage.removed += 1;
                store.save_usage(usage)?;
                PersonalOutcome::Removed
            };
            (outcome, Some(usage))
        }
    };
    Ok(Answer {
        outcome,
        usage,
        limits,
    })
}

/// A script looping on a used-up quota must not grow the history without bound:
/// every refusal is counted for the day, and only the day's first is recorded.
fn refuse<S: ListStore>(
    store: &mut S,
    usage: &mut DailyUsage,
    event: &HistoryEvent,
) -> Result<PersonalOutcome, S::Error> {
    usage.refused = usage.refused.saturating_add(1);
    if usage.refused == 1 {
        store.record(event)?;
    }
    store.save_usage(*usage)?;
    Ok(PersonalOutcome::LimitReached)
}

/// Removes an entry whose expiry has passed and records it at its expiry time.
fn expire<S: ListStore>(store: &mut S, entry: &Entry, now: UnixTime) -> Result<(), S::Error> {
    store.delete(entry.ip)?;
    store.record(&HistoryEvent {
        at: entry.expires_at.unwrap_or(now),
        change: Change::Expired,
        ip: entry.ip,
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
    Ok(expired.len())
}

#[cfg(test)]
pub mod memory {
    use std::collections::BTreeMap;
    use std::convert::Infallible;

    use super::*;

    /// An in-memory store for the native tests of the rules.
    #[derive(Debug, Default)]
    pub struct MemoryStore {
        pub entries: BTreeMap<PublicIpv4, Entry>,
        pub usage: DailyUsage,
        pub history: Vec<HistoryEvent>,
    }

    impl ListStore for MemoryStore {
        type Error = Infallible;

        fn entry(&self, ip: PublicIpv4) -> Result<Option<Entry>, Infallible> {
            Ok(self.entries.get(&ip).cloned())
        }

        fn insert(&mut self, entry: &Entry) -> Result<(), Infallible> {
            self.entries.insert(entry.ip, entry.clone());
            Ok(())
        }

        fn delete(&mut self, ip: PublicIpv4) -> Result<(), Infallible> {
            self.entries.remove(&ip);
            Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::memory::MemoryStore;
    use super::*;
    use crate::domain::entry::Expiry;
    use Operation::{Add, Check, Remove};
    use PersonalOutcome as P;

    /// 2026-11-21 12:00:00 UTC.
    const NOON: UnixTime = UnixTime(1_795_262_400);
    const LIMITS: Limits = Limits {
        additions: 3,
        removals: 2,
    };

    fn ip(n: u8) -> PublicIpv4 {
        PublicIpv4::parse(&format!("8.8.8.{n}")).unwrap()
    }

    /// The `n`th address of 8.0.0.0/8, for tests that need many.
    fn nth(n: u32) -> PublicIpv4 {
        PublicIpv4::from_addr(std::net::Ipv4Addr::from(0x0800_0000 | n)).unwrap()
    }

    fn call(operation: Operation, n: u8) -> Call {
        Call {
            operation,
            ip: ip(n),
            details: EntryDetails::default(),
            client: Some("192.0.2.7".into()),
        }
    }

    fn run_call(store: &mut MemoryStore, call: &Call, now: UnixTime) -> Answer {
        let Ok(answer) = perform(store, call, now, LIMITS);
        answer
    }

    fn run(store: &mut MemoryStore, op: Operation, n: u8, now: UnixTime) -> PersonalOutcome {
        run_call(store, &call(op, n), now).outcome
    }

    #[test]
    fn state_table_rows() {
        let mut store = MemoryStore::default();
        assert_eq!(run(&mut store, Check, 1, NOON), P::Unlisted);
        assert_eq!(run(&mut store, Remove, 1, NOON), P::NothingToRemove);
        assert_eq!(run(&mut store, Add, 1, NOON), P::Added);
        assert_eq!(
            store.entries[&ip(1)],
            Entry {
                ip: ip(1),
                added_at: NOON,
                expires_at: None,
                comment: None
            }
        );
        assert_eq!(run(&mut store, Check, 1, NOON), P::Listed);
        assert_eq!(run(&mut store, Add, 1, NOON), P::AlreadyListed);
        assert_eq!(run(&mut store, Remove, 1, NOON), P::Removed);
        assert_eq!(run(&mut store, Check, 1, NOON), P::Unlisted);
        assert!(store.entries.is_empty());
    }

    #[test]
    fn only_actual_changes_count() {
        let mut store = MemoryStore::default();
        run(&mut store, Add, 1, NOON);
        run(&mut store, Add, 1, NOON);
        run(&mut store, Check, 1, NOON);
        run(&mut store, Remove, 2, NOON);
        assert_eq!(
            store.usage,
            DailyUsage {
                day: NOON.utc_day(),
                added: 1,
                removed: 0,
                refused: 0
            }
        );
        run(&mut store, Remove, 1, NOON);
        run(&mut store, Remove, 1, NOON);
        assert_eq!(
            store.usage,
            DailyUsage {
                day: NOON.utc_day(),
                added: 1,
                removed: 1,
                refused: 0
            }
        );
    }

    #[test]
    fn addition_limit_allows_exactly_the_limit_and_refuses_without_change() {
        let mut store = MemoryStore::default();
        for n in 1..=3 {
            assert_eq!(run(&mut store, Add, n, NOON), P::Added);
        }
        assert_eq!(run(&mut store, Add, 4, NOON), P::LimitReached);
        assert_eq!(run(&mut store, Check, 4, NOON), P::Unlisted);
        assert_eq!(store.usage.added, 3);
        assert_eq!(
            run(&mut store, Add, 1, NOON),
            P::AlreadyListed,
            "an add that changes nothing is not refused"
        );
        assert_eq!(
            run(&mut store, Remove, 1, NOON),
            P::Removed,
            "removals have their own limit"
        );
    }

    #[test]
    fn removal_limit_allows_exactly_the_limit_and_refuses_without_change() {
        let mut store = MemoryStore::default();
        for n in 1..=3 {
            run(&mut store, Add, n, NOON);
        }
        assert_eq!(run(&mut store, Remove, 1, NOON), P::Removed);
        assert_eq!(run(&mut store, Remove, 2, NOON), P::Removed);
        assert_eq!(run(&mut store, Remove, 3, NOON), P::LimitReached);
        assert_eq!(run(&mut store, Check, 3, NOON), P::Listed);
        assert_eq!(
            run(&mut store, Remove, 9, NOON),
            P::NothingToRemove,
            "a remove that changes nothing is not refused"
        );
    }

    #[test]
    fn counters_reset_at_midnight_utc_and_not_before() {
        let mut store = MemoryStore::default();
        let midnight = NOON.plus(NOON.seconds_to_next_utc_day());
        let last_second = midnight.minus(1);
        for n in 1..=3 {
            run(&mut store, Add, n, NOON);
        }
        assert_eq!(run(&mut store, Add, 4, last_second), P::LimitReached);
        assert_eq!(run(&mut store, Add, 4, midnight), P::Added);
        assert_eq!(
            store.usage,
            DailyUsage {
                day: midnight.utc_day(),
                added: 1,
                removed: 0,
                refused: 0
            }
        );
    }

    #[test]
    fn a_zero_limit_refuses_every_change() {
        let mut store = MemoryStore::default();
        let Ok(answer) = perform(
            &mut store,
            &call(Add, 1),
            NOON,
            Limits {
                additions: 0,
                removals: 0,
            },
        );
        assert_eq!(answer.outcome, P::LimitReached);
    }

    #[test]
    fn the_answer_carries_the_days_usage_after_the_operation() {
        let mut store = MemoryStore::default();
        assert_eq!(
            run_call(&mut store, &call(Add, 1), NOON).usage,
            Some(DailyUsage {
                day: NOON.utc_day(),
                added: 1,
                removed: 0,
                refused: 0
            })
        );
        assert_eq!(
            run_call(&mut store, &call(Remove, 1), NOON).usage,
            Some(DailyUsage {
                day: NOON.utc_day(),
                added: 1,
                removed: 1,
                refused: 0
            })
        );
        let tomorrow = NOON.plus(86_400);
        assert_eq!(
            run_call(&mut store, &call(Add, 1), tomorrow).usage,
            Some(DailyUsage {
                day: tomorrow.utc_day(),
                added: 1,
                removed: 0,
                refused: 0
            })
        );
        assert_eq!(
            run_call(&mut store, &call(Check, 1), tomorrow).usage,
            None,
            "a check reads no counters"
        );
    }

    #[test]
    fn details_are_stored_with_the_entry() {
        let mut store = MemoryStore::default();
        let details = EntryDetails {
            expiry: Some(Expiry::After(600)),
            comment: Some("scanner".into()),
        };
        run_call(
            &mut store,
            &Call {
                details: details.clone(),
                ..call(Add, 1)
            },
            NOON,
        );
        let entry = &store.entries[&ip(1)];
        assert_eq!(
            (entry.expires_at, entry.comment.clone()),
            (Some(NOON.plus(600)), details.comment)
        );
    }

    #[test]
    fn an_expired_entry_is_gone_for_every_operation_at_its_second() {
        let expiring = Call {
            details: EntryDetails {
                expiry: Some(Expiry::At(NOON.plus(60))),
                comment: None,
            },
            ..call(Add, 1)
        };
        for op in [Check, Add, Remove] {
            let mut store = MemoryStore::default();
            run_call(&mut store, &expiring, NOON);
            assert_eq!(run(&mut store, Check, 1, NOON.plus(59)), P::Listed);
            let expected = match op {
                Check => P::Unlisted,
                Add => P::Added,
                Remove => P::NothingToRemove,
            };
            assert_eq!(run(&mut store, op, 1, NOON.plus(60)), expected, "{op:?}");
            assert!(store
                .history
                .iter()
                .any(|e| e.change == Change::Expired && e.at == NOON.plus(60)));
        }
    }

    #[test]
    fn re_adding_a_listed_address_leaves_its_entry_as_it_was() {
        let mut store = MemoryStore::default();
        let first = Call {
            details: EntryDetails {
                expiry: Some(Expiry::After(600)),
                comment: Some("first".into()),
            },
            ..call(Add, 1)
        };
        run_call(&mut store, &first, NOON);
        let again = Call {
            details: EntryDetails {
                expiry: Some(Expiry::After(9_999)),
                comment: Some("again".into()),
            },
            ..call(Add, 1)
        };
        assert_eq!(
            run_call(&mut store, &again, NOON.plus(5)).outcome,
            P::AlreadyListed
        );
        assert_eq!(store.entries[&ip(1)].comment.as_deref(), Some("first"));
        assert_eq!(store.entries[&ip(1)].expires_at, Some(NOON.plus(600)));
    }

    #[test]
    fn history_records_changes_and_refusals_with_the_client() {
        let mut store = MemoryStore::default();
        for n in 1..=4 {
            run(&mut store, Add, n, NOON);
        }
        run(&mut store, Check, 1, NOON);
        run(&mut store, Add, 1, NOON);
        run(&mut store, Remove, 1, NOON);
        let changes: Vec<Change> = store.history.iter().map(|e| e.change).collect();
        use Change::{Added, LimitRefused, Removed};
        assert_eq!(changes, [Added, Added, Added, LimitRefused, Removed]);
        assert!(store
            .history
            .iter()
            .all(|e| e.client.as_deref() == Some("192.0.2.7") && e.at == NOON));
    }

    #[test]
    fn refusals_are_counted_but_only_the_days_first_is_recorded() {
        let mut store = MemoryStore::default();
        for n in 1..=3 {
            run(&mut store, Add, n, NOON);
        }
        run(&mut store, Remove, 1, NOON);
        run(&mut store, Remove, 2, NOON);
        for _ in 0..5_000 {
            assert_eq!(run(&mut store, Add, 9, NOON), P::LimitReached);
            assert_eq!(run(&mut store, Remove, 3, NOON), P::LimitReached);
        }
        let refusals = store
            .history
            .iter()
            .filter(|e| e.change == Change::LimitRefused)
            .count();
        assert_eq!(
            (store.history.len(), refusals),
            (6, 1),
            "10 000 refused calls leave one history row"
        );
        assert_eq!(store.usage.refused, 10_000);
        let tomorrow = NOON.plus(86_400);
        assert_eq!(run(&mut store, Remove, 3, tomorrow), P::Removed);
        run(&mut store, Add, 9, tomorrow);
        run(&mut store, Add, 10, tomorrow);
        run(&mut store, Add, 11, tomorrow);
        assert_eq!(run(&mut store, Add, 12, tomorrow), P::LimitReached);
        assert_eq!(
            store
                .history
                .iter()
                .filter(|e| e.change == Change::LimitRefused)
                .count(),
            2,
            "a new day records its first refusal"
        );
        assert_eq!(store.usage.refused, 1);
    }

    #[test]
    fn the_history_keeps_only_the_newest_rows() {
        let mut store = MemoryStore::default();
        let limits = Limits {
            additions: u32::MAX,
            removals: u32::MAX,
        };
        let rows = MAX_HISTORY_ROWS as u32 + 10;
        for n in 0..rows {
            let ip = nth(n);
            let Ok(_) = perform(&mut store, &Call { ip, ..call(Add, 1) }, NOON, limits);
        }
        assert_eq!(store.history.len() as u64, MAX_HISTORY_ROWS);
        assert_eq!(
            store.history[0].ip,
            PublicIpv4::parse("8.0.0.10").unwrap(),
            "the oldest went first"
        );
    }

    #[test]
    fn entries_sharing_one_expiry_are_swept_completely_in_bounded_batches() {
        const ENTRIES: u32 = 50_000;
        const BATCH: usize = 1_000;
        let mut store = MemoryStore::default();
        let expires_at = NOON.plus(60);
        for n in 0..ENTRIES {
            let ip = nth(n);
            store.entries.insert(
                ip,
                Entry {
                    ip,
                    added_at: NOON,
                    expires_at: Some(expires_at),
                    comment: None,
                },
            );
        }
        store.entries.insert(
            ip(1),
            Entry {
                ip: ip(1),
                added_at: NOON,
                expires_at: None,
                comment: None,
            },
        );
        let Ok(none_yet) = sweep(&mut store, expires_at.minus(1), BATCH);
        assert_eq!(none_yet, 0);
        let mut sweeps = Vec::new();
        loop {
            let Ok(swept) = sweep(&mut store, expires_at, BATCH);
            assert!(swept <= BATCH);
            sweeps.push(swept);
            if swept < BATCH {
                break;
            }
        }
        assert_eq!(sweeps.iter().sum::<usize>(), ENTRIES as usize);
        assert_eq!(
            sweeps.len(),
            ENTRIES as usize / BATCH + 1,
            "the last sweep finds nothing and stops"
        );
        assert_eq!(
            store.entries.keys().copied().collect::<Vec<_>>(),
            [ip(1)],
            "only the permanent entry is left"
        );
        assert!(store
            .history
            .iter()
            .all(|e| e.change == Change::Expired && e.at == expires_at));
        assert_eq!(store.history.len(), ENTRIES as usize);
    }
}
