//! The personal part of a feed, read from the holder's database a page at a time:
//! whatever the list's size, a page is all that is held. The whole list goes in
//! address order (so the Worker merges it with the global list as both stream);
//! the changes after a cursor go as every address a firewall should drop, then
//! every entry it should hold, each address once in each: the list's own
//! changes in the order of their last change, and the entries a change of the
//! allow list moved, in address order. An entry in both is one the firewall held
//! whose expiry changed.

use crate::domain::code::Coded;
use crate::domain::feed::cap::CursorCut;
use crate::domain::feed::decision::{Position, Pull, PullPlan};
use crate::domain::feed::item::{FeedHead, FeedRecord};
use crate::domain::holder::entry::{Entry, HistoryKind};
use crate::domain::net::address::{Key, Listed, PublicIp};
use crate::domain::net::intervals::overlapping;
use crate::domain::operator_lists::delta::AllowMoves;
use crate::store::holder::list::{entries, HolderTables, ENTRY_COLUMNS};
use crate::store::holder::rows::{address_value, ip_of, live};
use crate::store::sql::{Row, Sql, SqlError, Value};

use crate::domain::time::UnixTime;

/// The history rows a feed's changes are made of: what changes the list, or
/// an entry's expiry (a bouncer takes the entry again with its new duration).
fn listing_changes() -> String {
    [
        HistoryKind::Added,
        HistoryKind::Extended,
        HistoryKind::Removed,
        HistoryKind::Expired,
    ]
    .map(|c| format!("'{}'", c.code()))
    .join(", ")
}

/// Where a feed's reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Live entries after this address, as the rows keep it.
    Whole {
        after: Option<Key>,
    },
    /// Addresses whose last change in the window, after this history number, unlisted them.
    Gone {
        after: u64,
    },
    /// Live entries in the allow list's `range`th new interval, after this address:
    /// the firewall may hold any of them, and should hold none now.
    Hidden {
        range: usize,
        after: Option<Key>,
    },
    /// Addresses whose last change in the window, after this history number, left them listed.
    Listed {
        after: u64,
    },
    /// Live entries in the `range`th interval the allow list let go, after this
    /// address, unchanged in the window (a changed one came as `Listed`).
    Shown {
        range: usize,
        after: Option<Key>,
    },
    Done,
}

/// A feed's personal part, read on demand.
pub struct FeedPages<S: Sql> {
    store: HolderTables<S>,
    now: UnixTime,
    page: usize,
    /// The changes read are those after the cursor up to the newest when the feed began,
    /// so that a feed is the list as of one moment, and what came later is the next delta's.
    window: (u64, u64),
    /// Where a change of the allow list since the cursor moved the holder's entries.
    moves: AllowMoves,
    /// A renewal: after the addresses to drop, every live entry.
    renewal: bool,
    step: Step,
}

/// Reads how a feed begins: unchanged when the caller's `known` number is current,
/// the changes after `since` while the history still holds every one of them
/// (with the entries `moves` names), the whole list otherwise.
pub fn open<S: Sql>(
    store: HolderTables<S>,
    (since, moves): (Option<u64>, AllowMoves),
    known: Option<u64>,
    now: UnixTime,
    page: usize,
) -> Result<(FeedHead, FeedPages<S>), SqlError> {
    let (oldest, changes) = store.changes()?;
    let plan = match since {
        _ if known == Some(changes) => PullPlan::Unchanged,
        Some(since) if remembered((oldest, changes), since) => PullPlan::Delta { since },
        since => PullPlan::Whole {
            reset: since.is_some(),
        },
    };
    Ok(begin(store, (plan, changes), moves, now, page))
}

/// Reads how a feed token's pull begins, from where its previous pull left it
/// (`stored`): the plan, so that the caller moves the position once the answer
/// is read, and the personal part.
pub fn open_pull<S: Sql>(
    store: HolderTables<S>,
    (pull, moves, cut): (Pull, AllowMoves, CursorCut),
    stored: Option<Position>,
    now: UnixTime,
    page: usize,
) -> Result<(PullPlan, FeedHead, FeedPages<S>), SqlError> {
    let (oldest, changes) = store.changes()?;
    let plan = PullPlan::of(
        &pull,
        stored,
        changes,
        |since| remembered((oldest, changes), since),
        (now, cut),
    );
    let (head, pages) = begin(store, (plan, changes), moves, now, page);
    Ok((plan, head, pages))
}

/// Whether the history, from `oldest` to `newest`, still holds every change after `since`.
fn remembered((oldest, newest): (u64, u64), since: u64) -> bool {
    since <= newest && since + 1 >= oldest
}

/// The head of a feed that answers as `plan` says, and its pages.
fn begin<S: Sql>(
    store: HolderTables<S>,
    (plan, changes): (PullPlan, u64),
    moves: AllowMoves,
    now: UnixTime,
    page: usize,
) -> (FeedHead, FeedPages<S>) {
    let (head, step, window) = match plan {
        PullPlan::Unchanged => (FeedHead::Unchanged { changes }, Step::Done, (0, 0)),
        PullPlan::Recount => (FeedHead::Recount { changes }, Step::Done, (0, 0)),
        PullPlan::Moved(position) => (FeedHead::Moved { changes, position }, Step::Done, (0, 0)),
        PullPlan::Whole { reset } => (
            FeedHead::Whole { changes, reset },
            Step::Whole { after: None },
            (0, changes),
        ),
        PullPlan::Delta { since } => (
            FeedHead::Delta { changes },
            Step::Gone { after: since },
            (since, changes),
        ),
        PullPlan::Renewal { since } => (
            FeedHead::Renewal { changes },
            Step::Gone { after: since },
            (since, changes),
        ),
    };
    let pages = FeedPages {
        store,
        now,
        page: page.max(1),
        window,
        moves,
        renewal: matches!(plan, PullPlan::Renewal { .. }),
        step,
    };
    (head, pages)
}

/// Addresses probed at most in one feed: the single-address blocks a change of the
/// global list adds or drops. A larger change is answered with the whole feed.
pub const MAX_PROBED: usize = 10_000;
/// Intervals of a change of the allow list a feed's delta looks in at most (one
/// statement each at least). A larger change is answered with the whole feed.
pub const MAX_MOVED_RANGES: usize = 1_000;
/// Addresses looked up in one statement.
const PROBE_BATCH: usize = 100;

/// Which of `entries` the list holds live at `now`: a delta of the global list
/// leaves those alone, since the firewall holds them as the holder's own entries.
pub fn listed<S: Sql>(
    store: &HolderTables<S>,
    entries: &[Listed],
    now: UnixTime,
) -> Result<Vec<Listed>, SqlError> {
    let mut found = Vec::new();
    for batch in entries.chunks(PROBE_BATCH) {
        let marks = (0..batch.len())
            .map(|i| format!("?{}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let args: Vec<Value> = std::iter::once(Value::int(now.0))
            .chain(
                batch
                    .iter()
                    .map(|listed| Value::Blob(listed.key().as_bytes().to_vec())),
            )
            .collect();
        for row in store.sql().query(
            &format!(
                "SELECT ip FROM entries WHERE ip IN ({marks}) AND {}",
                live("expires_at")
            ),
            &args,
        )? {
            found.extend(ip_of(row.blob(0)?));
        }
    }
    found.sort_unstable_by_key(|listed| listed.key());
    Ok(found)
}

/// The address of a page's last row, where the next page reads on from.
fn last_address(rows: &[Row]) -> Result<Option<Key>, SqlError> {
    rows.last()
        .map(|row| {
            Key::from_bytes(row.blob(0)?)
                .ok_or_else(|| SqlError("a key of another size".to_owned()))
        })
        .transpose()
}

impl<S: Sql> FeedPages<S> {
    /// The store the pages read, to record where the pull left its token once read.
    pub fn store(&self) -> &HolderTables<S> {
        &self.store
    }

    /// The history numbers a delta or renewal reads the changes of, after the
    /// cursor up to the newest when it began; `None` for a whole feed.
    pub fn window(&self) -> Option<(u64, u64)> {
        matches!(self.step, Step::Gone { .. }).then_some(self.window)
    }

    /// Moves of another allow list beside those the pages were opened with: the
    /// holder's own, which only this object knows.
    pub fn also_moved(&mut self, moves: &AllowMoves) {
        self.moves = self.moves.and(moves);
    }

    /// The next page of records, or `None` after the last.
    pub fn next_page(&mut self) -> Result<Option<Vec<FeedRecord>>, SqlError> {
        loop {
            let (records, next) = match self.step {
                Step::Done => return Ok(None),
                Step::Whole { after } => self.whole(after)?,
                Step::Gone { after } => self.changed(after, false)?,
                Step::Listed { after } => self.changed(after, true)?,
                Step::Hidden { range, after } => self.moved(range, after, false)?,
                Step::Shown { range, after } => self.moved(range, after, true)?,
            };
            self.step = next;
            if !records.is_empty() {
                return Ok(Some(records));
            }
        }
    }

    fn whole(&self, after: Option<Key>) -> Result<(Vec<FeedRecord>, Step), SqlError> {
        let rows = self.store.sql().query(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries WHERE {} AND ip > ?2 ORDER BY ip LIMIT ?3",
                live("expires_at")
            ),
            &[
                Value::int(self.now.0),
                // The empty blob sorts before every address.
                Value::Blob(after.map_or_else(Vec::new, |key| key.as_bytes().to_vec())),
                Value::int(self.page as u64),
            ],
        )?;
        let full = rows.len() == self.page;
        let last = last_address(&rows)?;
        let listed: Vec<FeedRecord> = entries(rows)?.into_iter().map(FeedRecord::Listed).collect();
        let next = match last {
            Some(last) if full => Step::Whole { after: Some(last) },
            _ => Step::Done,
        };
        Ok((listed, next))
    }

    /// A page of the window's last changes after history number `after`: those that
    /// left the address listed (`listed`), or those a firewall should drop first.
    /// These are the addresses the changes unlisted, and those listed since before
    /// the window whose expiry changed in it (moved later, or removed and added
    /// again): a firewall that skips an address its set holds, as
    /// crowdsec-firewall-bouncer's nftables mode does, takes the new expiry only
    /// once it has dropped the address (a bouncer reads `deleted` first). One the
    /// allow list now holds comes once, as the allow list's (`Step::Hidden`).
    fn changed(&self, after: u64, listed: bool) -> Result<(Vec<FeedRecord>, Step), SqlError> {
        let codes = listing_changes();
        let which = if listed {
            "e.ip IS NOT NULL".to_owned()
        } else {
            // Listed at the window's start unless its first change in the window added it.
            format!(
                "(e.ip IS NULL OR (SELECT first.change FROM history first WHERE first.ip = h.ip
                     AND first.id > ?5 AND first.id <= ?3 AND first.change IN ({codes})
                     ORDER BY first.id LIMIT 1) <> '{added}')",
                added = HistoryKind::Added.code()
            )
        };
        let mut args = vec![
            Value::int(self.now.0),
            Value::int(after),
            Value::int(self.window.1),
            Value::int(self.page as u64),
        ];
        if !listed {
            args.push(Value::int(self.window.0));
        }
        let rows = self.store.sql().query(
            &format!(
                "SELECT h.id, h.ip, e.ip IS NOT NULL, e.added_at, e.expires_at, e.comment
                 FROM history h LEFT JOIN entries e ON e.ip = h.ip AND {live}
                 WHERE h.id > ?2 AND h.id <= ?3 AND h.change IN ({codes}) AND {which}
                   AND NOT EXISTS (SELECT 1 FROM history later WHERE later.ip = h.ip
                       AND later.id > h.id AND later.id <= ?3 AND later.change IN ({codes}))
                 ORDER BY h.id LIMIT ?4",
                live = live("e.expires_at"),
            ),
            &args,
        )?;
        let full = rows.len() == self.page;
        let mut records = Vec::with_capacity(rows.len());
        let mut last = after;
        for row in &rows {
            last = row.int(0)?;
            // An address that is no longer public is left out.
            let Some(ip) = ip_of(row.blob(1)?) else {
                continue;
            };
            if !listed && row.int(2)? == 1 && hidden(&self.moves, ip) {
                continue;
            }
            records.push(if listed {
                FeedRecord::Listed(Entry {
                    ip,
                    added_at: UnixTime(row.opt_int(3)?.unwrap_or(0)),
                    expires_at: row.opt_int(4)?.map(UnixTime),
                    comment: row.opt_text(5)?,
                })
            } else {
                FeedRecord::Gone(ip)
            });
        }
        let next = match (full, listed) {
            (true, false) => Step::Gone { after: last },
            (true, true) => Step::Listed { after: last },
            (false, false) => Step::Hidden {
                range: 0,
                after: None,
            },
            (false, true) => Step::Shown {
                range: 0,
                after: None,
            },
        };
        Ok((records, next))
    }

    /// A page of the entries in the `range`th interval the allow list now holds
    /// (`shown` false), or let go (`shown` true), after the address `after`.
    fn moved(
        &self,
        range: usize,
        after: Option<Key>,
        shown: bool,
    ) -> Result<(Vec<FeedRecord>, Step), SqlError> {
        let Some(moved) = Moved::of(&self.moves, shown, range) else {
            let next = match (shown, self.renewal) {
                (true, _) => Step::Done,
                (false, true) => Step::Whole { after: None },
                (false, false) => Step::Listed {
                    after: self.window.0,
                },
            };
            return Ok((Vec::new(), next));
        };
        let unchanged = if shown {
            format!(
                "AND NOT EXISTS (SELECT 1 FROM history h WHERE h.ip = entries.ip
                     AND h.id > ?6 AND h.id <= ?7 AND h.change IN ({}))",
                listing_changes()
            )
        } else {
            String::new()
        };
        let mut args = vec![
            Value::int(self.now.0),
            Value::Blob(after.map_or_else(Vec::new, |key| key.as_bytes().to_vec())),
            moved.low(),
            moved.high(),
            Value::int(self.page as u64),
        ];
        if shown {
            args.extend([Value::int(self.window.0), Value::int(self.window.1)]);
        }
        let rows = self.store.sql().query(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries
                 WHERE {} AND ip > ?2 AND ip >= ?3 AND ip <= ?4 {unchanged}
                 ORDER BY ip LIMIT ?5",
                live("expires_at")
            ),
            &args,
        )?;
        let full = rows.len() == self.page;
        let last_read = last_address(&rows)?;
        let records = entries(rows)?
            .into_iter()
            .filter(|entry| moved.touches(entry.ip))
            .map(|entry| {
                if shown {
                    FeedRecord::Listed(entry)
                } else {
                    FeedRecord::Gone(entry.ip)
                }
            })
            .collect();
        let (range, after) = match last_read {
            Some(last_read) if full => (range, Some(last_read)),
            _ => (range + 1, None),
        };
        let next = if shown {
            Step::Shown { range, after }
        } else {
            Step::Hidden { range, after }
        };
        Ok((records, next))
    }
}

/// Whether a change of the allow list since the cursor holds `listed` now (for
/// a /64, any address of it): its `Step::Hidden` drops it.
fn hidden(moves: &AllowMoves, listed: Listed) -> bool {
    match listed {
        Listed::Ip(PublicIp::V4(ip)) => {
            let at = u32::from(ip.addr());
            !overlapping(&moves.hidden, (at, at)).is_empty()
        }
        Listed::Ip(PublicIp::V6(ip)) => {
            let at = u128::from(ip.addr());
            !overlapping(&moves.hidden6, (at, at)).is_empty()
        }
        Listed::Net64(net) => {
            let at = u128::from(net.addr());
            !overlapping(&moves.hidden6, (at, at | REST_OF_64)).is_empty()
        }
    }
}

/// An interval the allow list moved, as a read of the entries it touches: by
/// their keys between `low` and `high`, then by `touches`.
#[derive(Clone, Copy)]
enum Moved {
    V4(u32, u32),
    /// An IPv6 interval, and the one before it, if any: a /64 that touches both
    /// was read with that one, and comes once.
    V6(u128, u128, Option<(u128, u128)>),
}

/// The addresses of a /64 after its first.
const REST_OF_64: u128 = u64::MAX as u128;

impl Moved {
    /// The `range`th interval the allow list now holds (`shown` false) or let go,
    /// the IPv4 ones first.
    fn of(moves: &AllowMoves, shown: bool, range: usize) -> Option<Self> {
        let (v4, v6) = match shown {
            true => (&moves.shown, &moves.shown6),
            false => (&moves.hidden, &moves.hidden6),
        };
        match v4.get(range) {
            Some(&(first, last)) => Some(Self::V4(first, last)),
            None => {
                let index = range - v4.len();
                let before = index.checked_sub(1).and_then(|i| v6.get(i)).copied();
                v6.get(index)
                    .map(|&(first, last)| Self::V6(first, last, before))
            }
        }
    }

    /// From the first key, and for IPv6 the /64 that holds it.
    fn low(&self) -> Value {
        match *self {
            Self::V4(first, _) => address_value(first),
            Self::V6(first, ..) => Value::Blob((first & !REST_OF_64).to_be_bytes().to_vec()),
        }
    }

    /// To the last key, and for IPv6 the /64 that begins there (a 17th byte).
    fn high(&self) -> Value {
        match *self {
            Self::V4(_, last) => address_value(last),
            Self::V6(_, last, _) => {
                let mut bytes = last.to_be_bytes().to_vec();
                bytes.push(u8::MAX);
                Value::Blob(bytes)
            }
        }
    }

    /// Whether the interval holds the entry's address, or any address of its
    /// /64 that the interval before did not.
    fn touches(&self, listed: Listed) -> bool {
        let spans =
            |(first, last): (u128, u128), net: u128| net <= last && net | REST_OF_64 >= first;
        match (*self, listed) {
            (Self::V4(..), _) => true,
            (Self::V6(first, last, _), Listed::Ip(PublicIp::V6(ip))) => {
                (first..=last).contains(&u128::from(ip.addr()))
            }
            (Self::V6(first, last, before), Listed::Net64(net)) => {
                let net = u128::from(net.addr());
                spans((first, last), net) && !before.is_some_and(|before| spans(before, net))
            }
            (Self::V6(..), Listed::Ip(PublicIp::V4(_))) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::entry::Expiry;
    use crate::domain::holder::list::{sweep, Operation};
    use crate::domain::net::address::PublicIp;
    use crate::domain::net::ipv4::PublicIpv4;
    use crate::store::holder::rule_tests::{apply, sql_store, NOON};
    use crate::store::sql::native::NativeSql;

    /// Every record of a feed read in pages of `page`, and its head.
    fn read(
        store: &HolderTables<NativeSql>,
        since: Option<u64>,
        at: UnixTime,
        page: usize,
    ) -> (FeedHead, Vec<String>) {
        read_moved(store, (since, AllowMoves::default()), at, page)
    }

    fn read_moved(
        store: &HolderTables<NativeSql>,
        since: (Option<u64>, AllowMoves),
        at: UnixTime,
        page: usize,
    ) -> (FeedHead, Vec<String>) {
        let shared = HolderTables::new(store.sql());
        let (head, mut pages) = open(shared, since, None, at, page).unwrap();
        let mut records = Vec::new();
        while let Some(part) = pages.next_page().unwrap() {
            assert!(part.len() <= page, "a page holds at most its size");
            records.extend(part.into_iter().map(|record| match record {
                FeedRecord::Listed(entry) => format!("+{}", entry.ip),
                FeedRecord::Gone(ip) => format!("-{ip}"),
            }));
        }
        (head, records)
    }

    #[test]
    fn a_change_of_the_allow_list_drops_what_it_now_holds_and_adds_what_it_let_go_each_once() {
        let mut store = sql_store();
        for text in [
            "8.8.8.1", "8.8.8.2", "8.8.8.3", "9.9.9.1", "9.9.9.2", "9.9.9.3",
        ] {
            apply(&mut store, Operation::Add, text, None, NOON);
        }
        // After the cursor (3 of 6 adds): a change inside each moved range, one outside.
        apply(&mut store, Operation::Remove, "8.8.8.3", None, NOON.plus(1));
        apply(&mut store, Operation::Add, "8.8.8.9", None, NOON.plus(2));
        apply(&mut store, Operation::Remove, "9.9.9.3", None, NOON.plus(3));
        apply(&mut store, Operation::Add, "9.9.9.9", None, NOON.plus(4));
        apply(&mut store, Operation::Add, "7.7.7.7", None, NOON.plus(5));
        let range = |first: &str, last: &str| {
            let addr = |text: &str| PublicIpv4::parse(text).unwrap().to_u32();
            (addr(first), addr(last))
        };
        let moves = AllowMoves {
            hidden: vec![range("8.8.8.0", "8.8.8.255")],
            shown: vec![range("9.9.9.0", "9.9.9.1"), range("9.9.9.3", "9.9.9.255")],
            ..AllowMoves::default()
        };
        for page in [1, 2, 10] {
            let (head, records) = read_moved(&store, (Some(6), moves.clone()), NOON.plus(6), page);
            assert_eq!(head, FeedHead::Delta { changes: 11 });
            assert_eq!(
                records,
                [
                    // The list's own changes, then every live entry the allow list now holds.
                    "-8.8.8.3", "-9.9.9.3", "-8.8.8.1", "-8.8.8.2", "-8.8.8.9",
                    // The list's own changes, then the unchanged entries it let go
                    // (9.9.9.2 is between its ranges).
                    "+8.8.8.9", "+9.9.9.9", "+7.7.7.7", "+9.9.9.1",
                ],
                "pages of {page}"
            );
        }
        let (head, _) = read_moved(&store, (None, moves), NOON.plus(6), 10);
        assert!(
            matches!(head, FeedHead::Whole { .. }),
            "a whole feed ignores the moves"
        );
    }

    #[test]
    fn an_ipv6_change_of_the_allow_list_moves_the_addresses_and_the_64s_it_touches() {
        let mut store = sql_store();
        for text in ["2a00:1450::5", "2a00:1450::9", "8.8.8.8"] {
            apply(&mut store, Operation::Add, text, None, NOON);
        }
        let net64 = crate::domain::holder::list::ListCall {
            prefix: crate::domain::net::address::Ipv6Prefix::Net64,
            ip: "2a00:1451::7".parse().unwrap(),
            operation: Operation::Add,
            details: Default::default(),
            client: None,
            global_challenge: false,
        };
        crate::domain::holder::list::perform(
            &mut store,
            &net64,
            NOON,
            crate::store::holder::rule_tests::NO_LIMITS,
        )
        .unwrap();
        let value = |text: &str| u128::from(text.parse::<std::net::Ipv6Addr>().unwrap());
        let moves = AllowMoves {
            // From inside the /64 on, past the address that is not moved.
            hidden6: vec![
                (value("2a00:1450::5"), value("2a00:1450::6")),
                (value("2a00:1451::8"), value("2a00:1451::8")),
                (value("2a00:1451::a"), value("2a00:1451::b")),
            ],
            shown6: vec![(0, u128::MAX)],
            ..AllowMoves::default()
        };
        for page in [1, 2, 10] {
            let (_, records) = read_moved(&store, (Some(4), moves.clone()), NOON.plus(1), page);
            assert_eq!(
                records,
                [
                    "-2a00:1450::5",
                    "-2a00:1451::/64",
                    "+2a00:1450::5",
                    "+2a00:1450::9",
                    "+2a00:1451::/64",
                ],
                "pages of {page}: an address in the interval, a /64 it touches (once), never an IPv4 entry"
            );
        }
        let json = serde_json::to_string(&moves).unwrap();
        assert_eq!(
            serde_json::from_str::<AllowMoves>(&json).unwrap(),
            moves,
            "{json}"
        );
    }

    #[test]
    fn the_whole_list_comes_in_address_order_a_page_at_a_time() {
        let mut store = sql_store();
        for text in ["9.9.9.9", "8.8.8.8", "8.8.4.4", "1.1.1.1"] {
            apply(&mut store, Operation::Add, text, None, NOON);
        }
        apply(
            &mut store,
            Operation::Add,
            "7.7.7.7",
            Some(Expiry::After(60)),
            NOON,
        );
        for page in [1, 2, 3, 10] {
            let (head, records) = read(&store, None, NOON.plus(60), page);
            assert_eq!(
                head,
                FeedHead::Whole {
                    changes: 5,
                    reset: false
                }
            );
            assert_eq!(
                records,
                ["+1.1.1.1", "+8.8.4.4", "+8.8.8.8", "+9.9.9.9"],
                "pages of {page}; the expired entry is not live"
            );
        }
        let (_, records) = read(&store, Some(99), NOON, 2);
        assert_eq!(
            records.len(),
            5,
            "a cursor from the future gets the whole list"
        );
    }

    #[test]
    fn changes_come_as_every_dropped_address_then_every_listed_entry_each_once() {
        let mut store = sql_store();
        apply(&mut store, Operation::Add, "8.8.8.1", None, NOON);
        apply(
            &mut store,
            Operation::Add,
            "8.8.8.2",
            Some(Expiry::After(60)),
            NOON,
        );
        apply(&mut store, Operation::Remove, "8.8.8.1", None, NOON.plus(1));
        apply(&mut store, Operation::Add, "8.8.8.3", None, NOON.plus(2));
        apply(&mut store, Operation::Remove, "8.8.8.3", None, NOON.plus(3));
        apply(&mut store, Operation::Add, "8.8.8.3", None, NOON.plus(4));
        apply(&mut store, Operation::Add, "8.8.8.4", None, NOON.plus(5));
        assert_eq!(sweep(&mut store, NOON.plus(60), 10).unwrap(), 1);
        for page in [1, 2, 10] {
            let (head, records) = read(&store, Some(2), NOON.plus(60), page);
            assert_eq!(head, FeedHead::Delta { changes: 8 });
            assert_eq!(
                records,
                ["-8.8.8.1", "-8.8.8.2", "+8.8.8.3", "+8.8.8.4"],
                "pages of {page}: dropped first, each group in the order of the last change"
            );
        }
    }

    #[test]
    fn an_entry_listed_before_the_window_whose_expiry_changed_is_dropped_then_listed_again() {
        use crate::domain::holder::list::extend;
        use crate::domain::net::address::Ipv6Prefix;
        use crate::store::holder::rule_tests::NO_LIMITS;
        let mut store = sql_store();
        let hour = Some(Expiry::After(3600));
        for text in ["8.8.8.1", "8.8.8.2", "8.8.8.3", "9.9.9.1"] {
            apply(&mut store, Operation::Add, text, hour, NOON);
        }
        // After the cursor (the four adds): 8.8.8.1's expiry moved later, 8.8.8.2
        // removed and added again, 8.8.8.5 added then moved, 9.9.9.1 moved and
        // held by the allow list now.
        let later = |store: &mut HolderTables<NativeSql>, text: &str, at: UnixTime| {
            let ip = text.parse().unwrap();
            let until = NOON.plus(4 * 3600);
            let moved = extend(store, ip, Ipv6Prefix::Whole, until, (None, NO_LIMITS), at);
            assert!(moved.unwrap(), "{text}");
        };
        later(&mut store, "8.8.8.1", NOON.plus(1));
        apply(&mut store, Operation::Remove, "8.8.8.2", None, NOON.plus(2));
        apply(&mut store, Operation::Add, "8.8.8.2", None, NOON.plus(3));
        apply(&mut store, Operation::Add, "8.8.8.5", hour, NOON.plus(4));
        later(&mut store, "8.8.8.5", NOON.plus(5));
        later(&mut store, "9.9.9.1", NOON.plus(6));
        let one = PublicIpv4::parse("9.9.9.1").unwrap().to_u32();
        let moves = AllowMoves {
            hidden: vec![(one, one)],
            ..AllowMoves::default()
        };
        for page in [1, 2, 10] {
            let (_, records) = read_moved(&store, (Some(4), moves.clone()), NOON.plus(7), page);
            assert_eq!(
                records,
                [
                    // A firewall that holds them drops them, then takes their new
                    // expiry; 8.8.8.5 it never held; 9.9.9.1 is dropped once, as the
                    // allow list's (the feed's body leaves out its listing).
                    "-8.8.8.1", "-8.8.8.2", "-9.9.9.1", "+8.8.8.1", "+8.8.8.2", "+8.8.8.5",
                    "+9.9.9.1",
                ],
                "pages of {page}: a moved expiry goes in deleted and new, the allowed once"
            );
        }
    }

    #[test]
    fn a_feed_reads_the_changes_up_to_its_start_only() {
        let sql = NativeSql::new();
        crate::store::holder::schema::migrate(&sql).unwrap();
        let mut store = HolderTables::new(&sql);
        apply(&mut store, Operation::Add, "8.8.8.1", None, NOON);
        apply(&mut store, Operation::Add, "8.8.8.2", None, NOON);
        let (head, mut pages) = open(
            HolderTables::new(&sql),
            (Some(0), AllowMoves::default()),
            None,
            NOON,
            1,
        )
        .unwrap();
        assert_eq!(head, FeedHead::Delta { changes: 2 });
        let first = pages.next_page().unwrap().unwrap();
        // A change while the feed streams is the next delta's, not this one's.
        apply(&mut store, Operation::Add, "8.8.8.3", None, NOON);
        let second = pages.next_page().unwrap().unwrap();
        assert_eq!(pages.next_page().unwrap(), None);
        assert_eq!(
            [first, second].concat(),
            ["8.8.8.1", "8.8.8.2"].map(|ip| FeedRecord::Listed(Entry {
                ip: ip.parse::<Listed>().unwrap(),
                added_at: NOON,
                expires_at: None,
                comment: None
            }))
        );
    }

    #[test]
    fn a_current_number_is_unchanged_and_an_old_one_past_the_history_is_a_reset() {
        let mut store = sql_store();
        for n in 0..5 {
            apply(
                &mut store,
                Operation::Add,
                &format!("8.8.8.{n}"),
                None,
                NOON,
            );
        }
        let shared = || HolderTables::new(store.sql());
        let (head, mut pages) =
            open(shared(), (None, AllowMoves::default()), Some(5), NOON, 10).unwrap();
        assert_eq!(head, FeedHead::Unchanged { changes: 5 });
        assert_eq!(pages.next_page().unwrap(), None);
        store
            .sql()
            .execute("DELETE FROM history WHERE id <= 3", &[])
            .unwrap();
        assert!(matches!(
            open(shared(), (Some(3), AllowMoves::default()), None, NOON, 10)
                .unwrap()
                .0,
            FeedHead::Delta { .. }
        ));
        assert_eq!(
            open(shared(), (Some(2), AllowMoves::default()), None, NOON, 10)
                .unwrap()
                .0,
            FeedHead::Whole {
                changes: 5,
                reset: true
            },
            "row 3 is gone"
        );
        store.sql().execute("DELETE FROM history", &[]).unwrap();
        assert!(
            matches!(
                open(shared(), (Some(5), AllowMoves::default()), None, NOON, 10)
                    .unwrap()
                    .0,
                FeedHead::Delta { .. }
            ),
            "numbers are never handed out twice, so the newest cursor stays valid"
        );
    }

    #[test]
    fn a_probe_finds_the_live_entries_among_the_addresses_asked() {
        let mut store = sql_store();
        apply(&mut store, Operation::Add, "8.8.8.8", None, NOON);
        apply(
            &mut store,
            Operation::Add,
            "9.9.9.9",
            Some(Expiry::After(60)),
            NOON,
        );
        apply(
            &mut store,
            Operation::Add,
            "2a00:1450:4001:80b::200e",
            None,
            NOON,
        );
        let entry = |text: &str| text.parse::<Listed>().unwrap();
        let asked: Vec<Listed> = (0..250u32)
            .map(|n| {
                Listed::Ip(PublicIp::V4(
                    PublicIpv4::from_addr((0x0101_0000 + n).into()).unwrap(),
                ))
            })
            .chain(
                [
                    "9.9.9.9",
                    "8.8.8.8",
                    "2a00:1450:4001:80b::/64",
                    "2a00:1450:4001:80b::200e",
                ]
                .map(entry),
            )
            .collect();
        assert_eq!(
            listed(&store, &asked, NOON).unwrap(),
            ["8.8.8.8", "9.9.9.9", "2a00:1450:4001:80b::200e"].map(entry),
            "in key order; the /64 is not listed, its address is"
        );
        assert_eq!(
            listed(&store, &asked, NOON.plus(60)).unwrap(),
            ["8.8.8.8", "2a00:1450:4001:80b::200e"].map(entry),
            "an expired entry is not held"
        );
    }
}
