//! A holder's own allow list: addresses and ranges the holder never wants
//! challenged, stronger than the global challenge list (`precedence`). Its three
//! operations and their rules, with storage behind a trait and time passed in.

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::holder::allow_range::AllowRange;
use crate::domain::holder::entry::{HistoryEvent, HistoryKind};
use crate::domain::holder::list::{refuse_change, DailyUsage, Limits, ListStore, Operation};
use crate::domain::net::address::PublicIp;
use crate::domain::net::intervals::{union_of_sorted, Intervals};
use crate::domain::time::UnixTime;

/// The ranges of one holder's allow list, as its object holds them in memory
/// (at most `Limits::allow_entries`, a thousand by default), so that the
/// greylist's operations weigh them without reading a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowSet {
    ranges: Vec<AllowRange>,
}

impl AllowSet {
    pub fn new(mut ranges: Vec<AllowRange>) -> Self {
        ranges.sort_unstable();
        ranges.dedup();
        Self { ranges }
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether one of the entries holds the address.
    pub fn holds_ip(&self, ip: PublicIp) -> bool {
        self.ranges.iter().any(|range| range.holds_ip(ip))
    }

    /// The entry that holds the address, the narrowest if several do.
    pub fn holding(&self, ip: PublicIp) -> Option<AllowRange> {
        self.ranges
            .iter()
            .filter(|range| range.holds_ip(ip))
            .max_by_key(|range| range.prefix128())
            .copied()
    }

    /// Whether one entry holds all of `range`.
    pub fn holds(&self, range: AllowRange) -> bool {
        self.ranges.iter().any(|entry| entry.holds(range))
    }

    /// Whether `range` is one of the entries.
    pub fn contains(&self, range: AllowRange) -> bool {
        self.ranges.binary_search(&range).is_ok()
    }

    pub fn insert(&mut self, range: AllowRange) {
        if let Err(at) = self.ranges.binary_search(&range) {
            self.ranges.insert(at, range);
        }
    }

    pub fn remove(&mut self, range: AllowRange) {
        if let Ok(at) = self.ranges.binary_search(&range) {
            self.ranges.remove(at);
        }
    }

    /// The addresses the entries hold, each family as sorted disjoint intervals:
    /// what a feed cuts out of the global challenge list for this holder.
    pub fn intervals(&self) -> (Intervals<u32>, Intervals<u128>) {
        let v4 = self.ranges.iter().filter_map(|range| match range {
            AllowRange::V4(range) => Some((range.first(), range.last())),
            AllowRange::V6(_) => None,
        });
        let v6 = self.ranges.iter().filter_map(|range| match range {
            AllowRange::V6(range) => Some((range.first(), range.last())),
            AllowRange::V4(_) => None,
        });
        (union_of_sorted(v4), union_of_sorted(v6))
    }
}

/// One allow-list entry as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowEntry {
    pub range: AllowRange,
    pub added_at: UnixTime,
    pub comment: Option<String>,
}

/// What an allow-list operation answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowOutcome {
    Listed,
    Unlisted,
    Added,
    AlreadyListed,
    Removed,
    NotListed,
    LimitReached,
    /// The allow list holds the most entries it may.
    ListFull,
    /// The operator's allow list holds all of the range: nothing is done (the
    /// Worker answers it, as it does for the greylist's operations).
    GlobalAllowListed,
}

impl Coded for AllowOutcome {
    const ALL: &'static [Self] = &[
        Self::Listed,
        Self::Unlisted,
        Self::Added,
        Self::AlreadyListed,
        Self::Removed,
        Self::NotListed,
        Self::LimitReached,
        Self::ListFull,
        Self::GlobalAllowListed,
    ];

    /// `X-Greylist-Outcome`, and the wire form between Worker and object.
    fn code(self) -> &'static str {
        match self {
            Self::Listed => "listed_allow",
            Self::Unlisted => "not_listed_allow",
            Self::Added => "added_allow",
            Self::AlreadyListed => "already_allow",
            Self::Removed => "removed_allow",
            Self::NotListed => "not_on_allow_list",
            Self::LimitReached => "limit_reached",
            Self::ListFull => "allow_list_full",
            Self::GlobalAllowListed => "allow_listed",
        }
    }
}

serde_by_code!(AllowOutcome);

/// One allow-list operation as the Worker hands it to the holder's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowCall {
    pub operation: Operation,
    pub range: AllowRange,
    #[serde(default)]
    pub comment: Option<String>,
    /// The address of the client that made the request, for the history.
    pub client: Option<String>,
}

/// The object's answer: the outcome, the day's usage after it (for add and
/// remove) and the limits it ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowAnswer {
    pub outcome: AllowOutcome,
    pub usage: Option<DailyUsage>,
    pub limits: Limits,
}

/// What the allow list needs of storage beyond the personal list's.
pub trait AllowStore: ListStore {
    fn insert_allow(&mut self, entry: &AllowEntry) -> Result<(), Self::Error>;
    fn delete_allow(&mut self, range: AllowRange) -> Result<(), Self::Error>;
    /// The live personal entries inside `range`, counted up to `at_most`: an
    /// add needs to know only whether they fit in the day's removals left, and
    /// a wide range may cover most of the list.
    fn covered(&self, range: AllowRange, now: UnixTime, at_most: u64) -> Result<u64, Self::Error>;
    /// Removes the live personal entries inside `range`, each recorded in the
    /// history as a removal by `client`.
    fn remove_covered(
        &mut self,
        range: AllowRange,
        now: UnixTime,
        client: Option<&str>,
    ) -> Result<(), Self::Error>;
}

/// Runs one allow-list operation against `set`, the entries as stored, which it
/// keeps equal to them. Adds and removes count against the day's allow-list
/// changes; an add also takes away the personal entries it covers, each a
/// removal of the day, and changes nothing when the day has too few left.
pub fn perform_allow<S: AllowStore>(
    store: &mut S,
    set: &mut AllowSet,
    call: &AllowCall,
    now: UnixTime,
    limits: Limits,
) -> Result<AllowAnswer, S::Error> {
    let range = call.range;
    let event = |change| HistoryEvent {
        at: now,
        change,
        ip: range.into(),
        client: call.client.clone(),
    };
    let refused = event(HistoryKind::LimitRefused);
    let (outcome, usage) = match call.operation {
        Operation::Check => {
            let outcome = if set.holds(range) {
                AllowOutcome::Listed
            } else {
                AllowOutcome::Unlisted
            };
            (outcome, None)
        }
        Operation::Add => {
            let mut usage = store.usage()?.on(now.utc_day());
            let outcome = if set.holds(range) {
                AllowOutcome::AlreadyListed
            } else if usage.allow_changes >= limits.allow_changes {
                refuse_change(store, &mut usage, &refused)?;
                AllowOutcome::LimitReached
            } else if set.len() >= limits.allow_entries as usize {
                refuse_change(store, &mut usage, &refused)?;
                AllowOutcome::ListFull
            } else {
                let left = limits.removals.saturating_sub(usage.removed);
                let covered = store.covered(range, now, u64::from(left) + 1)?;
                if covered > u64::from(left) {
                    refuse_change(store, &mut usage, &refused)?;
                    AllowOutcome::LimitReached
                } else {
                    store.remove_covered(range, now, call.client.as_deref())?;
                    usage.removed += covered as u32;
                    store.insert_allow(&AllowEntry {
                        range,
                        added_at: now,
                        comment: call.comment.clone(),
                    })?;
                    store.record(&event(HistoryKind::AllowAdded))?;
                    usage.allow_changes += 1;
                    store.save_usage(usage)?;
                    set.insert(range);
                    AllowOutcome::Added
                }
            };
            (outcome, Some(usage))
        }
        Operation::Remove => {
            let mut usage = store.usage()?.on(now.utc_day());
            let outcome = if !set.contains(range) {
                AllowOutcome::NotListed
            } else if usage.allow_changes >= limits.allow_changes {
                refuse_change(store, &mut usage, &refused)?;
                AllowOutcome::LimitReached
            } else {
                store.delete_allow(range)?;
                store.record(&event(HistoryKind::AllowRemoved))?;
                usage.allow_changes += 1;
                store.save_usage(usage)?;
                set.remove(range);
                AllowOutcome::Removed
            };
            (outcome, Some(usage))
        }
    };
    Ok(AllowAnswer {
        outcome,
        usage,
        limits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::entry::{Entry, Subject};
    use crate::domain::holder::list::memory::MemoryStore;
    use crate::domain::net::address::Ipv6;
    use crate::domain::net::address::Listed;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn range(text: &str) -> AllowRange {
        AllowRange::parse(text, Ipv6::On).unwrap().range
    }

    fn limits() -> Limits {
        Limits {
            removals: 2,
            allow_entries: 2,
            allow_changes: 3,
            ..Limits::default()
        }
    }

    fn call(operation: Operation, text: &str) -> AllowCall {
        AllowCall {
            operation,
            range: range(text),
            comment: None,
            client: None,
        }
    }

    fn listed(store: &mut MemoryStore, text: &str) {
        let ip = text.parse::<Listed>().unwrap();
        store.entries.insert(
            ip,
            Entry {
                ip,
                added_at: NOW,
                expires_at: None,
                comment: None,
            },
        );
    }

    #[test]
    fn an_add_takes_away_the_personal_entries_it_covers_each_a_removal_of_the_day() {
        let (mut store, mut set) = (MemoryStore::default(), AllowSet::default());
        listed(&mut store, "45.67.89.1");
        listed(&mut store, "45.67.89.2");
        listed(&mut store, "45.67.90.1");
        let mut run = |store: &mut MemoryStore, op, text| {
            perform_allow(store, &mut set, &call(op, text), NOW, limits()).unwrap()
        };
        let added = run(&mut store, Operation::Add, "45.67.89.0/24");
        assert_eq!(added.outcome, AllowOutcome::Added);
        let usage = added.usage.unwrap();
        assert_eq!((usage.removed, usage.allow_changes), (2, 1));
        let left: Vec<String> = store.entries.keys().map(|ip| ip.to_string()).collect();
        assert_eq!(
            left,
            ["45.67.90.1"],
            "the covered personal entries are gone once the allow entry is added"
        );
        let removed: Vec<(HistoryKind, String)> = store
            .history
            .iter()
            .map(|e| (e.change, e.ip.to_string()))
            .collect();
        assert_eq!(
            removed,
            [
                (HistoryKind::Removed, "45.67.89.1".to_owned()),
                (HistoryKind::Removed, "45.67.89.2".to_owned()),
                (HistoryKind::AllowAdded, "45.67.89.0/24".to_owned()),
            ]
        );
        // Inside an entry is already on the list; the check says so too.
        assert_eq!(
            run(&mut store, Operation::Add, "45.67.89.7").outcome,
            AllowOutcome::AlreadyListed
        );
        assert_eq!(
            run(&mut store, Operation::Check, "45.67.89.7").outcome,
            AllowOutcome::Listed
        );
        assert_eq!(
            run(&mut store, Operation::Check, "45.67.0.0/16").outcome,
            AllowOutcome::Unlisted
        );
        // The day's removals are used up: an add that would take one away changes nothing.
        let refused = run(&mut store, Operation::Add, "45.67.90.0/24");
        assert_eq!(refused.outcome, AllowOutcome::LimitReached);
        assert_eq!(store.entries.len(), 1);
        assert_eq!(
            refused.usage.unwrap().allow_changes,
            1,
            "a refusal counts nothing"
        );
        // Removing the entry brings nothing back.
        assert_eq!(
            run(&mut store, Operation::Remove, "45.67.89.7").outcome,
            AllowOutcome::NotListed
        );
        assert_eq!(
            run(&mut store, Operation::Remove, "45.67.89.0/24").outcome,
            AllowOutcome::Removed
        );
        assert_eq!(store.entries.len(), 1);
        assert!(set.is_empty());
        assert_eq!(
            store.history.last().map(|e| (e.change, e.ip)),
            Some((
                HistoryKind::AllowRemoved,
                Subject::Allow(range("45.67.89.0/24"))
            ))
        );
    }

    #[test]
    fn the_allow_list_holds_at_most_its_entries_and_changes_a_day() {
        let (mut store, mut set) = (MemoryStore::default(), AllowSet::default());
        let mut run = |op, text| {
            perform_allow(&mut store, &mut set, &call(op, text), NOW, limits())
                .unwrap()
                .outcome
        };
        assert_eq!(run(Operation::Add, "8.8.8.8"), AllowOutcome::Added);
        assert_eq!(run(Operation::Add, "8.8.4.4"), AllowOutcome::Added);
        assert_eq!(run(Operation::Add, "1.1.1.1"), AllowOutcome::ListFull);
        assert_eq!(run(Operation::Remove, "8.8.8.8"), AllowOutcome::Removed);
        // Three changes made: the fourth is refused, an add or a remove alike.
        assert_eq!(run(Operation::Add, "1.1.1.1"), AllowOutcome::LimitReached);
        assert_eq!(
            run(Operation::Remove, "8.8.4.4"),
            AllowOutcome::LimitReached,
            "past the day's allow-list changes a remove is refused as an add is"
        );
        assert_eq!(run(Operation::Check, "8.8.4.4"), AllowOutcome::Listed);
        // The next day counts afresh.
        let tomorrow = perform_allow(
            &mut store,
            &mut set,
            &call(Operation::Remove, "8.8.4.4"),
            NOW.plus(86_400),
            limits(),
        )
        .unwrap();
        assert_eq!(tomorrow.outcome, AllowOutcome::Removed);
    }

    #[test]
    fn the_set_gives_each_familys_intervals_merged() {
        let set = AllowSet::new(vec![
            range("45.67.89.0/24"),
            range("45.67.89.7"),
            range("45.67.90.0/24"),
            range("2a00:1450::/32"),
        ]);
        let (v4, v6) = set.intervals();
        assert_eq!(v4, [(0x2d43_5900, 0x2d43_5aff)]);
        assert_eq!(v6.len(), 1);
        assert!(set.holds_ip(
            PublicIp::from_octets(range("2a00:1450::9").span().0.to_be_bytes()).unwrap()
        ));
    }
}
