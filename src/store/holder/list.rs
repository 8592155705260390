//! One holder's personal list in its Durable Object's SQLite database: the
//! schema and its migrations, and every statement the object runs. An address is
//! stored as sixteen bytes (IPv4 mapped into IPv6), the primary key, so a lookup
//! is one index probe and both families sort in one order.

use std::net::Ipv4Addr;

use crate::domain::code::Coded;
use crate::domain::net::address::Listed;
use crate::domain::page::{prefix_ranges, EntryCursor, HistoryCursor, Page, PageQuery};
use crate::domain::personal::activity::{ActivityDay, ACTIVITY_DAYS};
use crate::domain::personal::entry::{Change, Entry, HistoryEvent};
use crate::domain::personal::holder::{DailyUsage, ListStore, MAX_HISTORY_ROWS};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::store::holder::allow::{subject_of, subject_value};
use crate::store::sql::{Row, Sql, SqlError, Value};

/// History older than this is dropped by the daily sweep.
pub const HISTORY_DAYS: u64 = 90;

/// Step `n` brings the schema from version `n` to `n + 1`. Objects created before the
/// version was recorded are at version 0, and the first step is idempotent for them.
/// A change to the schema is a new step at the end, never an edit of an old one.
pub(super) const MIGRATIONS: [&str; 14] = [
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
    // Addresses as 16 bytes, IPv4 mapped into IPv6 (`::ffff:a.b.c.d`), so that the
    // rows take IPv6 without another migration and sort in address order. The list's
    // size, kept by the database itself, so that the bound on entries and a page's
    // total cost one row rather than a scan. The history by address, so that a delta
    // finds an address's last change by index. History numbers are kept as they were,
    // the sequence included: they are the feeds' cursors.
    "CREATE TABLE entries_wide (
        ip BLOB PRIMARY KEY, added_at INTEGER NOT NULL, expires_at INTEGER, comment TEXT
    ) WITHOUT ROWID;
    INSERT INTO entries_wide (ip, added_at, expires_at, comment)
        SELECT unhex(printf('00000000000000000000ffff%08x', ip)), added_at, expires_at, comment
        FROM entries;
    DROP TABLE entries;
    ALTER TABLE entries_wide RENAME TO entries;
    CREATE INDEX entries_by_age ON entries (added_at, ip);
    CREATE INDEX entries_by_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE history_wide (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL,
        ip BLOB NOT NULL, client TEXT
    );
    INSERT INTO history_wide (id, at, change, ip, client)
        SELECT id, at, change, unhex(printf('00000000000000000000ffff%08x', ip)), client
        FROM history;
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'history_wide', seq FROM sqlite_sequence WHERE name = 'history'
        AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'history_wide');
    UPDATE sqlite_sequence SET seq = max(seq, coalesce(
        (SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0))
        WHERE name = 'history_wide';
    DROP TABLE history;
    ALTER TABLE history_wide RENAME TO history;
    CREATE INDEX history_by_ip ON history (ip, id);
    CREATE TABLE list_size (id INTEGER PRIMARY KEY CHECK (id = 0), entries INTEGER NOT NULL);
    INSERT INTO list_size (id, entries) SELECT 0, count(*) FROM entries;
    CREATE TRIGGER entries_counted_in AFTER INSERT ON entries
        BEGIN UPDATE list_size SET entries = entries + 1 WHERE id = 0; END;
    CREATE TRIGGER entries_counted_out AFTER DELETE ON entries
        BEGIN UPDATE list_size SET entries = entries - 1 WHERE id = 0; END;",
    // A feed token's scope: the personal list, or all it may read. Tokens made
    // before read everything, as they could then.
    "ALTER TABLE feed_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';",
    // What a token's CrowdSec decisions say, where its pulls stand (the cursor of
    // its previous answer and when one last announced everything), and who pulled
    // last, what, and how often, for the dashboard.
    "ALTER TABLE feed_tokens ADD COLUMN decision TEXT NOT NULL DEFAULT 'ban';
    ALTER TABLE feed_tokens ADD COLUMN position TEXT;
    ALTER TABLE feed_tokens ADD COLUMN renewed_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN user_agent TEXT;
    ALTER TABLE feed_tokens ADD COLUMN pulled TEXT;
    ALTER TABLE feed_tokens ADD COLUMN pull_interval INTEGER;",
    // The day's usage becomes a row a day: the same one write per change, and the
    // last 30 days kept for the dashboard's chart, with the day's expiries.
    "CREATE TABLE activity (
        day INTEGER PRIMARY KEY, added INTEGER NOT NULL DEFAULT 0,
        removed INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0,
        expired INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    INSERT INTO activity (day, added, removed, refused)
        SELECT day, added, removed, refused FROM usage;
    DROP TABLE usage;",
    // The holder's own allow list: a row per range, by its first address (as the
    // entries' keys) and prefix, newest first for its pages; the day's adds and
    // removes of it beside the other counts; and what the license's record was
    // last told of it (whether it has entries), with the number of that telling.
    "CREATE TABLE allow (
        first BLOB NOT NULL, prefix INTEGER NOT NULL, added_at INTEGER NOT NULL, comment TEXT,
        PRIMARY KEY (first, prefix)
    ) WITHOUT ROWID;
    CREATE INDEX allow_by_age ON allow (added_at, first, prefix);
    ALTER TABLE activity ADD COLUMN allow_changes INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE allow_flag (
        id INTEGER PRIMARY KEY CHECK (id = 0), published INTEGER NOT NULL, version INTEGER NOT NULL
    );",
    // Reports of attackers: the day's count beside the others, the reports kept
    // until the alarm sends them to their shards, and the license this object is
    // of, which the alarm names them by.
    "ALTER TABLE activity ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE reports_out (
        id INTEGER PRIMARY KEY, ip BLOB NOT NULL, categories INTEGER NOT NULL, at INTEGER NOT NULL
    );
    CREATE TABLE identity (id INTEGER PRIMARY KEY CHECK (id = 0), license TEXT NOT NULL);",
    // The holder's CrowdSec engines ("machines"): each by its id, its login name
    // (which KV's login record is kept under), its label, its password's digest,
    // what its alerts do, its last login and alert, the scenarios its last login
    // named (a JSON array) and what its alerts came to.
    "CREATE TABLE machines (
        id TEXT PRIMARY KEY, machine_id TEXT NOT NULL UNIQUE, name TEXT, digest TEXT NOT NULL,
        ttl INTEGER NOT NULL, adds INTEGER NOT NULL, created_at INTEGER NOT NULL,
        last_login_at INTEGER, last_alert_at INTEGER, scenarios TEXT NOT NULL DEFAULT '[]',
        alerts INTEGER NOT NULL DEFAULT 0, reported INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0, ignored INTEGER NOT NULL DEFAULT 0
    );",
    // What the holder's CrowdSec components report of themselves (usage
    // metrics): a feed token's bouncer its last report on the token's row, and
    // what it dropped a day, by token and day so that a token's days are a range
    // of the key; a machine's engine its last report on the machine's row.
    "ALTER TABLE feed_tokens ADD COLUMN usage_type TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_name TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_version TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_os TEXT;
    ALTER TABLE feed_tokens ADD COLUMN usage_started_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_at INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_window INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_packets INTEGER;
    ALTER TABLE feed_tokens ADD COLUMN usage_bytes INTEGER;
    CREATE TABLE usage_days (
        token TEXT NOT NULL, day INTEGER NOT NULL, packets INTEGER NOT NULL,
        bytes INTEGER NOT NULL, PRIMARY KEY (token, day)
    ) WITHOUT ROWID;
    ALTER TABLE machines ADD COLUMN usage_version TEXT;
    ALTER TABLE machines ADD COLUMN usage_os TEXT;
    ALTER TABLE machines ADD COLUMN usage_started_at INTEGER;
    ALTER TABLE machines ADD COLUMN usage_at INTEGER;
    ALTER TABLE machines ADD COLUMN usage_datasources INTEGER;",
    // A machine's password digest is kept where its login reads it, the login
    // record in KV; the copy here was written and never read, a credential kept
    // twice for nothing.
    "ALTER TABLE machines DROP COLUMN digest;",
    // Independent reporters: each report kept with the network it came from (none
    // for those kept before, each a network of its own at its shard) and whether it
    // names a canary, the license with when it was issued (0 until a call says:
    // past any probation), the license's standing in the network with the number
    // of its last change and of the last one every shard was told, and each
    // change's audit row, kept until the directory has it (`audit::Forwarded`).
    "ALTER TABLE reports_out ADD COLUMN network TEXT;
    ALTER TABLE reports_out ADD COLUMN canary INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE identity ADD COLUMN licensed_at INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE network_standing (
        id INTEGER PRIMARY KEY CHECK (id = 0), suspended INTEGER NOT NULL, since INTEGER,
        canary TEXT, version INTEGER NOT NULL, told INTEGER NOT NULL
    );
    CREATE TABLE network_audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, detail TEXT NOT NULL,
        actor TEXT, actor_key TEXT, client TEXT
    );",
];

/// `Entry::is_live` for the rows of a query, on the expiry column named: `?1` is the time.
pub(super) fn live(column: &str) -> String {
    format!("({column} IS NULL OR {column} > ?1)")
}

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

/// Brings the holder's schema to the newest version.
pub fn migrate(sql: &impl Sql) -> Result<(), SqlError> {
    crate::store::sql::migrate(sql, &MIGRATIONS)
}

/// An IPv4 address as the rows keep it: 16 bytes, mapped into IPv6.
pub(super) fn address_value(addr: u32) -> Value {
    Value::Blob(Ipv4Addr::from(addr).to_ipv6_mapped().octets().to_vec())
}

fn ip_value(ip: Listed) -> Value {
    Value::Blob(ip.key().as_bytes().to_vec())
}

/// An address or /64 read back; `None` when it is not public (the rules changed
/// since, or it is a key of a kind this code does not serve).
pub(super) fn ip_of(bytes: &[u8]) -> Option<Listed> {
    Listed::from_key(bytes)
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
pub struct SqlListStore<S: Sql> {
    sql: S,
}

impl<S: Sql> SqlListStore<S> {
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
            let change = Change::from_code(&code)
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
        let has_history = self.count("SELECT EXISTS (SELECT 1 FROM history)", &[])? > 0;
        let daily = has_history.then(|| now.plus(SECONDS_PER_DAY));
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

impl<S: Sql> ListStore for SqlListStore<S> {
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
    use crate::domain::personal::entry::Expiry;
    use crate::domain::personal::holder::{sweep, Operation};
    use crate::store::holder::rule_tests::{apply, sql_store, NOON};
    use crate::store::sql::native::NativeSql;

    fn ip(text: &str) -> Listed {
        text.parse::<Listed>().unwrap()
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
        let total = |store: &SqlListStore<NativeSql>| store.history(&everything).unwrap().total;
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
            let (_, mut feed) = crate::store::holder::feed::open(
                SqlListStore::new(store.sql()),
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
        assert_eq!(counts, [(day, 3, 1, 2), (day + 1, 1, 0, 0)]);
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
    fn the_days_usage_row_becomes_its_activity_row() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..7]).unwrap();
        sql.execute(
            "INSERT INTO usage (id, day, added, removed, refused) VALUES (0, 20000, 4, 2, 1)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = SqlListStore::new(sql);
        assert_eq!(
            store.usage().unwrap(),
            DailyUsage {
                day: 20000,
                added: 4,
                removed: 2,
                refused: 1,
                ..DailyUsage::default()
            }
        );
        assert_eq!(store.activity(20000).unwrap()[0].expired, 0);
    }

    #[test]
    fn a_holder_from_before_the_allow_list_keeps_its_list_day_and_history_and_gains_it() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..8]).unwrap();
        // What the code before wrote for one add: its row, its history, its day.
        let key = Value::Blob(ip("8.8.8.8").key().as_bytes().to_vec());
        sql.execute(
            "INSERT INTO entries (ip, added_at) VALUES (?1, ?2)",
            &[key.clone(), Value::int(NOON.0)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO history (at, change, ip) VALUES (?1, 'added', ?2)",
            &[Value::int(NOON.0), key],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO activity (day, added) VALUES (?1, 1)",
            &[Value::int(NOON.utc_day())],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let mut store = SqlListStore::new(&sql);
        assert!(store.entry(ip("8.8.8.8")).unwrap().is_some());
        let usage = store.usage().unwrap();
        assert_eq!((usage.added, usage.allow_changes), (1, 0));
        let everything = PageQuery {
            after: None,
            limit: 10,
            prefix: None,
        };
        assert_eq!(store.history(&everything).unwrap().total, 1);
        assert!(store.allow_set().unwrap().is_empty());
        assert!(!store.published_allow_flag().unwrap());
        // The new table takes entries, and a removal of the old entry counts as ever.
        let mut set = store.allow_set().unwrap();
        let call = crate::domain::personal::allow::AllowCall {
            operation: Operation::Add,
            range: crate::domain::personal::allow::AllowRange::parse(
                "8.8.8.0/24",
                crate::domain::net::address::Ipv6::Off,
            )
            .unwrap()
            .range,
            comment: None,
            client: None,
        };
        let answer = crate::domain::personal::allow::perform_allow(
            &mut store,
            &mut set,
            &call,
            NOON,
            crate::domain::personal::holder::Limits::default(),
        )
        .unwrap();
        assert_eq!(answer.usage.unwrap().removed, 1);
        assert_eq!(store.allow_set().unwrap(), set);
    }

    #[test]
    fn a_holder_from_before_machines_keeps_its_list_reports_and_tokens_and_gains_them() {
        use crate::domain::machines::credentials::{MachineSettings, NewMachine, NewMachineRecord};
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..10]).unwrap();
        // What the code before wrote: an entry, a report kept, a feed token, the license.
        let key = Value::Blob(ip("8.8.8.8").key().as_bytes().to_vec());
        sql.execute(
            "INSERT INTO entries (ip, added_at, expires_at) VALUES (?1, ?2, ?3)",
            &[key.clone(), Value::int(NOON.0), Value::int(NOON.0 + 600)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO reports_out (ip, categories, at) VALUES (?1, 1, ?2)",
            &[key, Value::int(NOON.0)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at) VALUES ('ft_1', 'd', 1)",
            &[],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO identity (id, license) VALUES (0, 'lic_0123456789abcdef01234567')",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = SqlListStore::new(&sql);
        let entry = store.entry(ip("8.8.8.8")).unwrap().unwrap();
        assert_eq!(entry.expires_at, Some(NOON.plus(600)));
        assert_eq!(store.kept_reports(10).unwrap().len(), 1);
        assert_eq!(store.feed_tokens(NOON).unwrap().len(), 1);
        assert!(store.license().unwrap().is_some());
        assert!(store.machines().unwrap().is_empty());
        let new = NewMachine::generate().unwrap();
        let machine = NewMachineRecord {
            id: new.id,
            machine_id: new.machine_id,
            name: None,
        };
        let defaults = MachineSettings::default();
        assert!(store.create_machine(&machine, defaults, NOON).unwrap());
        assert_eq!(store.machines().unwrap().len(), 1);
    }

    #[test]
    fn a_holder_whose_machines_kept_their_digests_keeps_the_machines_without_them() {
        use crate::domain::machines::credentials::MachineChange;
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..12]).unwrap();
        // A machine as the code before wrote it, its password's digest beside it.
        sql.execute(
            "INSERT INTO machines (id, machine_id, name, digest, ttl, adds, created_at)
             VALUES ('m_1', 'engine-1', 'edge', ?1, 3600, 1, ?2)",
            &[Value::text("d".repeat(64)), Value::int(NOON.0)],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let columns = sql.query("SELECT name FROM pragma_table_info('machines')", &[]);
        let columns: Vec<String> = columns
            .unwrap()
            .iter()
            .map(|row| row.text(0).unwrap())
            .collect();
        assert!(!columns.contains(&"digest".to_owned()), "{columns:?}");
        let store = SqlListStore::new(&sql);
        let machines = store.machines().unwrap();
        assert_eq!(machines.len(), 1);
        assert_eq!(machines[0].machine_id, "engine-1");
        assert_eq!(machines[0].name.as_deref(), Some("edge"));
        assert_eq!((machines[0].ttl, machines[0].adds), (3600, true));
        let renamed = MachineChange {
            name: Some("renamed".to_owned()),
            ..MachineChange::default()
        };
        assert!(store.change_machine("m_1", &renamed).unwrap().is_some());
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
        let mut store = SqlListStore::new(sql);
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
        assert_eq!(
            store.size().unwrap(),
            1,
            "the size counts the rows already there"
        );
        assert_eq!(
            store.changes().unwrap(),
            (7, 7),
            "history numbers, the feeds' cursors, are kept"
        );
        store
            .insert(&Entry {
                ip: ip("8.8.4.4"),
                added_at: UnixTime(6),
                expires_at: None,
                comment: None,
            })
            .unwrap();
        store
            .insert(&Entry {
                ip: ip("8.8.4.4"),
                added_at: UnixTime(7),
                expires_at: None,
                comment: Some("again".into()),
            })
            .unwrap();
        store.delete(ip("8.8.8.8")).unwrap();
        assert_eq!(
            store.size().unwrap(),
            1,
            "kept by the triggers; storing an address again is not a second entry"
        );
        // The holder made before IPv6 takes an IPv6 entry beside its IPv4 ones.
        let v6 = ip("2a00:1450:4001:80b::200e");
        store
            .insert(&Entry {
                ip: v6,
                added_at: UnixTime(8),
                expires_at: None,
                comment: None,
            })
            .unwrap();
        assert_eq!(store.entry(v6).unwrap().map(|e| e.ip), Some(v6));
        let page = store.list(&query(None, 10, None), UnixTime(9)).unwrap();
        assert_eq!(page_ips(&page), ["2a00:1450:4001:80b::200e", "8.8.4.4"]);
        assert_eq!(page.total, 2);
        let version = store
            .sql()
            .query("SELECT version FROM schema_version", &[])
            .unwrap();
        assert_eq!(version[0].int(0).unwrap(), MIGRATIONS.len() as u64);
    }

    #[test]
    fn widening_the_addresses_keeps_the_history_numbers_even_of_trimmed_rows() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..4]).unwrap();
        for n in 1..=3 {
            sql.execute(
                "INSERT INTO history (at, change, ip) VALUES (?1, 'added', 134744072)",
                &[Value::int(n)],
            )
            .unwrap();
        }
        sql.execute("DELETE FROM history", &[]).unwrap();
        migrate(&sql).unwrap();
        let mut store = SqlListStore::new(sql);
        assert_eq!(store.changes().unwrap(), (4, 3));
        store
            .record(&HistoryEvent {
                at: UnixTime(9),
                change: Change::Added,
                ip: ip("8.8.8.8").into(),
                client: None,
            })
            .unwrap();
        assert_eq!(
            store.changes().unwrap(),
            (4, 4),
            "number 4 is the next, never 1"
        );
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
