//! One holder's personal list in its Durable Object's SQLite database: its
//! entries, their history and the day's counters, as `HolderTables` keeps them
//! for the rules (`ListStore`). How a row keeps an address is `rows`; the schema
//! is `schema`.

use crate::domain::code::Coded;
use crate::domain::holder::activity::{ActivityDay, ACTIVITY_DAYS};
use crate::domain::holder::entry::{Entry, HistoryEvent, HistoryKind};
use crate::domain::holder::list::{DailyUsage, ListStore, MAX_HISTORY_ROWS};
use crate::domain::net::address::Listed;
use crate::domain::page::{prefix_ranges, EntryCursor, HistoryCursor, Page, PageQuery};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::store::holder::rows::{address_value, ip_of, ip_value, live, subject_of, subject_value};
use crate::store::sql::{Row, Sql, SqlError, Value};

/// History older than this is dropped by the daily sweep.
pub const HISTORY_DAYS: u64 = 90;

/// Its negation for rows that have an expiry, written so that the expiry index finds them in order.
const EXPIRED: &str = "expires_at <= ?1";
/// The soonest expiry, read from the expiry index: one row. Without the `WHERE`,
/// which the index's own condition needs to be usable, SQLite reads every entry,
/// and the holder's every alarm did.
const NEXT_EXPIRY: &str = "SELECT min(expires_at) FROM entries WHERE expires_at IS NOT NULL";
/// Sorts after every row: the largest integer that crosses into JavaScript exactly.
const AFTER_ALL: u64 = (1 << 53) - 1;
pub(super) const ENTRY_COLUMNS: &str = "ip, added_at, expires_at, comment";

/// A day's count, as a column holds it.
fn count(row: &Row, column: usize) -> Result<u32, SqlError> {
    row.int(column)
        .and_then(|n| u32::try_from(n).map_err(|_| SqlError(format!("count {n} out of range"))))
}

/// A row of `ENTRY_COLUMNS`.
fn entry_of(row: &Row) -> Result<Option<Entry>, SqlError> {
    let Some(ip) = ip_of(row.blob(0)?) else {
        return Ok(None);
    };
    Ok(Some(Entry {
        ip,
        added_at: UnixTime(row.int(1)?),
        expires_at: row.opt_int(2)?.map(UnixTime),
        comment: row.opt_text(3)?,
    }))
}

pub(super) fn entries(rows: Vec<Row>) -> Result<Vec<Entry>, SqlError> {
    Ok(rows
        .iter()
        .map(entry_of)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// The personal list in the holder's database, behind the same `ListStore` trait
/// the rules are tested with.
pub struct HolderTables<S: Sql> {
    sql: S,
}

impl<S: Sql> HolderTables<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    /// The database itself: for the feed's reader, and for tests that look at rows directly.
    pub(super) fn sql(&self) -> &S {
        &self.sql
    }

    fn count(&self, statement: &str, args: &[Value]) -> Result<u64, SqlError> {
        self.sql
            .query(statement, args)?
            .first()
            .map_or(Ok(0), |row| row.int(0))
    }

    /// Whether the license was revoked, as this object was told.
    pub fn is_revoked(&self) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query("SELECT revoked_at FROM standing WHERE id = 0", &[])?
            .is_empty())
    }

    /// Records that the license is revoked (the first time counts), and drops
    /// what a revoked license keeps for no one: the reports not yet sent, which
    /// would never count, and the Cloudflare connection with its sealed token,
    /// whose sync stops.
    pub fn revoke(&self, now: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO standing (id, revoked_at) VALUES (0, ?1)",
            &[Value::int(now.0)],
        )?;
        self.sql.execute("DELETE FROM reports_out", &[])?;
        self.forget_cloudflare()
    }

    pub fn list(
        &self,
        query: &PageQuery<EntryCursor>,
        now: UnixTime,
    ) -> Result<Page<Entry, EntryCursor>, SqlError> {
        // A prefix is at most three index ranges of addresses: ?2 to ?7.
        let ranges = query.prefix.as_deref().map(prefix_ranges);
        let mut args = vec![Value::int(now.0)];
        let within = match &ranges {
            None => "1".to_owned(),
            Some(ranges) if ranges.is_empty() => "0".to_owned(),
            Some(ranges) => ranges
                .iter()
                .map(|&(first, last)| {
                    args.extend([address_value(first), address_value(last)]);
                    format!("ip BETWEEN ?{} AND ?{}", args.len() - 1, args.len())
                })
                .collect::<Vec<_>>()
                .join(" OR "),
        };
        let filter = format!("{} AND ({within})", live("expires_at"));
        let total = match ranges {
            None => self.live_entries(now)?,
            Some(_) => self.count(
                &format!("SELECT count(*) FROM entries WHERE {filter}"),
                &args,
            )?,
        };
        // Without a cursor, every row is before the time that sorts after all.
        let (after_time, after_ip) = match query.after {
            Some(cursor) => (cursor.added_at, cursor.ip.as_bytes().to_vec()),
            None => (AFTER_ALL, Vec::new()),
        };
        let n = args.len();
        args.extend([
            Value::int(after_time),
            Value::Blob(after_ip),
            Value::int(u64::from(query.limit) + 1),
        ]);
        let rows = self.sql.query(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries
                 WHERE {filter} AND (added_at < ?{a} OR (added_at = ?{a} AND ip < ?{b}))
                 ORDER BY added_at DESC, ip DESC LIMIT ?{c}",
                a = n + 1,
                b = n + 2,
                c = n + 3,
            ),
            &args,
        )?;
        Ok(Page::of(entries(rows)?, query.limit, total, |e| {
            EntryCursor {
                added_at: e.added_at.0,
                ip: e.ip.key(),
            }
        }))
    }

    /// The live entries: the stored count, less what expired and waits for the
    /// sweep, with no scan of the list.
    pub fn live_entries(&self, now: UnixTime) -> Result<u64, SqlError> {
        self.count(
            &format!(
                "SELECT (SELECT entries FROM list_size WHERE id = 0)
                      - (SELECT count(*) FROM entries WHERE {EXPIRED})"
            ),
            &[Value::int(now.0)],
        )
    }

    /// When the list last changed, as far as its history still says.
    pub fn last_change(&self) -> Result<Option<UnixTime>, SqlError> {
        let rows = self
            .sql
            .query("SELECT at FROM history ORDER BY id DESC LIMIT 1", &[])?;
        rows.first().map(|row| row.int(0).map(UnixTime)).transpose()
    }

    pub fn history(
        &self,
        query: &PageQuery<HistoryCursor>,
    ) -> Result<Page<HistoryEvent, HistoryCursor>, SqlError> {
        // Numbers are given one after another and the oldest trimmed first, so the
        // rows kept are every number from the oldest to the newest: two rows read,
        // where a count reads all of them, up to `MAX_HISTORY_ROWS` a page.
        let total = self.count(
            "SELECT coalesce((SELECT max(id) FROM history) - (SELECT min(id) FROM history) + 1, 0)",
            &[],
        )?;
        let before = query.after.map_or(AFTER_ALL, |c| c.id);
        let rows = self.sql.query(
            "SELECT id, at, change, ip, client FROM history WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            &[Value::int(before), Value::int(u64::from(query.limit) + 1)],
        )?;
        let page = Page::of(rows, query.limit, total, |row| HistoryCursor {
            id: row.int(0).unwrap_or_default(),
        });
        let mut events = Vec::with_capacity(page.rows.len());
        for row in &page.rows {
            // A change this code does not know is stored data it never wrote: the read fails.
            let (id, code) = (row.int(0)?, row.text(2)?);
            let change = HistoryKind::from_code(&code)
                .ok_or_else(|| SqlError(format!("history row {id}: unknown change {code:?}")))?;
            // An address that is no longer public is left out.
            if let Some(ip) = subject_of(row.blob(3)?) {
                events.push(HistoryEvent {
                    at: UnixTime(row.int(1)?),
                    change,
                    ip,
                    client: row.opt_text(4)?,
                });
            }
        }
        Ok(Page {
            total: page.total,
            rows: events,
            next: page.next,
        })
    }

    /// The rows of the chart's window up to `today`.
    pub fn activity(&self, today: u64) -> Result<Vec<ActivityDay>, SqlError> {
        let rows = self.sql.query(
            "SELECT day, added, removed, expired, refused FROM activity WHERE day > ?1 ORDER BY day",
            &[Value::int(today.saturating_sub(ACTIVITY_DAYS))],
        )?;
        rows.iter()
            .map(|row| {
                Ok(ActivityDay {
                    day: row.int(0)?,
                    added: count(row, 1)?,
                    removed: count(row, 2)?,
                    expired: count(row, 3)?,
                    refused: count(row, 4)?,
                })
            })
            .collect()
    }

    /// Drops history older than `HISTORY_DAYS`; returns when the next sweep is due, if
    /// anything is left to sweep.
    pub fn tidy(&self, now: UnixTime) -> Result<Option<UnixTime>, SqlError> {
        // The chart's window and the day before it: today's usage is the newest row.
        self.sql.execute(
            "DELETE FROM activity WHERE day < ?1",
            &[Value::int(now.utc_day().saturating_sub(ACTIVITY_DAYS))],
        )?;
        self.tidy_usage(now)?;
        // From the front only: a feed's cursor relies on the history having no gaps.
        self.sql.execute(
            "DELETE FROM history WHERE id < coalesce(
                (SELECT min(id) FROM history WHERE at >= ?1), (SELECT max(id) + 1 FROM history))",
            &[Value::int(now.minus(HISTORY_DAYS * SECONDS_PER_DAY).0)],
        )?;
        let next_expiry = self
            .sql
            .query(NEXT_EXPIRY, &[])?
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten();
        // Every day while there is anything a day's tidying cuts: history, or
        // usage days (a holder whose bouncers only report has nothing else).
        let to_tidy = self.count(
            "SELECT EXISTS (SELECT 1 FROM history) OR EXISTS (SELECT 1 FROM usage_days)",
            &[],
        )? > 0;
        let daily = to_tidy.then(|| now.plus(SECONDS_PER_DAY));
        Ok(match (next_expiry.map(UnixTime), daily) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Keeps only the newest `MAX_HISTORY_ROWS` rows of the history.
    pub(super) fn trim_history(&self) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM history WHERE id <= (SELECT max(id) FROM history) - ?1",
            &[Value::int(MAX_HISTORY_ROWS)],
        )?;
        Ok(())
    }

    /// The oldest history number kept and the newest ever given; with no row kept,
    /// the oldest is the one the next change will get.
    pub(super) fn changes(&self) -> Result<(u64, u64), SqlError> {
        let rows = self.sql.query(
            "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0),
                    coalesce((SELECT min(id) FROM history), 0)",
            &[],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| SqlError("no bounds of the history".to_owned()))?;
        let (newest, oldest) = (row.int(0)?, row.int(1)?);
        Ok(if oldest == 0 {
            (newest + 1, newest)
        } else {
            (oldest, newest)
        })
    }
}

impl<S: Sql> ListStore for HolderTables<S> {
    type Error = SqlError;

    fn entry(&self, ip: Listed) -> Result<Option<Entry>, SqlError> {
        let rows = self.sql.query(
            &format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE ip = ?1"),
            &[ip_value(ip)],
        )?;
        rows.first().map(entry_of).transpose().map(Option::flatten)
    }

    fn insert(&mut self, entry: &Entry) -> Result<(), SqlError> {
        self.sql.execute(
            // An upsert, not `OR REPLACE`: a replacing insert would pass the size's triggers by.
            "INSERT INTO entries (ip, added_at, expires_at, comment) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (ip) DO UPDATE SET added_at = excluded.added_at,
                expires_at = excluded.expires_at, comment = excluded.comment",
            &[
                ip_value(entry.ip),
                Value::int(entry.added_at.0),
                Value::opt_int(entry.expires_at.map(|at| at.0)),
                Value::opt_text(entry.comment.as_deref()),
            ],
        )?;
        Ok(())
    }

    fn delete(&mut self, ip: Listed) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM entries WHERE ip = ?1", &[ip_value(ip)])
            .map(drop)
    }

    fn size(&self) -> Result<u64, SqlError> {
        self.count("SELECT entries FROM list_size WHERE id = 0", &[])
    }

    fn usage(&self) -> Result<DailyUsage, SqlError> {
        let rows = self.sql.query(
            "SELECT day, added, removed, refused, allow_changes, reported FROM activity
             ORDER BY day DESC LIMIT 1",
            &[],
        )?;
        let Some(row) = rows.first() else {
            return Ok(DailyUsage::default());
        };
        Ok(DailyUsage {
            day: row.int(0)?,
            added: count(row, 1)?,
            removed: count(row, 2)?,
            refused: count(row, 3)?,
            allow_changes: count(row, 4)?,
            reported: count(row, 5)?,
        })
    }

    fn save_usage(&mut self, usage: DailyUsage) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO activity (day, added, removed, refused, allow_changes, reported)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (day) DO UPDATE SET added = excluded.added, removed = excluded.removed,
                refused = excluded.refused, allow_changes = excluded.allow_changes,
                reported = excluded.reported",
            &[
                Value::int(usage.day),
                Value::int(usage.added.into()),
                Value::int(usage.removed.into()),
                Value::int(usage.refused.into()),
                Value::int(usage.allow_changes.into()),
                Value::int(usage.reported.into()),
            ],
        )?;
        Ok(())
    }

    fn count_expired(&mut self, day: u64, count: u32) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO activity (day, expired) VALUES (?1, ?2)
             ON CONFLICT (day) DO UPDATE SET expired = expired + excluded.expired",
            &[Value::int(day), Value::int(count.into())],
        )?;
        Ok(())
    }

    fn record(&mut self, event: &HistoryEvent) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO history (at, change, ip, client) VALUES (?1, ?2, ?3, ?4)",
            &[
                Value::int(event.at.0),
                Value::text(event.change.code()),
                subject_value(event.ip),
                Value::opt_text(event.client.as_deref()),
            ],
        )?;
        self.trim_history()
    }

    fn expired(&self, now: UnixTime, limit: usize) -> Result<Vec<Entry>, SqlError> {
        let rows = self.sql.query(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries WHERE {EXPIRED} ORDER BY expires_at LIMIT ?2"
            ),
            &[Value::int(now.0), Value::int(limit as u64)],
        )?;
        entries(rows)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::holder::entry::Expiry;
    use crate::domain::holder::list::{sweep, Operation};
    use crate::store::holder::rule_tests::{apply, listed_ip as ip, sql_store, NOON};
    use crate::store::sql::native::NativeSql;

    fn page_ips(page: &Page<Entry, EntryCursor>) -> Vec<String> {
        page.rows.iter().map(|e| e.ip.to_string()).collect()
    }

    fn query(
        after: Option<EntryCursor>,
        limit: u32,
        prefix: Option<&str>,
    ) -> PageQuery<EntryCursor> {
        PageQuery {
            after,
            limit,
            prefix: prefix.map(str::to_owned),
        }
    }

    #[test]
    fn the_next_expiry_is_one_row_of_the_expiry_index_not_a_scan_of_the_list() {
        let store = sql_store();
        let plan = store.sql.plan(NEXT_EXPIRY, &[]);
        assert!(
            plan.contains("COVERING INDEX entries_by_expiry"),
            "the soonest expiry is read from entries_by_expiry, not by a scan: {plan}"
        );
    }

    #[test]
    fn the_list_pages_newest_first_by_cursor_and_filters_by_dotted_prefix() {
        let mut store = sql_store();
        for (n, text) in ["203.0.114.1", "203.0.114.2", "198.252.206.1", "203.0.11.9"]
            .iter()
            .enumerate()
        {
            apply(&mut store, Operation::Add, text, None, NOON.plus(n as u64));
        }
        let first = store.list(&query(None, 2, None), NOON).unwrap();
        assert_eq!(
            (first.total, page_ips(&first)),
            (4, vec!["203.0.11.9".to_owned(), "198.252.206.1".to_owned()])
        );
        let second = store.list(&query(first.next, 2, None), NOON).unwrap();
        assert_eq!(
            (page_ips(&second), second.next),
            (
                vec!["203.0.114.2".to_owned(), "203.0.114.1".to_owned()],
                None
            )
        );
        let filtered = store
            .list(&query(None, 10, Some("203.0.11")), NOON)
            .unwrap();
        assert_eq!(
            (filtered.total, filtered.rows.len()),
            (3, 3),
            "a prefix matches the dotted text, not whole octets"
        );
        let exact = store
            .list(&query(None, 10, Some("203.0.114.")), NOON)
            .unwrap();
        assert_eq!(exact.total, 2);
    }

    #[test]
    fn the_historys_total_is_every_row_kept_after_trims_and_when_emptied() {
        let mut store = sql_store();
        let everything = PageQuery {
            after: None,
            limit: 5,
            prefix: None,
        };
        let total = |store: &HolderTables<NativeSql>| store.history(&everything).unwrap().total;
        assert_eq!(total(&store), 0);
        for n in 0..30 {
            apply(
                &mut store,
                Operation::Add,
                &format!("203.0.114.{n}"),
                None,
                NOON,
            );
        }
        assert_eq!(total(&store), 30);
        // As `trim_history` takes them: the oldest first.
        store
            .sql
            .execute("DELETE FROM history WHERE id <= 10", &[])
            .unwrap();
        assert_eq!(total(&store), 20);
        store.sql.execute("DELETE FROM history", &[]).unwrap();
        assert_eq!(total(&store), 0);
        apply(&mut store, Operation::Remove, "203.0.114.1", None, NOON);
        assert_eq!(
            total(&store),
            1,
            "numbers go on after every row was trimmed"
        );
    }

    #[test]
    fn the_history_pages_newest_first_and_tidy_drops_only_old_days_from_the_front() {
        let mut store = sql_store();
        apply(&mut store, Operation::Add, "8.8.8.8", None, NOON);
        apply(
            &mut store,
            Operation::Remove,
            "8.8.8.8",
            None,
            NOON.plus(HISTORY_DAYS * SECONDS_PER_DAY),
        );
        apply(
            &mut store,
            Operation::Add,
            "8.8.4.4",
            Some(Expiry::After(600)),
            NOON.plus(HISTORY_DAYS * SECONDS_PER_DAY + 1),
        );
        let page = store
            .history(&PageQuery {
                after: None,
                limit: 2,
                prefix: None,
            })
            .unwrap();
        assert_eq!(page.total, 3);
        assert_eq!(
            page.rows.iter().map(|e| e.change).collect::<Vec<_>>(),
            [HistoryKind::Added, HistoryKind::Removed]
        );
        let rest = store
            .history(&PageQuery {
                after: page.next,
                limit: 2,
                prefix: None,
            })
            .unwrap();
        assert_eq!((rest.rows.len(), rest.next), (1, None));

        let later = NOON.plus(HISTORY_DAYS * SECONDS_PER_DAY + 10);
        let next = store.tidy(later).unwrap();
        assert_eq!(
            next,
            Some(NOON.plus(HISTORY_DAYS * SECONDS_PER_DAY + 601)),
            "the next expiry comes before a day from now"
        );
        assert_eq!(
            store
                .history(&PageQuery {
                    after: None,
                    limit: 10,
                    prefix: None
                })
                .unwrap()
                .total,
            2,
            "the row older than 90 days went"
        );
    }

    #[test]
    fn liveness_in_sql_is_entry_is_live_at_every_second_around_an_expiry() {
        let mut store = sql_store();
        apply(
            &mut store,
            Operation::Add,
            "8.8.8.8",
            Some(Expiry::At(NOON.plus(60))),
            NOON,
        );
        let entry = store.entry(ip("8.8.8.8")).unwrap().unwrap();
        for at in [NOON, NOON.plus(59), NOON.plus(60), NOON.plus(61)] {
            let listed = store.list(&query(None, 10, None), at).unwrap().total == 1;
            let (_, mut feed) = crate::store::holder::feed::open(
                HolderTables::new(store.sql()),
                (None, Default::default()),
                None,
                at,
                10,
            )
            .unwrap();
            let fed = feed.next_page().unwrap().is_some();
            let due = store.expired(at, 10).unwrap().len() == 1;
            assert_eq!(
                (listed, fed, due),
                (entry.is_live(at), entry.is_live(at), !entry.is_live(at)),
                "the list, the feed and the sweep agree with the entry's liveness at +{} s",
                at.0 - NOON.0
            );
        }
    }

    proptest! {
        #[test]
        fn listed_and_expired_partition_every_entry_by_is_live(expiries in proptest::collection::vec(proptest::option::of(0u64..200), 1..30), probe in 0u64..220) {
            let mut store = sql_store();
            for (n, expiry) in expiries.iter().enumerate() {
                let text = format!("8.8.{}.{}", n / 256, n % 256);
                let expiry = expiry.map(|seconds| Expiry::At(NOON.plus(seconds)));
                let entry = Entry { ip: ip(&text), added_at: NOON, expires_at: expiry.map(|e| e.at(NOON)), comment: None };
                store.insert(&entry).unwrap();
            }
            let at = NOON.plus(probe);
            let live = expiries.iter().filter(|e| e.is_none_or(|seconds| at < NOON.plus(seconds))).count() as u64;
            prop_assert_eq!(store.list(&query(None, 1000, None), at).unwrap().total, live);
            prop_assert_eq!(store.expired(at, 1000).unwrap().len() as u64, expiries.len() as u64 - live);
        }
    }

    #[test]
    fn a_days_activity_counts_its_changes_and_the_expiries_of_that_day_for_thirty_days() {
        let mut store = sql_store();
        let day = NOON.utc_day();
        apply(&mut store, Operation::Add, "8.8.8.8", None, NOON);
        apply(
            &mut store,
            Operation::Add,
            "8.8.4.4",
            Some(Expiry::At(NOON.plus(60))),
            NOON,
        );
        apply(&mut store, Operation::Remove, "8.8.8.8", None, NOON);
        apply(
            &mut store,
            Operation::Add,
            "8.8.6.6",
            Some(Expiry::At(NOON.plus(60))),
            NOON,
        );
        // One met by a check once expired, the other swept the next day: each
        // counted on the day it expired.
        apply(&mut store, Operation::Check, "8.8.6.6", None, NOON.plus(61));
        let next = NOON.plus(SECONDS_PER_DAY);
        assert_eq!(sweep(&mut store, next, 10).unwrap(), 1);
        apply(&mut store, Operation::Add, "9.9.9.9", None, next);
        let rows = store.activity(day + 1).unwrap();
        let counts: Vec<(u64, u32, u32, u32)> = rows
            .iter()
            .map(|r| (r.day, r.added, r.removed, r.expired))
            .collect();
        assert_eq!(
            counts,
            [(day, 3, 1, 2), (day + 1, 1, 0, 0)],
            "each expiry is counted on the day it expired, met or swept"
        );
        assert_eq!(
            store.usage().unwrap().day,
            day + 1,
            "the day's usage is the newest row"
        );
        assert_eq!(store.usage().unwrap().added, 1);
        // Thirty days on, the first day has left the window and the table.
        let later = NOON.plus(30 * SECONDS_PER_DAY);
        assert_eq!(store.activity(later.utc_day()).unwrap().len(), 1);
        store.tidy(NOON.plus(31 * SECONDS_PER_DAY)).unwrap();
        let kept = store.sql().query("SELECT day FROM activity", &[]).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].int(0).unwrap(), day + 1);
    }

    #[test]
    fn revocation_is_recorded_once() {
        let store = sql_store();
        assert!(!store.is_revoked().unwrap());
        store.revoke(NOON).unwrap();
        store.revoke(NOON.plus(9)).unwrap();
        assert!(store.is_revoked().unwrap());
        let at = store
            .sql()
            .query("SELECT revoked_at FROM standing", &[])
            .unwrap();
        assert_eq!(at[0].int(0).unwrap(), NOON.0, "the first revocation counts");
    }

    #[test]
    fn a_stored_change_this_code_never_wrote_fails_the_read() {
        let store = sql_store();
        store
            .sql()
            .execute(
                "INSERT INTO history (at, change, ip)
                 VALUES (1, 'teleported', X'00000000000000000000ffff08080808')",
                &[],
            )
            .unwrap();
        let error = store
            .history(&PageQuery {
                after: None,
                limit: 10,
                prefix: None,
            })
            .unwrap_err();
        assert!(error.0.contains("unknown change \"teleported\""), "{error}");
    }
}
