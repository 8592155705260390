//! The holder's rules (`domain::holder`), each test run twice: against
//! `MemoryStore`, the model, and against `HolderTables` on a real SQLite, running
//! the statements the Durable Object runs in production.

use std::fmt::Debug;

use crate::domain::code::Coded;
use crate::domain::holder::entry::{Entry, EntryDetails, Expiry, HistoryEvent, HistoryKind};
use crate::domain::holder::list::memory::MemoryStore;
use crate::domain::holder::list::PersonalOutcome as P;
use crate::domain::holder::list::{
    extend, perform, sweep, DailyUsage, Limits, ListAnswer, ListCall, ListStore, Operation,
    MAX_HISTORY_ROWS,
};
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::net::ipv4::PublicIpv4;
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::rows::{ip_of, subject_of};
use crate::store::holder::schema::migrate;
use crate::store::sql::native::NativeSql;
use crate::store::sql::Sql;
use Operation::{Add, Check, Remove};

/// 2026-11-21 12:00:00 UTC.
pub const NOON: UnixTime = UnixTime(1_795_262_400);
/// Limits no test of the stores' reads reaches.
pub const NO_LIMITS: Limits = Limits {
    additions: u32::MAX,
    removals: u32::MAX,
    entries: u32::MAX,
    allow_entries: 0,
    allow_changes: 0,
    reports: 0,
};
const LIMITS: Limits = Limits {
    additions: 3,
    removals: 2,
    entries: u32::MAX,
    allow_entries: 0,
    allow_changes: 0,
    reports: 0,
};

/// A store the suite can look into: every entry by address, the history oldest first.
pub trait Inspected: ListStore<Error: Debug> {
    fn all_entries(&self) -> Vec<Entry>;
    fn all_history(&self) -> Vec<HistoryEvent>;
}

impl Inspected for MemoryStore {
    fn all_entries(&self) -> Vec<Entry> {
        self.entries.values().cloned().collect()
    }

    fn all_history(&self) -> Vec<HistoryEvent> {
        self.history.clone()
    }
}

/// A fresh holder database with the production schema.
/// An address as the rows keep it, from its text.
pub fn listed_ip(text: &str) -> Listed {
    text.parse().unwrap()
}

pub fn sql_store() -> HolderTables<NativeSql> {
    let sql = NativeSql::new();
    migrate(&sql).unwrap();
    HolderTables::new(sql)
}

/// One operation on `text`, with `expiry` and no comment, at `at`, within no limits.
pub fn apply(
    store: &mut HolderTables<impl Sql>,
    operation: Operation,
    text: &str,
    expiry: Option<Expiry>,
    at: UnixTime,
) {
    let call = ListCall {
        operation,
        ip: text.parse().unwrap(),
        prefix: Ipv6Prefix::Whole,
        details: EntryDetails {
            expiry,
            comment: None,
        },
        client: None,
        global_challenge: false,
    };
    perform(store, &call, at, NO_LIMITS).unwrap();
}

impl<S: Sql> Inspected for HolderTables<S> {
    fn all_entries(&self) -> Vec<Entry> {
        let mut all = Vec::new();
        for row in self
            .sql()
            .query("SELECT ip FROM entries ORDER BY ip", &[])
            .unwrap()
        {
            let ip = ip_of(row.blob(0).unwrap()).unwrap();
            all.push(self.entry(ip).unwrap().unwrap());
        }
        all
    }

    fn all_history(&self) -> Vec<HistoryEvent> {
        let rows = self
            .sql()
            .query(
                "SELECT at, change, ip, client FROM history ORDER BY id",
                &[],
            )
            .unwrap();
        rows.iter()
            .map(|row| HistoryEvent {
                at: UnixTime(row.int(0).unwrap()),
                change: HistoryKind::from_code(&row.text(1).unwrap()).unwrap(),
                ip: subject_of(row.blob(2).unwrap()).unwrap(),
                client: row.opt_text(3).unwrap(),
            })
            .collect()
    }
}

fn address(n: u8) -> PublicIp {
    format!("8.8.8.{n}").parse().unwrap()
}

/// The entry of `address(n)`.
fn ip(n: u8) -> Listed {
    Listed::Ip(address(n))
}

/// The `n`th address of 8.0.0.0/8, for tests that need many.
fn nth_address(n: u32) -> PublicIp {
    PublicIpv4::from_addr(std::net::Ipv4Addr::from(0x0800_0000 | n))
        .unwrap()
        .into()
}

fn nth(n: u32) -> Listed {
    Listed::Ip(nth_address(n))
}

fn call(operation: Operation, n: u8) -> ListCall {
    ListCall {
        operation,
        ip: address(n),
        prefix: Ipv6Prefix::Whole,
        details: EntryDetails::default(),
        client: Some("192.0.2.7".into()),
        global_challenge: false,
    }
}

fn run_call(store: &mut impl Inspected, call: &ListCall, now: UnixTime) -> ListAnswer {
    perform(store, call, now, LIMITS).unwrap()
}

fn run(store: &mut impl Inspected, op: Operation, n: u8, now: UnixTime) -> P {
    run_call(store, &call(op, n), now).outcome
}

fn usage(store: &impl Inspected) -> DailyUsage {
    store.usage().unwrap()
}

fn state_table_rows<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    assert_eq!(run(&mut store, Check, 1, NOON), P::Unlisted);
    assert_eq!(run(&mut store, Remove, 1, NOON), P::NothingToRemove);
    assert_eq!(run(&mut store, Add, 1, NOON), P::Added);
    assert_eq!(
        store.all_entries(),
        [Entry {
            ip: ip(1),
            added_at: NOON,
            expires_at: None,
            comment: None
        }]
    );
    assert_eq!(run(&mut store, Check, 1, NOON), P::Listed);
    assert_eq!(run(&mut store, Add, 1, NOON), P::AlreadyListed);
    assert_eq!(run(&mut store, Remove, 1, NOON), P::Removed);
    assert_eq!(run(&mut store, Check, 1, NOON), P::Unlisted);
    assert!(store.all_entries().is_empty());
}

fn only_actual_changes_count<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    run(&mut store, Add, 1, NOON);
    run(&mut store, Add, 1, NOON);
    run(&mut store, Check, 1, NOON);
    run(&mut store, Remove, 2, NOON);
    assert_eq!(
        usage(&store),
        DailyUsage {
            day: NOON.utc_day(),
            added: 1,
            removed: 0,
            refused: 0,
            ..DailyUsage::default()
        }
    );
    run(&mut store, Remove, 1, NOON);
    run(&mut store, Remove, 1, NOON);
    assert_eq!(
        usage(&store),
        DailyUsage {
            day: NOON.utc_day(),
            added: 1,
            removed: 1,
            refused: 0,
            ..DailyUsage::default()
        }
    );
}

fn addition_limit_allows_exactly_the_limit_and_refuses_without_change<S: Inspected>(
    fresh: fn() -> S,
) {
    let mut store = fresh();
    for n in 1..=3 {
        assert_eq!(run(&mut store, Add, n, NOON), P::Added);
    }
    assert_eq!(
        run(&mut store, Add, 4, NOON),
        P::LimitReached,
        "an add past the day's limit is refused"
    );
    assert_eq!(run(&mut store, Check, 4, NOON), P::Unlisted);
    assert_eq!(usage(&store).added, 3);
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

fn removal_limit_allows_exactly_the_limit_and_refuses_without_change<S: Inspected>(
    fresh: fn() -> S,
) {
    let mut store = fresh();
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

fn counters_reset_at_midnight_utc_and_not_before<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let midnight = NOON.plus(NOON.seconds_to_next_utc_day());
    let last_second = midnight.minus(1);
    for n in 1..=3 {
        run(&mut store, Add, n, NOON);
    }
    assert_eq!(run(&mut store, Add, 4, last_second), P::LimitReached);
    assert_eq!(
        run(&mut store, Add, 4, midnight),
        P::Added,
        "a new UTC day starts the daily counters again"
    );
    assert_eq!(
        usage(&store),
        DailyUsage {
            day: midnight.utc_day(),
            added: 1,
            removed: 0,
            refused: 0,
            ..DailyUsage::default()
        }
    );
}

fn a_zero_limit_refuses_every_change<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let answer = perform(
        &mut store,
        &call(Add, 1),
        NOON,
        Limits {
            additions: 0,
            removals: 0,
            entries: u32::MAX,
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(answer.outcome, P::LimitReached);
    assert!(store.all_entries().is_empty());
}

fn the_list_holds_at_most_its_bound_expired_entries_counted_until_swept<S: Inspected>(
    fresh: fn() -> S,
) {
    let mut store = fresh();
    let limits = Limits {
        entries: 2,
        ..LIMITS
    };
    let add = |store: &mut S, n: u8, expiry: Option<Expiry>, at: UnixTime| {
        let call = ListCall {
            details: EntryDetails {
                expiry,
                comment: None,
            },
            ..call(Add, n)
        };
        perform(store, &call, at, limits).unwrap().outcome
    };
    assert_eq!(add(&mut store, 1, None, NOON), P::Added);
    assert_eq!(add(&mut store, 2, Some(Expiry::After(60)), NOON), P::Added);
    assert_eq!(store.size().unwrap(), 2);
    assert_eq!(
        add(&mut store, 3, None, NOON),
        P::ListFull,
        "an add past the list's bound is refused as full"
    );
    assert_eq!(store.all_entries().len(), 2, "a full list changes nothing");
    assert_eq!(
        (usage(&store).added, usage(&store).refused),
        (2, 1),
        "counted as a refusal, not an addition"
    );
    let later = NOON.plus(61);
    assert_eq!(
        add(&mut store, 3, None, later),
        P::ListFull,
        "an expired entry counts until it is swept"
    );
    sweep(&mut store, later, 10).unwrap();
    assert_eq!(store.size().unwrap(), 1);
    assert_eq!(
        add(&mut store, 3, None, later),
        P::Added,
        "the sweep made room"
    );
    assert_eq!(
        add(&mut store, 4, None, later),
        P::LimitReached,
        "full and out of additions: the daily limit is named"
    );
    let mut roomy = fresh();
    for n in 1..=2 {
        add(&mut roomy, n, None, NOON);
    }
    perform(&mut roomy, &call(Remove, 1), NOON, limits).unwrap();
    assert_eq!(roomy.size().unwrap(), 1, "a removal makes room");
    assert_eq!(add(&mut roomy, 3, None, NOON), P::Added);
}

fn the_answer_carries_the_days_usage_after_the_operation<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let day = |added, removed, at: UnixTime| {
        Some(DailyUsage {
            day: at.utc_day(),
            added,
            removed,
            refused: 0,
            ..DailyUsage::default()
        })
    };
    assert_eq!(
        run_call(&mut store, &call(Add, 1), NOON).usage,
        day(1, 0, NOON)
    );
    assert_eq!(
        run_call(&mut store, &call(Remove, 1), NOON).usage,
        day(1, 1, NOON)
    );
    let tomorrow = NOON.plus(86_400);
    assert_eq!(
        run_call(&mut store, &call(Add, 1), tomorrow).usage,
        day(1, 0, tomorrow)
    );
    assert_eq!(
        run_call(&mut store, &call(Check, 1), tomorrow).usage,
        None,
        "a check reads no counters"
    );
}

fn details_are_stored_with_the_entry<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let details = EntryDetails {
        expiry: Some(Expiry::After(600)),
        comment: Some("scanner, <b>ticket</b> #42 é".into()),
    };
    run_call(
        &mut store,
        &ListCall {
            details: details.clone(),
            ..call(Add, 1)
        },
        NOON,
    );
    let entry = store.entry(ip(1)).unwrap().unwrap();
    assert_eq!(
        (entry.expires_at, entry.comment),
        (Some(NOON.plus(600)), details.comment)
    );
}

fn an_expired_entry_is_gone_for_every_operation_at_its_second<S: Inspected>(fresh: fn() -> S) {
    let expiring = ListCall {
        details: EntryDetails {
            expiry: Some(Expiry::At(NOON.plus(60))),
            comment: None,
        },
        ..call(Add, 1)
    };
    for op in [Check, Add, Remove] {
        let mut store = fresh();
        run_call(&mut store, &expiring, NOON);
        assert_eq!(run(&mut store, Check, 1, NOON.plus(59)), P::Listed);
        let expected = match op {
            Check => P::Unlisted,
            Add => P::Added,
            Remove => P::NothingToRemove,
        };
        assert_eq!(run(&mut store, op, 1, NOON.plus(60)), expected, "{op:?}");
        assert!(store
            .all_history()
            .iter()
            .any(|e| e.change == HistoryKind::Expired && e.at == NOON.plus(60)));
    }
}

fn re_adding_a_listed_address_leaves_its_entry_as_it_was<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let first = ListCall {
        details: EntryDetails {
            expiry: Some(Expiry::After(600)),
            comment: Some("first".into()),
        },
        ..call(Add, 1)
    };
    run_call(&mut store, &first, NOON);
    let again = ListCall {
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
    let entry = store.entry(ip(1)).unwrap().unwrap();
    assert_eq!(
        (entry.comment.as_deref(), entry.expires_at),
        (Some("first"), Some(NOON.plus(600)))
    );
}

fn history_records_changes_and_refusals_with_the_client<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    for n in 1..=4 {
        run(&mut store, Add, n, NOON);
    }
    run(&mut store, Check, 1, NOON);
    run(&mut store, Add, 1, NOON);
    run(&mut store, Remove, 1, NOON);
    let history = store.all_history();
    let changes: Vec<HistoryKind> = history.iter().map(|e| e.change).collect();
    use HistoryKind::{Added, LimitRefused, Removed};
    assert_eq!(changes, [Added, Added, Added, LimitRefused, Removed]);
    assert!(history
        .iter()
        .all(|e| e.client.as_deref() == Some("192.0.2.7") && e.at == NOON));
}

fn refusals_are_counted_but_only_the_days_first_is_recorded<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    for n in 1..=3 {
        run(&mut store, Add, n, NOON);
    }
    run(&mut store, Remove, 1, NOON);
    run(&mut store, Remove, 2, NOON);
    for _ in 0..5_000 {
        assert_eq!(run(&mut store, Add, 9, NOON), P::LimitReached);
        assert_eq!(run(&mut store, Remove, 3, NOON), P::LimitReached);
    }
    let refusals = |history: &[HistoryEvent]| {
        history
            .iter()
            .filter(|e| e.change == HistoryKind::LimitRefused)
            .count()
    };
    let history = store.all_history();
    assert_eq!(
        (history.len(), refusals(&history)),
        (6, 1),
        "10 000 refused calls leave one history row"
    );
    assert_eq!(usage(&store).refused, 10_000);
    let tomorrow = NOON.plus(86_400);
    assert_eq!(run(&mut store, Remove, 3, tomorrow), P::Removed);
    for n in [9, 10, 11] {
        run(&mut store, Add, n, tomorrow);
    }
    assert_eq!(run(&mut store, Add, 12, tomorrow), P::LimitReached);
    assert_eq!(
        refusals(&store.all_history()),
        2,
        "a new day records its first refusal"
    );
    assert_eq!(usage(&store).refused, 1);
}

fn the_history_keeps_only_the_newest_rows<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let limits = Limits {
        additions: u32::MAX,
        removals: u32::MAX,
        entries: u32::MAX,
        ..Limits::default()
    };
    for n in 0..MAX_HISTORY_ROWS as u32 + 10 {
        perform(
            &mut store,
            &ListCall {
                ip: nth_address(n),
                prefix: Ipv6Prefix::Whole,
                ..call(Add, 1)
            },
            NOON,
            limits,
        )
        .unwrap();
    }
    let history = store.all_history();
    assert_eq!(
        history.len() as u64,
        MAX_HISTORY_ROWS,
        "the history is cut to its bound of rows"
    );
    assert_eq!(history[0].ip, nth(10).into(), "the oldest went first");
    assert_eq!(
        history.last().unwrap().ip,
        nth(MAX_HISTORY_ROWS as u32 + 9).into()
    );
}

fn entries_sharing_one_expiry_are_swept_completely_in_bounded_batches<S: Inspected>(
    fresh: fn() -> S,
) {
    let mut store = fresh();
    const ENTRIES: u32 = 50_000;
    const BATCH: usize = 1_000;
    let expires_at = NOON.plus(60);
    for n in 0..ENTRIES {
        store
            .insert(&Entry {
                ip: nth(n),
                added_at: NOON,
                expires_at: Some(expires_at),
                comment: None,
            })
            .unwrap();
    }
    store
        .insert(&Entry {
            ip: ip(1),
            added_at: NOON,
            expires_at: None,
            comment: None,
        })
        .unwrap();
    assert_eq!(sweep(&mut store, expires_at.minus(1), BATCH).unwrap(), 0);
    let mut sweeps = Vec::new();
    loop {
        let swept = sweep(&mut store, expires_at, BATCH).unwrap();
        assert!(
            swept <= BATCH,
            "a sweep removes at most one batch: {swept} swept"
        );
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
        store.all_entries().iter().map(|e| e.ip).collect::<Vec<_>>(),
        [ip(1)],
        "only the permanent entry is left"
    );
    let history = store.all_history();
    assert!(history
        .iter()
        .all(|e| e.change == HistoryKind::Expired && e.at == expires_at));
    assert_eq!(history.len(), ENTRIES as usize);
}

fn a_sweep_takes_the_earliest_expiries_first<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    for (n, seconds) in [(1, 300), (2, 100), (3, 200), (4, 50_000)] {
        store
            .insert(&Entry {
                ip: ip(n),
                added_at: NOON,
                expires_at: Some(NOON.plus(seconds)),
                comment: None,
            })
            .unwrap();
    }
    assert_eq!(sweep(&mut store, NOON.plus(1_000), 2).unwrap(), 2);
    assert_eq!(
        store.all_entries().iter().map(|e| e.ip).collect::<Vec<_>>(),
        [ip(1), ip(4)]
    );
    assert_eq!(
        store
            .all_history()
            .iter()
            .map(|e| (e.ip, e.at))
            .collect::<Vec<_>>(),
        [
            (ip(2).into(), NOON.plus(100)),
            (ip(3).into(), NOON.plus(200))
        ]
    );
}

/// IPv6 entries live beside IPv4 ones under the same rules: one add counts one,
/// an expiry ends one at its second, the history names it, the limits hold.
fn ipv6_entries_follow_the_same_rules_as_ipv4_ones<S: Inspected>(fresh: fn() -> S) {
    let mut store = fresh();
    let v6 = |text: &str, operation| ListCall {
        operation,
        ip: text.parse().unwrap(),
        prefix: Ipv6Prefix::Whole,
        details: EntryDetails {
            expiry: Some(Expiry::At(NOON.plus(60))),
            comment: Some("scanner".into()),
        },
        client: None,
        global_challenge: false,
    };
    let a = "2a00:1450:4001:80b::200e";
    assert_eq!(run_call(&mut store, &v6(a, Add), NOON).outcome, P::Added);
    assert_eq!(run(&mut store, Add, 1, NOON), P::Added);
    assert_eq!(
        run_call(&mut store, &v6(a, Add), NOON).outcome,
        P::AlreadyListed
    );
    assert_eq!(run_call(&mut store, &v6(a, Check), NOON).outcome, P::Listed);
    assert_eq!(
        run_call(&mut store, &v6("2a00:1450:4001:80b::200f", Check), NOON).outcome,
        P::Unlisted,
        "one address is one entry"
    );
    assert_eq!(
        run_call(&mut store, &v6("2606:4700::1111", Add), NOON).outcome,
        P::Added
    );
    assert_eq!(
        run_call(&mut store, &v6("2606:4700::1001", Add), NOON).outcome,
        P::LimitReached,
        "the fourth add of the day, whatever the family"
    );
    assert_eq!(usage(&store).added, 3);
    let entries = store.all_entries();
    assert_eq!(
        entries.iter().map(|e| e.ip.to_string()).collect::<Vec<_>>(),
        ["8.8.8.1", "2606:4700::1111", "2a00:1450:4001:80b::200e"],
        "in the order of their sixteen bytes"
    );
    assert_eq!(entries[2].comment.as_deref(), Some("scanner"));
    assert_eq!(
        run_call(&mut store, &v6(a, Check), NOON.plus(60)).outcome,
        P::Unlisted,
        "gone at its second"
    );
    assert!(store
        .all_history()
        .iter()
        .any(|e| e.change == HistoryKind::Expired && e.ip.to_string() == a));
}

/// One operation on `text` under `prefix`, within no limits.
fn under(store: &mut impl Inspected, prefix: Ipv6Prefix, text: &str, operation: Operation) -> P {
    let call = ListCall {
        operation,
        ip: text.parse().unwrap(),
        prefix,
        details: EntryDetails::default(),
        client: None,
        global_challenge: false,
    };
    perform(store, &call, NOON, NO_LIMITS).unwrap().outcome
}

/// Runs each step in turn, expecting its outcome.
fn steps(store: &mut impl Inspected, what: &str, steps: &[(Ipv6Prefix, &str, Operation, P)]) {
    for &(prefix, text, operation, expected) in steps {
        let outcome = under(store, prefix, text, operation);
        assert_eq!(outcome, expected, "{what}: {prefix:?} {operation:?} {text}");
    }
}

fn listed(store: &impl Inspected) -> Vec<String> {
    store
        .all_entries()
        .iter()
        .map(|e| e.ip.to_string())
        .collect()
}

/// A /64 entry (`IPV6_PREFIX=64`) is one entry: an add of any address in it
/// lists it, a check or remove of any other address in it finds it.
fn a_64_is_one_entry_whatever_address_in_it_was_given<S: Inspected>(fresh: fn() -> S) {
    use Ipv6Prefix::{Net64, Whole};
    let mut store = fresh();
    steps(
        &mut store,
        "with a /64 prefix, an add lists the /64 that any address in it finds",
        &[
            (Net64, "2a00:1450:4001:80b::200e", Add, P::Added),
            (Net64, "2a00:1450:4001:80b::1", Add, P::AlreadyListed),
            (Net64, "2a00:1450:4001:80b:ffff::", Check, P::Listed),
            (Net64, "2a00:1450:4001:80c::1", Check, P::Unlisted),
        ],
    );
    assert_eq!(
        listed(&store),
        ["2a00:1450:4001:80b::/64"],
        "with a /64 prefix, an add lists the /64 that any address in it finds"
    );
    assert_eq!(usage(&store).added, 1);
    steps(
        &mut store,
        "a remove of any address in a listed /64 takes the /64",
        &[(Net64, "2a00:1450:4001:80b::9", Remove, P::Removed)],
    );
    assert!(
        listed(&store).is_empty(),
        "a remove of any address in a listed /64 takes the /64"
    );
    let history: Vec<String> = store
        .all_history()
        .iter()
        .map(|e| e.ip.to_string())
        .collect();
    assert_eq!(
        history,
        ["2a00:1450:4001:80b::/64", "2a00:1450:4001:80b::/64"]
    );
    // A change of the setting hides nothing: what either listed, the other finds.
    steps(
        &mut store,
        "a change of the prefix setting hides nothing",
        &[
            (Net64, "2a00:1450:4001:80b::1", Add, P::Added),
            (Whole, "2a00:1450:4001:80b::2", Check, P::Listed),
            (Whole, "2a00:1450:4001:80b::2", Add, P::AlreadyListed),
            (Whole, "2a00:1450:4001:80b::2", Remove, P::Removed),
            (Whole, "2a00:1450:4001:80d::5", Add, P::Added),
            (Net64, "2a00:1450:4001:80d::5", Check, P::Listed),
            (Net64, "2a00:1450:4001:80d::6", Check, P::Unlisted),
            (Net64, "2a00:1450:4001:80d::5", Remove, P::Removed),
        ],
    );
    assert!(
        listed(&store).is_empty(),
        "a change of the prefix setting hides nothing"
    );
    // Both an address and its /64 listed: both are found, and one remove takes both.
    steps(
        &mut store,
        "an address and its /64 are listed apart",
        &[
            (Whole, "2a00:1450:4001:80e::5", Add, P::Added),
            (Net64, "2a00:1450:4001:80e::6", Add, P::Added),
        ],
    );
    assert_eq!(listed(&store).len(), 2);
    let removed_before = usage(&store).removed;
    steps(
        &mut store,
        "one remove takes an address and its /64 both",
        &[(Net64, "2a00:1450:4001:80e::5", Remove, P::Removed)],
    );
    assert!(
        listed(&store).is_empty(),
        "one remove takes an address and its /64 both"
    );
    assert_eq!(usage(&store).removed, removed_before + 1, "one remove");
    let last_two: Vec<String> = store
        .all_history()
        .iter()
        .rev()
        .take(2)
        .map(|e| format!("{} {}", e.change.code(), e.ip))
        .collect();
    assert_eq!(
        last_two,
        [
            "removed 2a00:1450:4001:80e::5",
            "removed 2a00:1450:4001:80e::/64"
        ]
    );
}

/// A CrowdSec engine's alert for a listed address (`extend`) moves the entry's
/// expiry later by a minute or more, never earlier, and counts as one of the
/// day's additions, not made past them; a permanent entry stays permanent, and
/// an expired one is not brought back.
fn an_extension_moves_an_expiry_later_by_a_minute_or_more_never_earlier<S: Inspected>(
    fresh: fn() -> S,
) {
    let mut store = fresh();
    let mut add = call(Add, 1);
    add.details.expiry = Some(Expiry::After(600));
    run_call(&mut store, &add, NOON);
    let client = Some("192.0.2.7");
    let extend_to = |store: &mut S, n, until, at| {
        extend(
            store,
            address(n),
            Ipv6Prefix::Whole,
            until,
            (client, LIMITS),
            at,
        )
        .unwrap()
    };
    let expiry = |store: &S, n| store.entry(ip(n)).unwrap().unwrap().expires_at;
    assert!(
        !extend_to(&mut store, 1, NOON.plus(659), NOON),
        "under a minute later"
    );
    assert!(!extend_to(&mut store, 1, NOON.plus(300), NOON), "earlier");
    assert_eq!(expiry(&store, 1), Some(NOON.plus(600)));
    assert!(extend_to(&mut store, 1, NOON.plus(660), NOON.plus(10)));
    assert_eq!(expiry(&store, 1), Some(NOON.plus(660)));
    let last = store.all_history().pop().unwrap();
    assert_eq!(
        (last.change, last.at, last.client.as_deref()),
        (HistoryKind::Extended, NOON.plus(10), Some("192.0.2.7"))
    );
    assert_eq!(
        usage(&store).added,
        2,
        "an extension is one of the day's additions"
    );
    // Past the day's additions, no extension.
    let mut full = usage(&store);
    full.added = LIMITS.additions;
    store.save_usage(full).unwrap();
    assert!(!extend_to(&mut store, 1, NOON.plus(2000), NOON.plus(20)));
    assert_eq!(expiry(&store, 1), Some(NOON.plus(660)));
    full.added = 2;
    store.save_usage(full).unwrap();
    let expired = extend_to(&mut store, 1, NOON.plus(5000), NOON.plus(660));
    assert!(!expired, "an expired entry is not brought back");
    run(&mut store, Add, 2, NOON);
    assert!(!extend_to(&mut store, 2, NOON.plus(5000), NOON));
    assert_eq!(expiry(&store, 2), None, "a permanent entry stays permanent");
}

macro_rules! for_both_stores {
    ($($test:ident),* $(,)?) => {
        mod memory_store {
            $(#[test] fn $test() { super::$test(super::MemoryStore::default) })*
        }
        mod sql_store {
            $(#[test] fn $test() { super::$test(super::sql_store) })*
        }
    };
}

for_both_stores!(
    state_table_rows,
    only_actual_changes_count,
    addition_limit_allows_exactly_the_limit_and_refuses_without_change,
    removal_limit_allows_exactly_the_limit_and_refuses_without_change,
    counters_reset_at_midnight_utc_and_not_before,
    a_zero_limit_refuses_every_change,
    the_list_holds_at_most_its_bound_expired_entries_counted_until_swept,
    the_answer_carries_the_days_usage_after_the_operation,
    details_are_stored_with_the_entry,
    an_expired_entry_is_gone_for_every_operation_at_its_second,
    re_adding_a_listed_address_leaves_its_entry_as_it_was,
    history_records_changes_and_refusals_with_the_client,
    refusals_are_counted_but_only_the_days_first_is_recorded,
    the_history_keeps_only_the_newest_rows,
    entries_sharing_one_expiry_are_swept_completely_in_bounded_batches,
    a_sweep_takes_the_earliest_expiries_first,
    ipv6_entries_follow_the_same_rules_as_ipv4_ones,
    a_64_is_one_entry_whatever_address_in_it_was_given,
    an_extension_moves_an_expiry_later_by_a_minute_or_more_never_earlier,
);
