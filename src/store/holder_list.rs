//! One holder's personal list in its Durable Object's SQLite database: the
//! schema and its migrations, and every statement the object runs. An address is
//! stored as its 32-bit integer value, the primary key, so a lookup is one index probe.

use std::net::Ipv4Addr;

use super::sql::{Row, Sql, SqlError, Value};
use crate::domain::code::Coded;
use crate::domain::entry::{Change, Entry, HistoryEvent};
use crate::domain::feed::{FeedAnswer, PersonalDelta};
use crate::domain::feed_token::{
    FeedTokenInfo, NewFeedTokenRecord, MAX_PER_HOLDER as MAX_FEED_TOKENS,
};
use crate::domain::holder::{DailyUsage, ListStore, MAX_HISTORY_ROWS};
use crate::domain::ipv4::PublicIpv4;
use crate::domain::page::{EntryCursor, HistoryCursor, Page, PageQuery};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};

/// History older than this is dropped by the daily sweep.
pub const HISTORY_DAYS: u64 = 90;

/// Step `n` brings the schema from version `n` to `n + 1`. Objects created before the
/// version was recorded are at version 0, and the first step is idempotent for them.
/// A change to the schema is a new step at the end, never an edit of an old one.
const MIGRATIONS: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS entries (
        ip INTEGER PRIMARY KEY, added_at INTEGER NOT NULL, expires_at INTEGER, comment TEXT
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS entries_by_age ON entries (added_at, ip);
    CREATE INDEX IF NOT EXISTS entries_by_expiry ON entries (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE TABLE IF NOT EXISTS usage (
        id INTEGER PRIMARY KEY CHECK (id = 0), day INTEGER NOT NULL,
        added INTEGER NOT NULL, removed INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS standing (
        id INTEGER PRIMARY KEY CHECK (id = 0), revoked_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS history (
        id INTEGER PRIMARY KEY, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip INTEGER NOT NULL, client TEXT
    );",
    "ALTER TABLE usage ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;",
    "CREATE TABLE feed_tokens (
        id TEXT PRIMARY KEY, digest TEXT NOT NULL, created_at INTEGER NOT NULL, last_used INTEGER
    );",
    // A history number is a feed's cursor: it must never be handed out twice, even
    // after every row was trimmed.
    "CREATE TABLE history_numbered (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip INTEGER NOT NULL, client TEXT
    );
    INSERT INTO history_numbered (id, at, change, ip, client)
        SELECT id, at, change, ip, client FROM history;
    DROP TABLE history;
    ALTER TABLE history_numbered RENAME TO history;",
];

/// `Entry::is_live` for the rows of a query, on the expiry column named: `?1` is the time.
fn live(column: &str) -> String {
    format!("({column} IS NULL OR {column} > ?1)")
}

/// Its negation for rows that have an expiry, written so that the expiry index finds them in order.
const EXPIRED: &str = "expires_at <= ?1";
/// Sorts after every row: the largest integer that crosses into JavaScript exactly.
const AFTER_ALL: u64 = (1 << 53) - 1;
/// An address as the dotted text the list's prefix filter matches.
const DOTTED: &str =
    "((ip >> 24) || '.' || ((ip >> 16) & 255) || '.' || ((ip >> 8) & 255) || '.' || (ip & 255))";
const ENTRY_COLUMNS: &str = "ip, added_at, expires_at, comment";

/// Brings the holder's schema to the newest version.
pub fn migrate(sql: &impl Sql) -> Result<(), SqlError> {
    super::sql::migrate(sql, &MIGRATIONS)
}

fn ip_value(ip: PublicIpv4) -> Value {
    Value::int(ip.to_u32().into())
}

/// An address read back; `None` when it is no longer public (the rules changed since).
fn ip_of(value: u64) -> Option<PublicIpv4> {
    PublicIpv4::from_addr(Ipv4Addr::from(u32::try_from(value).ok()?))
}

/// A row of `ENTRY_COLUMNS`.
fn entry_of(row: &Row) -> Result<Option<Entry>, SqlError> {
    let Some(ip) = ip_of(row.int(0)?) else {
        return Ok(None);
    };
    Ok(Some(Entry {
        ip,
        added_at: UnixTime(row.int(1)?),
        expires_at: row.opt_int(2)?.map(UnixTime),
        comment: row.opt_text(3)?,
    }))
}

fn entries(rows: Vec<Row>) -> Result<Vec<Entry>, SqlError> {
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
pub struct SqlListStore<S: Sql> {
    sql: S,
}

impl<S: Sql> SqlListStore<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    /// The database itself, for tests that look at rows directly.
    #[cfg(test)]
    pub fn raw(&self) -> &S {
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

    /// Records that the license is revoked; the first time counts.
    pub fn revoke(&self, now: UnixTime) -> Result<(), SqlError> {
        self.sql
            .execute(
                "INSERT OR IGNORE INTO standing (id, revoked_at) VALUES (0, ?1)",
                &[Value::int(now.0)],
            )
            .map(drop)
    }

    pub fn list(
        &self,
        query: &PageQuery<EntryCursor>,
        now: UnixTime,
    ) -> Result<Page<Entry, EntryCursor>, SqlError> {
        let prefix = Value::opt_text(query.prefix.as_deref());
        let filter = format!(
            "{} AND (?2 IS NULL OR {DOTTED} LIKE ?2 || '%')",
            live("expires_at")
        );
        let total = self.count(
            &format!("SELECT count(*) FROM entries WHERE {filter}"),
            &[Value::int(now.0), prefix.clone()],
        )?;
        let (after_time, after_ip) = query
            .after
            .map_or((AFTER_ALL, 0), |c| (c.added_at, c.ip.into()));
        let rows = self.sql.query(
            &format!(
                "SELECT {ENTRY_COLUMNS} FROM entries
                 WHERE {filter} AND (added_at < ?3 OR (added_at = ?3 AND ip < ?4))
                 ORDER BY added_at DESC, ip DESC LIMIT ?5"
            ),
            &[
                Value::int(now.0),
                prefix,
                Value::int(after_time),
                Value::int(after_ip),
                Value::int(u64::from(query.limit) + 1),
            ],
        )?;
        Ok(Page::of(entries(rows)?, query.limit, total, |e| {
            EntryCursor {
                added_at: e.added_at.0,
                ip: e.ip.to_u32(),
            }
        }))
    }

    pub fn history(
        &self,
        query: &PageQuery<HistoryCursor>,
    ) -> Result<Page<HistoryEvent, HistoryCursor>, SqlError> {
        let total = self.count("SELECT count(*) FROM history", &[])?;
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
            let change = Change::from_code(&code)
                .ok_or_else(|| SqlError(format!("history row {id}: unknown change {code:?}")))?;
            // An address that is no longer public is left out.
            if let Some(ip) = ip_of(row.int(3)?) {
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

    /// Drops history older than `HISTORY_DAYS`; returns when the next sweep is due, if
    /// anything is left to sweep.
    pub fn tidy(&self, now: UnixTime) -> Result<Option<UnixTime>, SqlError> {
        // From the front only: a feed's cursor relies on the history having no gaps.
        self.sql.execute(
            "DELETE FROM history WHERE id < coalesce(
                (SELECT min(id) FROM history WHERE at >= ?1), (SELECT max(id) + 1 FROM history))",
            &[Value::int(now.minus(HISTORY_DAYS * SECONDS_PER_DAY).0)],
        )?;
        let next_expiry = self
            .sql
            .query("SELECT min(expires_at) FROM entries", &[])?
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten();
        let has_history = self.count("SELECT EXISTS (SELECT 1 FROM history)", &[])? > 0;
        let daily = has_history.then(|| now.plus(SECONDS_PER_DAY));
        Ok(match (next_expiry.map(UnixTime), daily) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// The oldest history number kept and the newest ever given; with no row kept,
    /// the oldest is the one the next change will get.
    fn changes(&self) -> Result<(u64, u64), SqlError> {
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

    /// The whole live list, or the changes since `since` while the history still
    /// holds every change after it: each address once, in the order of its last
    /// change, listed with its entry or unlisted.
    /// `known` is the history number the caller holds: when it is current, nothing else is read.
    pub fn feed(
        &self,
        since: Option<u64>,
        known: Option<u64>,
        now: UnixTime,
    ) -> Result<FeedAnswer, SqlError> {
        let (oldest, changes) = self.changes()?;
        if known == Some(changes) {
            return Ok(FeedAnswer::Unchanged { changes });
        }
        let remembered = |since: u64| since <= changes && since + 1 >= oldest;
        match since {
            Some(since) if remembered(since) => {
                let codes = [Change::Added, Change::Removed, Change::Expired]
                    .map(|c| format!("'{}'", c.code()))
                    .join(", ");
                let rows = self.sql.query(
                    &format!(
                        "SELECT h.ip, e.ip IS NOT NULL, e.added_at, e.expires_at, e.comment
                         FROM (SELECT ip, max(id) AS last FROM history
                               WHERE id > ?2 AND change IN ({codes}) GROUP BY ip) h
                         LEFT JOIN entries e ON e.ip = h.ip AND {}
                         ORDER BY h.last",
                        live("e.expires_at")
                    ),
                    &[Value::int(now.0), Value::int(since)],
                )?;
                let mut delta = PersonalDelta::default();
                for row in rows {
                    let Some(ip) = ip_of(row.int(0)?) else {
                        continue;
                    };
                    if row.int(1)? != 0 {
                        let added_at = UnixTime(row.opt_int(2)?.unwrap_or(0));
                        delta.listed.push(Entry {
                            ip,
                            added_at,
                            expires_at: row.opt_int(3)?.map(UnixTime),
                            comment: row.opt_text(4)?,
                        });
                    } else {
                        delta.unlisted.push(ip);
                    }
                }
                Ok(FeedAnswer::Delta { changes, delta })
            }
            since => {
                let rows = self.sql.query(
                    &format!(
                        "SELECT {ENTRY_COLUMNS} FROM entries WHERE {}",
                        live("expires_at")
                    ),
                    &[Value::int(now.0)],
                )?;
                Ok(FeedAnswer::Whole {
                    changes,
                    reset: since.is_some(),
                    entries: entries(rows)?,
                })
            }
        }
    }

    /// Whether the token still exists; when it does, it was used now.
    pub fn touch_feed_token(&self, id: &str, now: UnixTime) -> Result<bool, SqlError> {
        Ok(self.sql.execute(
            "UPDATE feed_tokens SET last_used = ?1 WHERE id = ?2",
            &[Value::int(now.0), Value::text(id)],
        )? > 0)
    }

    /// Records a new token, unless the holder has the most it may.
    pub fn create_feed_token(
        &self,
        token: &NewFeedTokenRecord,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        if self.count("SELECT count(*) FROM feed_tokens", &[])? >= MAX_FEED_TOKENS as u64 {
            return Ok(false);
        }
        self.sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at) VALUES (?1, ?2, ?3)",
            &[
                Value::text(&token.id),
                Value::text(&token.digest),
                Value::int(now.0),
            ],
        )?;
        Ok(true)
    }

    pub fn feed_tokens(&self) -> Result<Vec<FeedTokenInfo>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, created_at, last_used FROM feed_tokens ORDER BY created_at, id",
            &[],
        )?;
        rows.iter()
            .map(|row| {
                Ok(FeedTokenInfo {
                    id: row.text(0)?,
                    created_at: UnixTime(row.int(1)?).to_rfc3339(),
                    last_used: row.opt_int(2)?.map(|at| UnixTime(at).to_rfc3339()),
                })
            })
            .collect()
    }

    /// Deletes a token; its digest, so that its record can go too, or `None` when there was none.
    pub fn revoke_feed_token(&self, id: &str) -> Result<Option<String>, SqlError> {
        let found = self.sql.query(
            "SELECT digest FROM feed_tokens WHERE id = ?1",
            &[Value::text(id)],
        )?;
        self.sql
            .execute("DELETE FROM feed_tokens WHERE id = ?1", &[Value::text(id)])?;
        found.first().map(|row| row.text(0)).transpose()
    }
}

impl<S: Sql> ListStore for SqlListStore<S> {
    type Error = SqlError;

    fn entry(&self, ip: PublicIpv4) -> Result<Option<Entry>, SqlError> {
        let rows = self.sql.query(
            &format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE ip = ?1"),
            &[ip_value(ip)],
        )?;
        rows.first().map(entry_of).transpose().map(Option::flatten)
    }

    fn insert(&mut self, entry: &Entry) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR REPLACE INTO entries (ip, added_at, expires_at, comment) VALUES (?1, ?2, ?3, ?4)",
            &[
                ip_value(entry.ip),
                Value::int(entry.added_at.0),
                Value::opt_int(entry.expires_at.map(|at| at.0)),
                Value::opt_text(entry.comment.as_deref()),
            ],
        )?;
        Ok(())
    }

    fn delete(&mut self, ip: PublicIpv4) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM entries WHERE ip = ?1", &[ip_value(ip)])
            .map(drop)
    }

    fn usage(&self) -> Result<DailyUsage, SqlError> {
        let rows = self.sql.query(
            "SELECT day, added, removed, refused FROM usage WHERE id = 0",
            &[],
        )?;
        let Some(row) = rows.first() else {
            return Ok(DailyUsage::default());
        };
        let count = |column| {
            row.int(column).and_then(|n| {
                u32::try_from(n).map_err(|_| SqlError(format!("count {n} out of range")))
            })
        };
        Ok(DailyUsage {
            day: row.int(0)?,
            added: count(1)?,
            removed: count(2)?,
            refused: count(3)?,
        })
    }

    fn save_usage(&mut self, usage: DailyUsage) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO usage (id, day, added, removed, refused) VALUES (0, ?1, ?2, ?3, ?4)
             ON CONFLICT (id) DO UPDATE SET
                day = excluded.day, added = excluded.added, removed = excluded.removed, refused = excluded.refused",
            &[Value::int(usage.day), Value::int(usage.added.into()), Value::int(usage.removed.into()), Value::int(usage.refused.into())],
        )?;
        Ok(())
    }

    fn record(&mut self, event: &HistoryEvent) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO history (at, change, ip, client) VALUES (?1, ?2, ?3, ?4)",
            &[
                Value::int(event.at.0),
                Value::text(event.change.code()),
                ip_value(event.ip),
                Value::opt_text(event.client.as_deref()),
            ],
        )?;
        self.sql.execute(
            "DELETE FROM history WHERE id <= (SELECT max(id) FROM history) - ?1",
            &[Value::int(MAX_HISTORY_ROWS)],
        )?;
        Ok(())
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
    use crate::domain::entry::{EntryDetails, Expiry};
    use crate::domain::holder::{perform, sweep, Call, Limits, Operation};
    use crate::store::rule_tests::sql_store;
    use crate::store::sql::native::NativeSql;

    const NOON: UnixTime = UnixTime(1_795_262_400);
    const NO_LIMITS: Limits = Limits {
        additions: u32::MAX,
        removals: u32::MAX,
    };

    fn ip(text: &str) -> PublicIpv4 {
        PublicIpv4::parse(text).unwrap()
    }

    fn apply(
        store: &mut SqlListStore<NativeSql>,
        operation: Operation,
        text: &str,
        expiry: Option<Expiry>,
        at: UnixTime,
    ) {
        let call = Call {
            operation,
            ip: ip(text),
            details: EntryDetails {
                expiry,
                comment: None,
            },
            client: None,
        };
        perform(store, &call, at, NO_LIMITS).unwrap();
    }

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
            [Change::Added, Change::Removed]
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
            let fed = whole(&store, None, at).2.len() == 1;
            let due = store.expired(at, 10).unwrap().len() == 1;
            assert_eq!(
                (listed, fed, due),
                (entry.is_live(at), entry.is_live(at), !entry.is_live(at)),
                "at +{}",
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

    fn whole(
        store: &SqlListStore<NativeSql>,
        since: Option<u64>,
        at: UnixTime,
    ) -> (u64, bool, Vec<Entry>) {
        match store.feed(since, None, at).unwrap() {
            FeedAnswer::Whole {
                changes,
                reset,
                entries,
            } => (changes, reset, entries),
            other => panic!("not the whole list: {other:?}"),
        }
    }

    fn delta(store: &SqlListStore<NativeSql>, since: u64, at: UnixTime) -> Option<PersonalDelta> {
        match store.feed(Some(since), None, at).unwrap() {
            FeedAnswer::Delta { delta, .. } => Some(delta),
            _ => None,
        }
    }

    #[test]
    fn a_feed_is_the_live_list_or_the_changes_since_a_cursor_each_address_once() {
        let mut store = sql_store();
        apply(&mut store, Operation::Add, "8.8.8.1", None, NOON);
        apply(
            &mut store,
            Operation::Add,
            "8.8.8.2",
            Some(Expiry::After(60)),
            NOON,
        );
        let (changes, reset, entries) = whole(&store, None, NOON);
        assert_eq!((changes, reset, entries.len()), (2, false, 2));
        assert_eq!(
            store.feed(None, Some(2), NOON).unwrap(),
            FeedAnswer::Unchanged { changes: 2 }
        );

        apply(&mut store, Operation::Remove, "8.8.8.1", None, NOON.plus(1));
        apply(&mut store, Operation::Add, "8.8.8.3", None, NOON.plus(2));
        apply(&mut store, Operation::Remove, "8.8.8.3", None, NOON.plus(3));
        apply(&mut store, Operation::Add, "8.8.8.3", None, NOON.plus(4));
        assert_eq!(sweep(&mut store, NOON.plus(60), 10).unwrap(), 1);
        let delta = delta(&store, 2, NOON.plus(60)).expect("a delta");
        assert_eq!(
            delta
                .listed
                .iter()
                .map(|e| e.ip.to_string())
                .collect::<Vec<_>>(),
            ["8.8.8.3"]
        );
        assert_eq!(
            delta
                .unlisted
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["8.8.8.1", "8.8.8.2"],
            "in the order of their last change"
        );
        let (_, reset, _) = whole(&store, Some(99), NOON.plus(60));
        assert!(reset, "a cursor from the future gets the whole list");
    }

    #[test]
    fn a_cursor_older_than_the_kept_history_gets_the_whole_list() {
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
        store
            .raw()
            .execute("DELETE FROM history WHERE id <= 3", &[])
            .unwrap();
        assert!(
            delta(&store, 3, NOON).is_some(),
            "row 4 onwards is all there"
        );
        assert!(whole(&store, Some(2), NOON).1, "row 3 is gone");
        store.raw().execute("DELETE FROM history", &[]).unwrap();
        assert!(
            delta(&store, 5, NOON).is_some(),
            "numbers are never handed out twice, so the newest cursor stays valid"
        );
    }

    #[test]
    fn feed_tokens_are_capped_touched_and_revoked() {
        let store = sql_store();
        for n in 0..MAX_FEED_TOKENS {
            let token = NewFeedTokenRecord {
                id: format!("ft_{n:016x}"),
                digest: format!("d{n}"),
            };
            assert!(store.create_feed_token(&token, NOON).unwrap());
        }
        assert!(!store
            .create_feed_token(
                &NewFeedTokenRecord {
                    id: "ft_x".into(),
                    digest: "x".into()
                },
                NOON
            )
            .unwrap());
        assert!(store
            .touch_feed_token("ft_0000000000000001", NOON.plus(5))
            .unwrap());
        let listed = store.feed_tokens().unwrap();
        assert_eq!(listed[1].last_used.as_deref(), Some("2026-11-21T12:00:05Z"));
        assert_eq!(
            store
                .revoke_feed_token("ft_0000000000000001")
                .unwrap()
                .as_deref(),
            Some("d1")
        );
        assert!(!store.touch_feed_token("ft_0000000000000001", NOON).unwrap());
        assert_eq!(
            store.revoke_feed_token("ft_0000000000000001").unwrap(),
            None
        );
    }

    #[test]
    fn revocation_is_recorded_once() {
        let store = sql_store();
        assert!(!store.is_revoked().unwrap());
        store.revoke(NOON).unwrap();
        store.revoke(NOON.plus(9)).unwrap();
        assert!(store.is_revoked().unwrap());
        let at = store
            .raw()
            .query("SELECT revoked_at FROM standing", &[])
            .unwrap();
        assert_eq!(at[0].int(0).unwrap(), NOON.0, "the first revocation counts");
    }

    #[test]
    fn a_database_from_before_versioned_schemas_is_migrated_with_its_data() {
        let sql = NativeSql::new();
        // The first schema, as objects created before the version table had it.
        sql.script(MIGRATIONS[0]).unwrap();
        sql.execute(
            "INSERT INTO entries (ip, added_at) VALUES (134744072, 5)",
            &[],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO history (id, at, change, ip) VALUES (7, 5, 'added', 134744072)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        migrate(&sql).unwrap();
        let store = SqlListStore::new(sql);
        assert_eq!(
            store.entry(ip("8.8.8.8")).unwrap().map(|e| e.added_at),
            Some(UnixTime(5))
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
            1
        );
        assert_eq!(
            store.usage().unwrap(),
            DailyUsage::default(),
            "the refused column came with its default"
        );
        let version = store
            .raw()
            .query("SELECT version FROM schema_version", &[])
            .unwrap();
        assert_eq!(version[0].int(0).unwrap(), MIGRATIONS.len() as u64);
    }

    #[test]
    fn a_stored_change_this_code_never_wrote_fails_the_read() {
        let store = sql_store();
        store
            .raw()
            .execute(
                "INSERT INTO history (at, change, ip) VALUES (1, 'teleported', 134744072)",
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
