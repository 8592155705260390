//! One license holder's personal list and daily counters: the rules the
//! Durable Object enforces, with storage behind a trait and time passed in.

use super::ipv4::PublicIpv4;
use super::outcome::PersonalOutcome;

const SECONDS_PER_DAY: u64 = 86_400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Check,
    Add,
    Remove,
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Add => "add",
            Self::Remove => "remove",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Check, Self::Add, Self::Remove].into_iter().find(|op| op.name() == name)
    }
}

/// Daily limits per license holder (decisions.md: configuration, defaults 6000 and 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub additions: u32,
    pub removals: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self { additions: 6000, removals: 1000 }
    }
}

impl Limits {
    /// Reads the configured values; an absent one keeps its default, a malformed one is an error
    /// so that a typo in the configuration is noticed instead of silently lifting a limit.
    pub fn from_config(additions: Option<&str>, removals: Option<&str>) -> Result<Self, String> {
        let read = |name: &str, value: Option<&str>, default: u32| match value {
            None => Ok(default),
            Some(text) => text.trim().parse().map_err(|_| format!("{name} must be a whole number, not {text:?}")),
        };
        let defaults = Self::default();
        Ok(Self {
            additions: read("DAILY_ADDITIONS", additions, defaults.additions)?,
            removals: read("DAILY_REMOVALS", removals, defaults.removals)?,
        })
    }
}

/// Seconds since the Unix epoch, as the caller's clock reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnixTime(pub u64);

impl UnixTime {
    /// Days since the epoch: a new UTC calendar day starts at 00:00 UTC.
    pub fn utc_day(self) -> u64 {
        self.0 / SECONDS_PER_DAY
    }
}

/// What one UTC day has used of the limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DailyUsage {
    pub day: u64,
    pub added: u32,
    pub removed: u32,
}

impl DailyUsage {
    /// The usage that counts on `day`: a stored usage of an earlier day counts as nothing.
    pub fn on(self, day: u64) -> Self {
        if self.day == day {
            self
        } else {
            Self { day, added: 0, removed: 0 }
        }
    }
}

/// The storage one holder's list needs. Every call is synchronous so that a
/// whole operation runs without yielding: nothing can interleave with it.
pub trait ListStore {
    type Error;
    fn contains(&self, ip: PublicIpv4) -> Result<bool, Self::Error>;
    fn insert(&mut self, ip: PublicIpv4, at: UnixTime) -> Result<(), Self::Error>;
    fn delete(&mut self, ip: PublicIpv4) -> Result<(), Self::Error>;
    fn usage(&self) -> Result<DailyUsage, Self::Error>;
    fn save_usage(&mut self, usage: DailyUsage) -> Result<(), Self::Error>;
}

/// Runs one operation of the state table: only an actual addition or removal
/// counts against the day's limit, and a refused one changes nothing.
pub fn apply<S: ListStore>(
    store: &mut S,
    operation: Operation,
    ip: PublicIpv4,
    now: UnixTime,
    limits: Limits,
) -> Result<PersonalOutcome, S::Error> {
    let listed = store.contains(ip)?;
    let outcome = match (operation, listed) {
        (Operation::Check, true) => PersonalOutcome::Listed,
        (Operation::Check, false) => PersonalOutcome::NotListed,
        (Operation::Add, true) => PersonalOutcome::AlreadyListed,
        (Operation::Remove, false) => PersonalOutcome::NotOnList,
        (Operation::Add, false) => {
            let usage = store.usage()?.on(now.utc_day());
            if usage.added >= limits.additions {
                PersonalOutcome::LimitReached
            } else {
                store.insert(ip, now)?;
                store.save_usage(DailyUsage { added: usage.added + 1, ..usage })?;
                PersonalOutcome::Added
            }
        }
        (Operation::Remove, true) => {
            let usage = store.usage()?.on(now.utc_day());
            if usage.removed >= limits.removals {
                PersonalOutcome::LimitReached
            } else {
                store.delete(ip)?;
                store.save_usage(DailyUsage { removed: usage.removed + 1, ..usage })?;
                PersonalOutcome::Removed
            }
        }
    };
    Ok(outcome)
}

#[cfg(test)]
pub mod memory {
    use std::collections::BTreeMap;
    use std::convert::Infallible;

    use super::*;

    /// An in-memory store for the native tests of the rules.
    #[derive(Debug, Default)]
    pub struct MemoryStore {
        pub entries: BTreeMap<PublicIpv4, UnixTime>,
        pub usage: DailyUsage,
    }

    impl ListStore for MemoryStore {
        type Error = Infallible;

        fn contains(&self, ip: PublicIpv4) -> Result<bool, Infallible> {
            Ok(self.entries.contains_key(&ip))
        }

        fn insert(&mut self, ip: PublicIpv4, at: UnixTime) -> Result<(), Infallible> {
            self.entries.insert(ip, at);
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
    }
}

#[cfg(test)]
mod tests {
    use super::memory::MemoryStore;
    use super::*;
    use Operation::{Add, Check, Remove};
    use PersonalOutcome as P;

    /// 2026-11-21 12:00:00 UTC.
    const NOON: UnixTime = UnixTime(1_795_262_400);
    const LIMITS: Limits = Limits { additions: 3, removals: 2 };

    fn ip(n: u8) -> PublicIpv4 {
        PublicIpv4::parse(&format!("8.8.8.{n}")).unwrap()
    }

    fn run(store: &mut MemoryStore, op: Operation, n: u8, now: UnixTime) -> PersonalOutcome {
        let Ok(outcome) = apply(store, op, ip(n), now, LIMITS);
        outcome
    }

    #[test]
    fn state_table_rows() {
        let mut store = MemoryStore::default();
        assert_eq!(run(&mut store, Check, 1, NOON), P::NotListed);
        assert_eq!(run(&mut store, Remove, 1, NOON), P::NotOnList);
        assert_eq!(run(&mut store, Add, 1, NOON), P::Added);
        assert_eq!(store.entries.get(&ip(1)), Some(&NOON));
        assert_eq!(run(&mut store, Check, 1, NOON), P::Listed);
        assert_eq!(run(&mut store, Add, 1, NOON), P::AlreadyListed);
        assert_eq!(run(&mut store, Remove, 1, NOON), P::Removed);
        assert_eq!(run(&mut store, Check, 1, NOON), P::NotListed);
        assert!(store.entries.is_empty());
    }

    #[test]
    fn only_actual_changes_count() {
        let mut store = MemoryStore::default();
        run(&mut store, Add, 1, NOON);
        run(&mut store, Add, 1, NOON);
        run(&mut store, Check, 1, NOON);
        run(&mut store, Remove, 2, NOON);
        assert_eq!(store.usage, DailyUsage { day: NOON.utc_day(), added: 1, removed: 0 });
        run(&mut store, Remove, 1, NOON);
        run(&mut store, Remove, 1, NOON);
        assert_eq!(store.usage, DailyUsage { day: NOON.utc_day(), added: 1, removed: 1 });
    }

    #[test]
    fn addition_limit_allows_exactly_the_limit_and_refuses_without_change() {
        let mut store = MemoryStore::default();
        for n in 1..=3 {
            assert_eq!(run(&mut store, Add, n, NOON), P::Added);
        }
        assert_eq!(run(&mut store, Add, 4, NOON), P::LimitReached);
        assert_eq!(run(&mut store, Check, 4, NOON), P::NotListed);
        assert_eq!(store.usage.added, 3);
        assert_eq!(run(&mut store, Add, 1, NOON), P::AlreadyListed, "an add that changes nothing is not refused");
        assert_eq!(run(&mut store, Remove, 1, NOON), P::Removed, "removals have their own limit");
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
        assert_eq!(run(&mut store, Remove, 9, NOON), P::NotOnList, "a remove that changes nothing is not refused");
    }

    #[test]
    fn counters_reset_at_midnight_utc_and_not_before() {
        let mut store = MemoryStore::default();
        let last_second = UnixTime(NOON.0 - NOON.0 % 86_400 + 86_399);
        let midnight = UnixTime(last_second.0 + 1);
        for n in 1..=3 {
            run(&mut store, Add, n, NOON);
        }
        assert_eq!(run(&mut store, Add, 4, last_second), P::LimitReached);
        assert_eq!(run(&mut store, Add, 4, midnight), P::Added);
        assert_eq!(store.usage, DailyUsage { day: midnight.utc_day(), added: 1, removed: 0 });
    }

    #[test]
    fn a_zero_limit_refuses_every_change() {
        let mut store = MemoryStore::default();
        let Ok(outcome) = apply(&mut store, Add, ip(1), NOON, Limits { additions: 0, removals: 0 });
        assert_eq!(outcome, P::LimitReached);
    }

    #[test]
    fn limits_come_from_configuration_with_defaults() {
        assert_eq!(Limits::from_config(None, None), Ok(Limits { additions: 6000, removals: 1000 }));
        assert_eq!(Limits::from_config(Some("5"), Some(" 2 ")), Ok(Limits { additions: 5, removals: 2 }));
        assert!(Limits::from_config(Some("lots"), None).unwrap_err().contains("DAILY_ADDITIONS"));
        assert!(Limits::from_config(None, Some("-1")).unwrap_err().contains("DAILY_REMOVALS"));
    }

    #[test]
    fn operation_names_round_trip() {
        for op in [Check, Add, Remove] {
            assert_eq!(Operation::from_name(op.name()), Some(op));
        }
        assert_eq!(Operation::from_name("list"), None);
    }
}
