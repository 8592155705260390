//! The Durable Object that owns one license holder's personal list. The runtime
//! runs one request at a time per object, and `perform` never awaits, so the
//! read-check-write of an add or remove cannot interleave with another; its
//! writes commit together, before the answer leaves.

use std::cell::Cell;
use std::net::Ipv4Addr;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use worker::{
    durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue,
    State,
};

use crate::domain::code::Coded;
use crate::domain::entry::{expired_sql, live_sql, Change, Entry, HistoryEvent};
use crate::domain::feed::{FeedAnswer, FeedRequest, PersonalDelta};
use crate::domain::feed_token::{
    FeedTokenInfo, NewFeedTokenRecord, MAX_PER_HOLDER as MAX_FEED_TOKENS,
};
use crate::domain::holder::{
    perform, sweep, Answer, Call, DailyUsage, Limits, ListStore, Operation, MAX_HISTORY_ROWS,
};
use crate::domain::ipv4::PublicIpv4;
use crate::domain::page::{EntryCursor, HistoryCursor, Page, PageQuery};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::store::holders::FEED_TOKEN_REVOKED;
use crate::{clock, config};

/// History older than this is dropped by the daily sweep.
pub const HISTORY_DAYS: u64 = 90;
/// Expired entries one alarm removes at most; when there are more, the next alarm runs at once.
const SWEEP_BATCH: usize = 1_000;

/// Step `n` brings the schema from version `n` to `n + 1`. Objects created before the
/// version was recorded are at version 0, and the first step is idempotent for them.
/// A change to the schema is a new step at the end, never an edit of an old one.
const MIGRATIONS: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS entries (
        ip INTEGER PRIMARY KEY, added_at INTEGER NOT NULL, expires_at INTEGER, comment TEXT
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS entries_by_age ON entries (added_at, ip);
    CREATE INDEX IF NOT EXISTS entries_by_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
    CREATE TABLE IF NOT EXISTS usage (
        id INTEGER PRIMARY KEY CHECK (id = 0), day INTEGER NOT NULL, added INTEGER NOT NULL, removed INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS standing (id INTEGER PRIMARY KEY CHECK (id = 0), revoked_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS history (
        id INTEGER PRIMARY KEY, at INTEGER NOT NULL, change TEXT NOT NULL, ip INTEGER NOT NULL, client TEXT
    );",
    "ALTER TABLE usage ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;",
    "CREATE TABLE feed_tokens (id TEXT PRIMARY KEY, digest TEXT NOT NULL, created_at INTEGER NOT NULL, last_used INTEGER);",
    // A history number is a feed's cursor: it must never be handed out twice, even
    // after every row was trimmed.
    "CREATE TABLE history_numbered (
        id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, change TEXT NOT NULL, ip INTEGER NOT NULL, client TEXT
    );
    INSERT INTO history_numbered (id, at, change, ip, client) SELECT id, at, change, ip, client FROM history;
    DROP TABLE history;
    ALTER TABLE history_numbered RENAME TO history;",
];

/// Brings the schema to the newest version. The constructor does not await, so the
/// runtime commits each step together with its version number, or neither.
fn migrate(sql: &SqlStorage) -> Result<()> {
    sql.exec("CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)", None)?;
    let rows: Vec<Count> = sql
        .exec("SELECT version AS n FROM schema_version WHERE id = 0", None)?
        .to_array()?;
    let current = rows.first().map_or(0, |row| row.n as usize);
    for (version, step) in MIGRATIONS.iter().enumerate().skip(current) {
        sql.exec(step, None)?;
        sql.exec(
            "INSERT INTO schema_version (id, version) VALUES (0, ?1) ON CONFLICT (id) DO UPDATE SET version = excluded.version",
            vec![int(version as u64 + 1)],
        )?;
    }
    Ok(())
}

/// Sorts after every row: the largest integer that crosses into JavaScript exactly.
const AFTER_ALL: u64 = (1 << 53) - 1;

/// An address as the dotted text the list's prefix filter matches.
const DOTTED: &str =
    "((ip >> 24) || '.' || ((ip >> 16) & 255) || '.' || ((ip >> 8) & 255) || '.' || (ip & 255))";

#[durable_object]
pub struct HolderList {
    state: State,
    sql: SqlStorage,
    /// The limits once the schema exists; a configuration or storage fault otherwise,
    /// answered as a 500 on every request rather than a panic at start.
    ready: std::result::Result<Limits, String>,
    /// When the next alarm is known to be set, so most requests need not ask.
    alarm_at: Cell<Option<u64>>,
    /// Whether the license is revoked, once read: every request of a holder comes
    /// through this one object, so the answer cannot go stale here.
    revoked: Cell<Option<bool>>,
}

impl DurableObject for HolderList {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        let ready = migrate(&sql)
            .map_err(|e| format!("schema: {e}"))
            .and_then(|_| config::settings(&env).map(|s| s.limits).map_err(|e| e.0));
        Self {
            state,
            sql,
            ready,
            alarm_at: Cell::new(None),
            revoked: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let limits = match &self.ready {
            Ok(limits) => *limits,
            Err(problem) => return Response::error(problem.clone(), 500),
        };
        // The last wait before the work: from here the operation runs without yielding, and
        // the alarm calls after it are storage operations, during which the runtime
        // delivers no other request to this object.
        let body = req.text().await?;
        let now = clock::now().unix();
        let mut store = SqlListStore { sql: &self.sql };
        let path = req.path();
        if path == "/revoke" {
            self.sql.exec(
                "INSERT OR IGNORE INTO standing (id, revoked_at) VALUES (0, ?1)",
                vec![int(now.0)],
            )?;
            self.revoked.set(Some(true));
            return Response::from_json(&"revoked");
        }
        // A revoked license is refused here at once, whatever an edge cache still says.
        if self.is_revoked()? {
            return Response::error("revoked", 401);
        }
        match path.as_str() {
            "/calls" => {
                // Every call of a bulk request in one pass: nothing runs in between, and the
                // day's limits apply item by item in the order given.
                let calls: Vec<Call> = serde_json::from_str(&body)?;
                let answers = calls
                    .iter()
                    .map(|call| perform(&mut store, call, now, limits))
                    .collect::<Result<Vec<Answer>>>()?;
                // Adds and removes may leave something to sweep (an expiring entry, history); checks never do.
                let next = calls
                    .iter()
                    .filter(|call| call.operation != Operation::Check)
                    .map(|call| {
                        call.details
                            .expiry
                            .map_or(now.plus(SECONDS_PER_DAY), |expiry| expiry.at(now))
                    })
                    .min();
                if let Some(next) = next {
                    self.schedule_sweep(next).await?;
                }
                Response::from_json(&answers)
            }
            "/feed" => {
                let request: FeedRequest = serde_json::from_str(&body)?;
                if let Some(token) = &request.token {
                    if !store.touch_feed_token(token, now)? {
                        return Response::error(FEED_TOKEN_REVOKED, 401);
                    }
                }
                // Entries past their expiry leave the list, and enter the history, before it is read.
                while sweep(&mut store, now, SWEEP_BATCH)? == SWEEP_BATCH {}
                Response::from_json(&store.feed(&request, now)?)
            }
            "/feed_tokens/create" => {
                let token: NewFeedTokenRecord = serde_json::from_str(&body)?;
                Response::from_json(&store.create_feed_token(&token, now)?)
            }
            "/usage" => Response::from_json(&store.usage()?),
            "/feed_tokens/list" => Response::from_json(&store.feed_tokens()?),
            "/feed_tokens/revoke" => Response::from_json(
                &store.revoke_feed_token(&serde_json::from_str::<String>(&body)?)?,
            ),
            "/list" => Response::from_json(&store.list(&serde_json::from_str(&body)?, now)?),
            "/history" => Response::from_json(&store.history(&serde_json::from_str(&body)?)?),
            path => Response::error(format!("no such holder route: {path}"), 404),
        }
    }

    /// Deletes a batch of expired entries (recording each in the history); when that
    /// was the last batch, drops old history and sets the next alarm for the next
    /// expiry or a day from now, else runs again at once.
    async fn alarm(&self) -> Result<Response> {
        self.alarm_at.set(None);
        let mut store = SqlListStore { sql: &self.sql };
        let now = clock::now().unix();
        let next = if sweep(&mut store, now, SWEEP_BATCH)? == SWEEP_BATCH {
            Some(now)
        } else {
            store.tidy(now)?
        };
        if let Some(at) = next {
            self.schedule_sweep(at).await?;
        }
        Response::ok("swept")
    }
}

impl HolderList {
    fn is_revoked(&self) -> Result<bool> {
        if let Some(revoked) = self.revoked.get() {
            return Ok(revoked);
        }
        let revoked = self
            .sql
            .exec("SELECT revoked_at FROM standing WHERE id = 0", None)?
            .raw()
            .next()
            .is_some();
        self.revoked.set(Some(revoked));
        Ok(revoked)
    }

    /// Makes sure an alarm fires no later than `at`.
    async fn schedule_sweep(&self, at: UnixTime) -> Result<()> {
        let storage = self.state.storage();
        if self.alarm_at.get().is_none() {
            self.alarm_at
                .set(storage.get_alarm().await?.map(|ms| ms as u64 / 1000));
        }
        if self.alarm_at.get().is_none_or(|scheduled| scheduled > at.0) {
            let when = chrono::DateTime::from_timestamp(at.0 as i64, 0)
                .ok_or("alarm time out of range")?;
            storage.set_alarm(when).await?;
            self.alarm_at.set(Some(at.0));
        }
        Ok(())
    }
}

fn int(value: u64) -> SqlStorageValue {
    SqlStorageValue::Integer(value as i64)
}

fn ip_value(ip: PublicIpv4) -> SqlStorageValue {
    int(ip.to_u32().into())
}

fn ip_of(value: u64) -> Option<PublicIpv4> {
    PublicIpv4::from_addr(Ipv4Addr::from(u32::try_from(value).ok()?))
}

/// The personal list in the object's SQLite database. An address is stored as its
/// 32-bit integer value, the primary key, so a lookup is one index probe.
struct SqlListStore<'a> {
    sql: &'a SqlStorage,
}

#[derive(Deserialize)]
struct EntryRow {
    ip: u64,
    added_at: u64,
    expires_at: Option<u64>,
    comment: Option<String>,
}

impl EntryRow {
    fn into_entry(self) -> Option<Entry> {
        Some(Entry {
            ip: ip_of(self.ip)?,
            added_at: UnixTime(self.added_at),
            expires_at: self.expires_at.map(UnixTime),
            comment: self.comment,
        })
    }
}

#[derive(Deserialize)]
struct HistoryRow {
    id: u64,
    at: u64,
    change: String,
    ip: u64,
    client: Option<String>,
}

impl HistoryRow {
    /// The event, or none when its address is no longer public; a change this code
    /// does not know is stored data it never wrote, and fails the read.
    fn into_event(self) -> Result<Option<HistoryEvent>> {
        let change = Change::from_code(&self.change)
            .ok_or_else(|| format!("history row {}: unknown change {:?}", self.id, self.change))?;
        Ok(ip_of(self.ip).map(|ip| HistoryEvent {
            at: UnixTime(self.at),
            change,
            ip,
            client: self.client,
        }))
    }
}

#[derive(Deserialize)]
struct UsageRow {
    day: u64,
    added: u32,
    removed: u32,
    refused: u32,
}

#[derive(Deserialize)]
struct Count {
    n: u64,
}

#[derive(Deserialize)]
struct Moment {
    at: Option<u64>,
}

impl SqlListStore<'_> {
    fn rows<T: DeserializeOwned>(
        &self,
        query: &str,
        bindings: Vec<SqlStorageValue>,
    ) -> Result<Vec<T>> {
        self.sql.exec(query, bindings)?.to_array()
    }

    /// A query that yields exactly one row (an aggregate).
    fn one<T: DeserializeOwned>(&self, query: &str, bindings: Vec<SqlStorageValue>) -> Result<T> {
        self.sql.exec(query, bindings)?.one()
    }

    fn list(
        &self,
        query: &PageQuery<EntryCursor>,
        now: UnixTime,
    ) -> Result<Page<Entry, EntryCursor>> {
        let prefix = query
            .prefix
            .clone()
            .map_or(SqlStorageValue::Null, SqlStorageValue::String);
        let filter = format!(
            "{} AND (?2 IS NULL OR {DOTTED} LIKE ?2 || '%')",
            live_sql("expires_at", "?1")
        );
        let total: Count = self.one(
            &format!("SELECT count(*) AS n FROM entries WHERE {filter}"),
            vec![int(now.0), prefix.clone()],
        )?;
        let (after_time, after_ip) = query
            .after
            .map_or((AFTER_ALL, 0), |c| (c.added_at, c.ip.into()));
        let rows: Vec<EntryRow> = self.rows(
            &format!(
                "SELECT ip, added_at, expires_at, comment FROM entries
                 WHERE {filter} AND (added_at < ?3 OR (added_at = ?3 AND ip < ?4))
                 ORDER BY added_at DESC, ip DESC LIMIT ?5"
            ),
            vec![
                int(now.0),
                prefix,
                int(after_time),
                int(after_ip),
                int(u64::from(query.limit) + 1),
            ],
        )?;
        let entries = rows.into_iter().filter_map(EntryRow::into_entry).collect();
        Ok(Page::of(entries, query.limit, total.n, |e| EntryCursor {
            added_at: e.added_at.0,
            ip: e.ip.to_u32(),
        }))
    }

    fn history(
        &self,
        query: &PageQuery<HistoryCursor>,
    ) -> Result<Page<HistoryEvent, HistoryCursor>> {
        let total: Count = self.one("SELECT count(*) AS n FROM history", vec![])?;
        let before = query.after.map_or(AFTER_ALL, |c| c.id);
        let rows: Vec<HistoryRow> = self.rows(
            "SELECT id, at, change, ip, client FROM history WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            vec![int(before), int(u64::from(query.limit) + 1)],
        )?;
        let page = Page::of(rows, query.limit, total.n, |row| HistoryCursor {
            id: row.id,
        });
        let events = page
            .rows
            .into_iter()
            .map(HistoryRow::into_event)
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            total: page.total,
            rows: events.into_iter().flatten().collect(),
            next: page.next,
        })
    }

    /// Drops history older than `HISTORY_DAYS`; returns when the next sweep is due, if
    /// anything is left to sweep.
    fn tidy(&self, now: UnixTime) -> Result<Option<UnixTime>> {
        // From the front only: a feed's cursor relies on the history having no gaps.
        self.sql.exec(
            "DELETE FROM history WHERE id < coalesce((SELECT min(id) FROM history WHERE at >= ?1), (SELECT max(id) + 1 FROM history))",
            vec![int(now.minus(HISTORY_DAYS * SECONDS_PER_DAY).0)],
        )?;
        let next_expiry: Moment = self.one("SELECT min(expires_at) AS at FROM entries", vec![])?;
        let has_history: Count = self.one("SELECT EXISTS (SELECT 1 FROM history) AS n", vec![])?;
        let daily = (has_history.n > 0).then(|| now.plus(SECONDS_PER_DAY));
        let next = next_expiry.at.map(UnixTime);
        Ok(match (next, daily) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }
}

#[derive(Deserialize)]
struct TokenStored {
    id: String,
    created_at: u64,
    last_used: Option<u64>,
}

#[derive(Deserialize)]
struct DeltaRow {
    ip: u64,
    listed: u64,
    added_at: Option<u64>,
    expires_at: Option<u64>,
    comment: Option<String>,
}

#[derive(Deserialize)]
struct Digest {
    digest: String,
}

impl SqlListStore<'_> {
    /// The oldest history number kept and the newest ever given; with no row kept,
    /// the oldest is the one the next change will get.
    fn changes(&self) -> Result<(u64, u64)> {
        let bounds: Bounds = self.one(
            "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0) AS newest,
                    coalesce((SELECT min(id) FROM history), 0) AS oldest",
            vec![],
        )?;
        Ok(if bounds.oldest == 0 {
            (bounds.newest + 1, bounds.newest)
        } else {
            (bounds.oldest, bounds.newest)
        })
    }

    /// The whole live list, or the changes since `since` while the history still
    /// holds every change after it: each address once, in the order of its last
    /// change, listed with its entry or unlisted.
    fn feed(&self, request: &FeedRequest, now: UnixTime) -> Result<FeedAnswer> {
        let (oldest, changes) = self.changes()?;
        if request.known == Some(changes) {
            return Ok(FeedAnswer {
                changes,
                unchanged: true,
                reset: false,
                entries: None,
                delta: None,
            });
        }
        let remembered = |since: u64| since <= changes && since + 1 >= oldest;
        match request.since {
            Some(since) if remembered(since) => {
                let codes = [Change::Added, Change::Removed, Change::Expired]
                    .map(|c| format!("'{}'", c.code()))
                    .join(", ");
                let rows: Vec<DeltaRow> = self.rows(
                    &format!(
                        "SELECT h.ip AS ip, e.ip IS NOT NULL AS listed, e.added_at AS added_at, e.expires_at AS expires_at, e.comment AS comment
                         FROM (SELECT ip, max(id) AS last FROM history WHERE id > ?1 AND change IN ({codes}) GROUP BY ip) h
                         LEFT JOIN entries e ON e.ip = h.ip AND {}
                         ORDER BY h.last",
                        live_sql("e.expires_at", "?2")
                    ),
                    vec![int(since), int(now.0)],
                )?;
                let mut delta = PersonalDelta::default();
                for row in rows {
                    let Some(ip) = ip_of(row.ip) else { continue };
                    if row.listed != 0 {
                        let added_at = UnixTime(row.added_at.unwrap_or(0));
                        delta.listed.push(Entry {
                            ip,
                            added_at,
                            expires_at: row.expires_at.map(UnixTime),
                            comment: row.comment,
                        });
                    } else {
                        delta.unlisted.push(ip);
                    }
                }
                Ok(FeedAnswer {
                    changes,
                    unchanged: false,
                    reset: false,
                    entries: None,
                    delta: Some(delta),
                })
            }
            since => {
                let rows: Vec<EntryRow> = self.rows(
                    &format!(
                        "SELECT ip, added_at, expires_at, comment FROM entries WHERE {}",
                        live_sql("expires_at", "?1")
                    ),
                    vec![int(now.0)],
                )?;
                let entries = rows.into_iter().filter_map(EntryRow::into_entry).collect();
                Ok(FeedAnswer {
                    changes,
                    unchanged: false,
                    reset: since.is_some(),
                    entries: Some(entries),
                    delta: None,
                })
            }
        }
    }

    /// Whether the token still exists; when it does, it was used now.
    fn touch_feed_token(&self, id: &str, now: UnixTime) -> Result<bool> {
        let cursor = self.sql.exec(
            "UPDATE feed_tokens SET last_used = ?1 WHERE id = ?2",
            vec![int(now.0), id.into()],
        )?;
        Ok(cursor.rows_written() > 0)
    }

    /// Records a new token, unless the holder has the most it may.
    fn create_feed_token(&self, token: &NewFeedTokenRecord, now: UnixTime) -> Result<bool> {
        let count: Count = self.one("SELECT count(*) AS n FROM feed_tokens", vec![])?;
        if count.n >= MAX_FEED_TOKENS as u64 {
            return Ok(false);
        }
        self.sql.exec(
            "INSERT INTO feed_tokens (id, digest, created_at) VALUES (?1, ?2, ?3)",
            vec![
                token.id.clone().into(),
                token.digest.clone().into(),
                int(now.0),
            ],
        )?;
        Ok(true)
    }

    fn feed_tokens(&self) -> Result<Vec<FeedTokenInfo>> {
        let rows: Vec<TokenStored> = self.rows(
            "SELECT id, created_at, last_used FROM feed_tokens ORDER BY created_at, id",
            vec![],
        )?;
        Ok(rows
            .into_iter()
            .map(|row| FeedTokenInfo {
                id: row.id,
                created_at: UnixTime(row.created_at).to_rfc3339(),
                last_used: row.last_used.map(|at| UnixTime(at).to_rfc3339()),
            })
            .collect())
    }

    /// Deletes a token; its digest, so that its record can go too, or `None` when there was none.
    fn revoke_feed_token(&self, id: &str) -> Result<Option<String>> {
        let found: Vec<Digest> = self.rows(
            "SELECT digest FROM feed_tokens WHERE id = ?1",
            vec![id.into()],
        )?;
        self.sql
            .exec("DELETE FROM feed_tokens WHERE id = ?1", vec![id.into()])?;
        Ok(found.into_iter().next().map(|row| row.digest))
    }
}

#[derive(Deserialize)]
struct Bounds {
    oldest: u64,
    newest: u64,
}

impl ListStore for SqlListStore<'_> {
    type Error = worker::Error;

    fn entry(&self, ip: PublicIpv4) -> Result<Option<Entry>> {
        let rows: Vec<EntryRow> = self.rows(
            "SELECT ip, added_at, expires_at, comment FROM entries WHERE ip = ?1",
            vec![ip_value(ip)],
        )?;
        Ok(rows.into_iter().next().and_then(EntryRow::into_entry))
    }

    fn insert(&mut self, entry: &Entry) -> Result<()> {
        self.sql.exec(
            "INSERT OR REPLACE INTO entries (ip, added_at, expires_at, comment) VALUES (?1, ?2, ?3, ?4)",
            vec![
                ip_value(entry.ip),
                int(entry.added_at.0),
                entry.expires_at.map_or(SqlStorageValue::Null, |at| int(at.0)),
                entry.comment.clone().map_or(SqlStorageValue::Null, SqlStorageValue::String),
            ],
        )?;
        Ok(())
    }

    fn delete(&mut self, ip: PublicIpv4) -> Result<()> {
        self.sql
            .exec("DELETE FROM entries WHERE ip = ?1", vec![ip_value(ip)])?;
        Ok(())
    }

    fn usage(&self) -> Result<DailyUsage> {
        let rows: Vec<UsageRow> = self.rows(
            "SELECT day, added, removed, refused FROM usage WHERE id = 0",
            vec![],
        )?;
        Ok(rows
            .first()
            .map_or_else(DailyUsage::default, |row| DailyUsage {
                day: row.day,
                added: row.added,
                removed: row.removed,
                refused: row.refused,
            }))
    }

    fn save_usage(&mut self, usage: DailyUsage) -> Result<()> {
        self.sql.exec(
            "INSERT INTO usage (id, day, added, removed, refused) VALUES (0, ?1, ?2, ?3, ?4)
             ON CONFLICT (id) DO UPDATE SET
                day = excluded.day, added = excluded.added, removed = excluded.removed, refused = excluded.refused",
            vec![int(usage.day), int(usage.added.into()), int(usage.removed.into()), int(usage.refused.into())],
        )?;
        Ok(())
    }

    fn record(&mut self, event: &HistoryEvent) -> Result<()> {
        self.sql.exec(
            "INSERT INTO history (at, change, ip, client) VALUES (?1, ?2, ?3, ?4)",
            vec![
                int(event.at.0),
                SqlStorageValue::String(event.change.code().to_owned()),
                ip_value(event.ip),
                event
                    .client
                    .clone()
                    .map_or(SqlStorageValue::Null, SqlStorageValue::String),
            ],
        )?;
        self.sql.exec(
            "DELETE FROM history WHERE id <= (SELECT max(id) FROM history) - ?1",
            vec![int(MAX_HISTORY_ROWS)],
        )?;
        Ok(())
    }

    fn expired(&self, now: UnixTime, limit: usize) -> Result<Vec<Entry>> {
        let rows: Vec<EntryRow> = self.rows(
            &format!("SELECT ip, added_at, expires_at, comment FROM entries WHERE {} ORDER BY expires_at LIMIT ?2", expired_sql("expires_at", "?1")),
            vec![int(now.0), int(limit as u64)],
        )?;
        Ok(rows.into_iter().filter_map(EntryRow::into_entry).collect())
    }
}
