//! The directory object's SQLite database: every license with its label, note and
//! times; the named operator keys, as digests; and the audit log. One object holds
//! all three, so that a key revoked is refused by the next call, a search sees one
//! order, and an audit row is written in the same call as what it records.

use serde::{Deserialize, Serialize};

use super::sql::{Row, Sql, SqlError, Value, MAX_EXACT_INTEGER};
use crate::domain::access::audit::{
    Action, AuditFilter, AuditKind, AuditRow, Forwarded, KeyFilter, Record, MAX_ROWS,
    REFUSALS_MERGED_SECONDS, RETENTION_DAYS,
};
use crate::domain::access::operator::{
    folded, Actor, KnownKey, KnownKeys, Role, ADMIN_TOKEN_NAME, MAX_REVOKED_KNOWN,
};
use crate::domain::code::Coded;
use crate::domain::time::{Millis, UnixTime};

/// See `sql::migrate`. The second step keeps, for each object that sends the
/// directory audit rows it kept with its changes, the number of the last one
/// written (`audit::Forwarded`). The third indexes the log by each filter a page
/// takes, each followed by the time and the id a page is ordered and cut by, so
/// that a filtered page, newest first, is a range of one index (the index by
/// time alone replaced by one with the id after it).
const MIGRATIONS: [&str; 5] = [
    "
CREATE TABLE licenses (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, label TEXT NOT NULL,
    folded TEXT NOT NULL, note TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER
);
CREATE INDEX licenses_by_age ON licenses (created_at, seq);
CREATE TABLE operator_keys (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL, revoked_at INTEGER
);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, action TEXT NOT NULL,
    actor TEXT, actor_key TEXT, client TEXT, target TEXT NOT NULL, detail TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1, refusal INTEGER NOT NULL, n INTEGER NOT NULL
);
CREATE INDEX audit_by_time ON audit (at);
CREATE INDEX audit_by_kind ON audit (refusal, n);
CREATE TABLE takeover (id INTEGER PRIMARY KEY CHECK (id = 0), cursor TEXT, done INTEGER NOT NULL);
",
    "
CREATE TABLE forwarded (source TEXT PRIMARY KEY, seq INTEGER NOT NULL);
",
    "
DROP INDEX audit_by_time;
CREATE INDEX audit_by_when ON audit (at, id);
CREATE INDEX audit_by_action ON audit (action, at, id);
CREATE INDEX audit_by_key ON audit (actor_key, at, id);
CREATE INDEX audit_by_target ON audit (target, at, id);
CREATE INDEX audit_by_refusal ON audit (refusal, at, id);
",
    // The licenses' number kept as they are made (none is ever deleted), where
    // the operator's status counted every license at each call.
    "
CREATE TABLE license_count (id INTEGER PRIMARY KEY CHECK (id = 0), licenses INTEGER NOT NULL);
INSERT INTO license_count (id, licenses) SELECT 0, count(*) FROM licenses;
CREATE TRIGGER licenses_counted AFTER INSERT ON licenses
    BEGIN UPDATE license_count SET licenses = licenses + 1 WHERE id = 0; END;
",
    // The canaries, which the directory keeps and publishes as it does the keys.
    super::canaries::SCHEMA,
];

/// Licenses a search passes over at most in one call: a prefix that few labels
/// have answers a short page and a cursor to go on from, never a scan of every license.
pub const SEARCHED_ROWS: u64 = 10_000;
/// Operator keys that may stand at once.
pub const MAX_KEYS: u64 = 100;
/// Audit rows a page of the log passes over at most when two filters are given
/// (one is the range of its index, the other is looked for within it): a page
/// that comes short goes on from the last row passed over.
pub const AUDIT_SCANNED_ROWS: u64 = 10_000;

/// A license as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LicenseRow {
    pub license: String,
    pub label: String,
    pub note: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// A named operator key, never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// Where a page of licenses goes on from: the last license passed over, newest
/// first (by the second it was created in, then the order it was filed in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LicenseCursor {
    pub created_at: u64,
    pub seq: u64,
}

impl LicenseCursor {
    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at, self.seq)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (at, seq) = text.split_once('.')?;
        let exact = |n: u64| (n <= MAX_EXACT_INTEGER as u64).then_some(n);
        Some(Self {
            created_at: exact(at.parse().ok()?)?,
            seq: exact(seq.parse().ok()?)?,
        })
    }
}

/// Where a page of the audit log goes on from: the last row passed over,
/// newest first (by the time of what it records, then the order it was written
/// in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    /// Milliseconds since the epoch.
    pub at: u64,
    pub id: u64,
}

impl AuditCursor {
    pub fn encode(&self) -> String {
        format!("{}.{}", self.at, self.id)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (at, id) = text.split_once('.')?;
        let exact = |n: u64| (n <= MAX_EXACT_INTEGER as u64).then_some(n);
        Some(Self {
            at: exact(at.parse().ok()?)?,
            id: exact(id.parse().ok()?)?,
        })
    }
}

/// A page of the log as one statement: the index whose range it reads, the
/// condition that makes that range, the conditions looked for within it, and
/// their arguments.
struct AuditQuery {
    index: &'static str,
    range: Vec<String>,
    within: Vec<String>,
    args: Vec<Value>,
}

impl AuditQuery {
    /// `filter`'s page after `after`: the most selective filter given (a
    /// license, a key, an action, every change) is the range of its index,
    /// with the time and the cursor; the others are looked for within it.
    fn of(filter: &AuditFilter, after: Option<&AuditCursor>) -> Self {
        let mut query = Self {
            index: "audit_by_when",
            range: Vec::new(),
            within: Vec::new(),
            args: Vec::new(),
        };
        let mut equal = Vec::new();
        if let Some(license) = &filter.license {
            equal.push(("audit_by_target", "target", Value::text(license)));
        }
        if let Some(KeyFilter::Key(id)) = &filter.key {
            equal.push(("audit_by_key", "actor_key", Value::text(id)));
        }
        match filter.kind {
            Some(AuditKind::Action(action)) => {
                equal.push(("audit_by_action", "action", Value::text(action.code())));
            }
            Some(AuditKind::Changes) => {
                equal.push(("audit_by_refusal", "refusal", Value::int(0)));
            }
            None => {}
        }
        if let Some(KeyFilter::AdminToken) = &filter.key {
            // The admin token's rows are changes (its calls are never refused)
            // without a key's id: looked for among the changes.
            equal.push(("audit_by_refusal", "refusal", Value::int(0)));
            query.within.push("actor_key IS NULL".to_owned());
            let name = query.bind(Value::text(ADMIN_TOKEN_NAME));
            query.within.push(format!("actor = {name}"));
        }
        for (n, (index, column, value)) in equal.into_iter().enumerate() {
            let place = query.bind(value);
            let condition = format!("{column} = {place}");
            if n == 0 {
                query.index = index;
                query.range.push(condition);
            } else {
                query.within.push(condition);
            }
        }
        if let Some(from) = filter.from {
            let place = query.bind(Value::int(from));
            query.range.push(format!("at >= {place}"));
        }
        // One end to the range: the cursor, a row before `to` itself, ends it
        // more closely than `to` does.
        match (after, filter.to) {
            (Some(after), _) => {
                let at = query.bind(Value::int(after.at));
                let id = query.bind(Value::int(after.id));
                query.range.push(format!("(at, id) < ({at}, {id})"));
            }
            (None, Some(to)) => {
                let place = query.bind(Value::int(to));
                query.range.push(format!("at < {place}"));
            }
            (None, None) => {}
        }
        query
    }

    fn bind(&mut self, value: Value) -> String {
        self.args.push(value);
        format!("?{}", self.args.len())
    }

    fn conditions(conditions: &[String]) -> String {
        match conditions {
            [] => "1".to_owned(),
            _ => conditions.join(" AND "),
        }
    }

    /// The rows of the page, newest first: at most `limit` and one more, to
    /// know whether the page goes on. Filters looked for within the range
    /// pass over at most `AUDIT_SCANNED_ROWS` of it.
    fn rows(&mut self, limit: u32) -> String {
        let (index, range) = (self.index, Self::conditions(&self.range));
        let newest = "ORDER BY at DESC, id DESC";
        let limit = self.bind(Value::int(u64::from(limit) + 1));
        if self.within.is_empty() {
            return format!(
                "SELECT {AUDIT_COLUMNS} FROM audit INDEXED BY {index} WHERE {range} {newest}
                 LIMIT {limit}"
            );
        }
        let scanned = self.bind(Value::int(AUDIT_SCANNED_ROWS));
        let within = Self::conditions(&self.within);
        format!(
            "SELECT {AUDIT_COLUMNS} FROM (
                SELECT * FROM audit INDEXED BY {index} WHERE {range} {newest} LIMIT {scanned}
             ) WHERE {within} {newest} LIMIT {limit}"
        )
    }

    /// The last row a page that came short passed over, and the one after it:
    /// where the next page goes on, if there is one.
    fn passed_over(&mut self) -> String {
        let (index, range) = (self.index, Self::conditions(&self.range));
        let last = self.bind(Value::int(AUDIT_SCANNED_ROWS - 1));
        format!(
            "SELECT at, id FROM audit INDEXED BY {index} WHERE {range}
             ORDER BY at DESC, id DESC LIMIT 2 OFFSET {last}"
        )
    }
}

const AUDIT_COLUMNS: &str = "id, at, action, actor, client, target, detail, count, actor_key";

fn audit_row_of(row: &Row) -> Result<AuditRow, SqlError> {
    Ok(AuditRow {
        id: row.int(0)?,
        at: Millis(row.int(1)?).unix().to_rfc3339(),
        action: row.text(2)?,
        actor: row.opt_text(3)?,
        client: row.opt_text(4)?,
        target: row.text(5)?,
        detail: row.text(6)?,
        count: row.int(7)?,
        key: row.opt_text(8)?,
    })
}

pub struct Directory<S: Sql> {
    sql: S,
}

const LICENSE_COLUMNS: &str = "id, label, note, created_at, revoked_at, seq";

fn license_of(row: &Row) -> Result<LicenseRow, SqlError> {
    Ok(LicenseRow {
        license: row.text(0)?,
        label: row.text(1)?,
        note: row.text(2)?,
        created_at: UnixTime(row.int(3)?).to_rfc3339(),
        revoked_at: row.opt_int(4)?.map(|at| UnixTime(at).to_rfc3339()),
    })
}

fn key_of(row: &Row) -> Result<KeyRow, SqlError> {
    let role = row.text(2)?;
    Ok(KeyRow {
        id: row.text(0)?,
        name: row.text(1)?,
        role: Role::from_code(&role)
            .ok_or_else(|| SqlError(format!("an operator key of role {role:?}")))?,
        created_at: UnixTime(row.int(3)?).to_rfc3339(),
        revoked_at: row.opt_int(4)?.map(|at| UnixTime(at).to_rfc3339()),
    })
}

impl<S: Sql> Directory<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        super::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Files a license; one already filed (taken over twice) is left as it is.
    pub fn add_license(
        &self,
        id: &str,
        (label, note): (&str, &str),
        created_at: UnixTime,
        revoked_at: Option<UnixTime>,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO licenses (id, label, folded, note, created_at, revoked_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Value::text(id),
                Value::text(label),
                Value::text(folded(label)),
                Value::text(note),
                Value::int(created_at.0),
                Value::opt_int(revoked_at.map(|at| at.0)),
            ],
        )?;
        Ok(())
    }

    pub fn license(&self, id: &str) -> Result<Option<LicenseRow>, SqlError> {
        let rows = self.sql.query(
            &format!("SELECT {LICENSE_COLUMNS} FROM licenses WHERE id = ?1"),
            &[Value::text(id)],
        )?;
        rows.first().map(license_of).transpose()
    }

    /// The labels of the licenses named that are filed, as `(license, label)`:
    /// one lookup by the licenses' unique index each.
    pub fn labels(&self, ids: &[String]) -> Result<Vec<(String, String)>, SqlError> {
        let mut labels = Vec::with_capacity(ids.len());
        for id in ids {
            let rows = self.sql.query(
                "SELECT label FROM licenses WHERE id = ?1",
                &[Value::text(id)],
            )?;
            if let Some(row) = rows.first() {
                labels.push((id.clone(), row.text(0)?));
            }
        }
        Ok(labels)
    }

    /// Sets what is given of a license's label and note; `None` when there is no such license.
    pub fn relabel(
        &self,
        id: &str,
        label: Option<&str>,
        note: Option<&str>,
    ) -> Result<Option<LicenseRow>, SqlError> {
        self.sql.execute(
            "UPDATE licenses SET label = coalesce(?2, label), folded = coalesce(?3, folded),
             note = coalesce(?4, note) WHERE id = ?1",
            &[
                Value::text(id),
                Value::opt_text(label),
                Value::opt_text(label.map(folded).as_deref()),
                Value::opt_text(note),
            ],
        )?;
        self.license(id)
    }

    /// Marks a license revoked; the first time counts.
    pub fn mark_revoked(&self, id: &str, at: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE licenses SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1",
            &[Value::text(id), Value::int(at.0)],
        )?;
        Ok(())
    }

    /// Up to `limit` licenses newest first after `after`, those whose label starts
    /// with `prefix` (case-insensitive) when one is given, and where the next page
    /// begins. A search passes over at most `SEARCHED_ROWS` licenses: when it
    /// stops short, the cursor goes on from the last it passed over.
    pub fn licenses(
        &self,
        prefix: Option<&str>,
        after: Option<&LicenseCursor>,
        limit: u32,
    ) -> Result<(Vec<LicenseRow>, Option<LicenseCursor>), SqlError> {
        let (at, seq) = after.map_or((MAX_EXACT_INTEGER as u64, 0), |c| (c.created_at, c.seq));
        let before = "(created_at < ?1 OR (created_at = ?1 AND seq < ?2))";
        let newest = "ORDER BY created_at DESC, seq DESC";
        let prefix = prefix.map(folded).filter(|p| !p.is_empty());
        let Some(prefix) = prefix else {
            let rows = self.sql.query(
                &format!("SELECT {LICENSE_COLUMNS} FROM licenses WHERE {before} {newest} LIMIT ?3"),
                &[
                    Value::int(at),
                    Value::int(seq),
                    Value::int(u64::from(limit) + 1),
                ],
            )?;
            return page_of(rows, limit);
        };
        let rows = self.sql.query(
            &format!(
                "SELECT {LICENSE_COLUMNS} FROM (
                    SELECT * FROM licenses WHERE {before} {newest} LIMIT ?5
                 ) WHERE substr(folded, 1, ?3) = ?4 {newest} LIMIT ?6"
            ),
            &[
                Value::int(at),
                Value::int(seq),
                Value::int(prefix.chars().count() as u64),
                Value::text(prefix),
                Value::int(SEARCHED_ROWS),
                Value::int(u64::from(limit) + 1),
            ],
        )?;
        let (found, next) = page_of(rows, limit)?;
        if next.is_some() {
            return Ok((found, next));
        }
        // The page is not full: it goes on from the last license passed over, if
        // the search stopped before the oldest.
        let last = self.sql.query(
            &format!(
                "SELECT created_at, seq FROM licenses WHERE {before} {newest} LIMIT 1 OFFSET ?3"
            ),
            &[
                Value::int(at),
                Value::int(seq),
                Value::int(SEARCHED_ROWS - 1),
            ],
        )?;
        let next = match last.first() {
            Some(row) if self.any_before(row)? => Some(LicenseCursor {
                created_at: row.int(0)?,
                seq: row.int(1)?,
            }),
            _ => None,
        };
        Ok((found, next))
    }

    fn any_before(&self, row: &Row) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query(
                "SELECT 1 FROM licenses WHERE created_at < ?1 OR (created_at = ?1 AND seq < ?2) LIMIT 1",
                &[Value::int(row.int(0)?), Value::int(row.int(1)?)],
            )?
            .is_empty())
    }

    /// How many licenses were made: one row read, whatever their number.
    pub fn count(&self) -> Result<u64, SqlError> {
        let rows = self
            .sql
            .query("SELECT licenses FROM license_count WHERE id = 0", &[])?;
        rows.first().map_or(Ok(0), |row| row.int(0))
    }

    /// Where taking over the licenses kept before this object stands: `None` when
    /// done, else the cursor of the next page (`Some(None)` at the start).
    pub fn takeover(&self) -> Result<Option<Option<String>>, SqlError> {
        let rows = self
            .sql
            .query("SELECT cursor, done FROM takeover WHERE id = 0", &[])?;
        Ok(match rows.first() {
            None => Some(None),
            Some(row) if row.int(1)? == 1 => None,
            Some(row) => Some(row.opt_text(0)?),
        })
    }

    /// Records how far the takeover went: the next page's cursor, or done.
    pub fn took_over(&self, next: Option<&str>) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO takeover (id, cursor, done) VALUES (0, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET cursor = excluded.cursor, done = excluded.done",
            &[Value::opt_text(next), Value::int(u64::from(next.is_none()))],
        )?;
        Ok(())
    }

    /// Takes over from the first page again.
    pub fn restart_takeover(&self) -> Result<(), SqlError> {
        self.sql.execute("DELETE FROM takeover", &[])?;
        Ok(())
    }

    pub fn active_keys(&self) -> Result<u64, SqlError> {
        let rows = self.sql.query(
            "SELECT count(*) FROM operator_keys WHERE revoked_at IS NULL",
            &[],
        )?;
        rows.first().map_or(Ok(0), |row| row.int(0))
    }

    pub fn add_key(
        &self,
        (id, name, role): (&str, &str, Role),
        digest: &str,
        at: UnixTime,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO operator_keys (id, name, role, digest, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                Value::text(id),
                Value::text(name),
                Value::text(role.code()),
                Value::text(digest),
                Value::int(at.0),
            ],
        )?;
        Ok(())
    }

    /// The caller a key's digest names, while its key stands.
    pub fn actor(&self, digest: &str) -> Result<Option<Actor>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys
             WHERE digest = ?1 AND revoked_at IS NULL",
            &[Value::text(digest)],
        )?;
        rows.first()
            .map(|row| {
                let key = key_of(row)?;
                Ok(Actor::Key {
                    id: key.id,
                    name: key.name,
                    role: key.role,
                })
            })
            .transpose()
    }

    /// The key a digest names, standing or revoked: who a refused call was.
    pub fn named(&self, digest: &str) -> Result<Option<KeyRow>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys WHERE digest = ?1",
            &[Value::text(digest)],
        )?;
        rows.first().map(key_of).transpose()
    }

    /// The operator keys: every standing one (at most `MAX_KEYS`), then the most
    /// recently created revoked ones, up to `MAX_KEYS` of them.
    pub fn keys(&self) -> Result<Vec<KeyRow>, SqlError> {
        let rows = self.sql.query(
            "SELECT id, name, role, created_at, revoked_at FROM operator_keys
             ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC LIMIT ?1",
            &[Value::int(2 * MAX_KEYS)],
        )?;
        rows.iter().map(key_of).collect()
    }

    /// The keys every isolate checks (`KnownKeys`, published in KV): each
    /// standing key, and the `MAX_REVOKED_KNOWN` revoked last, so that their
    /// refusals are recorded under their names.
    pub fn known_keys(&self) -> Result<KnownKeys, SqlError> {
        let rows = self.sql.query(
            "SELECT digest, id, name, role, revoked_at IS NOT NULL FROM operator_keys
             WHERE revoked_at IS NULL OR id IN (
                SELECT id FROM operator_keys WHERE revoked_at IS NOT NULL
                ORDER BY revoked_at DESC LIMIT ?1
             )",
            &[Value::int(MAX_REVOKED_KNOWN)],
        )?;
        let mut known = KnownKeys::default();
        for row in &rows {
            let role = row.text(3)?;
            let key = KnownKey {
                id: row.text(1)?,
                name: row.text(2)?,
                role: Role::from_code(&role)
                    .ok_or_else(|| SqlError(format!("an operator key of role {role:?}")))?,
                revoked: row.int(4)? == 1,
            };
            known.keys.insert(row.text(0)?, key);
        }
        Ok(known)
    }

    /// Revokes a key; its name, or `None` when no standing key has this id.
    pub fn revoke_key(&self, id: &str, at: UnixTime) -> Result<Option<String>, SqlError> {
        let rows = self.sql.query(
            "UPDATE operator_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL
             RETURNING name",
            &[Value::text(id), Value::int(at.0)],
        )?;
        rows.first().map(|row| row.text(0)).transpose()
    }

    /// Writes an audit row, and lets go of those past the log's bounds: a year,
    /// and `MAX_ROWS` of its kind (refusals and changes are counted apart, each
    /// row numbered `n` within its kind). A refusal of the call the last refusal
    /// was recorded for, from the same address within a minute, counts on its row.
    pub fn record(&self, record: &Record, at: Millis) -> Result<(), SqlError> {
        self.record_counted(record, at, 1)
    }

    /// `record`, for what happened `count` times (the refusals an isolate counted).
    pub fn record_counted(&self, record: &Record, at: Millis, count: u64) -> Result<(), SqlError> {
        let refusal = u64::from(record.action == Action::Refused);
        let merged = refusal == 1
            && self.sql.execute(
                "UPDATE audit INDEXED BY audit_by_kind SET count = count + ?6
                 WHERE refusal = 1 AND n = (SELECT max(n) FROM audit INDEXED BY audit_by_kind WHERE refusal = 1)
                   AND at >= ?1 AND target = ?2 AND detail = ?3 AND client IS ?4
                   AND actor_key IS ?5",
                &[
                    Value::int(at.0.saturating_sub(REFUSALS_MERGED_SECONDS * 1000)),
                    Value::text(record.target.as_str()),
                    Value::text(record.detail.as_str()),
                    Value::opt_text(record.by.client.as_deref()),
                    Value::opt_text(record.by.key.as_deref()),
                    Value::int(count),
                ],
            )? == 1;
        if merged {
            return Ok(());
        }
        let rows = self.sql.query(
            "INSERT INTO audit (at, action, actor, actor_key, client, target, detail, refusal, n, count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,
                     coalesce((SELECT max(n) FROM audit INDEXED BY audit_by_kind WHERE refusal = ?8), 0) + 1, ?9)
             RETURNING n",
            &[
                Value::int(at.0),
                Value::text(record.action.code()),
                Value::opt_text(record.by.actor.as_deref()),
                Value::opt_text(record.by.key.as_deref()),
                Value::opt_text(record.by.client.as_deref()),
                Value::text(record.target.as_str()),
                Value::text(record.detail.as_str()),
                Value::int(refusal),
                Value::int(count),
            ],
        )?;
        let n = rows.first().map_or(Ok(0), |row| row.int(0))?;
        self.sql.execute(
            // By (refusal, n): the filters' index on (refusal, at, id) would make
            // each row's bookkeeping a scan of its kind.
            "DELETE FROM audit INDEXED BY audit_by_kind WHERE refusal = ?1 AND n <= ?2",
            &[Value::int(refusal), Value::int(n.saturating_sub(MAX_ROWS))],
        )?;
        self.forget_before(at)
    }

    /// Writes a row another object kept with its change, at the time of the
    /// change, unless this or a later row of that object was written already:
    /// `false` then. The object sends its rows in order and again until they are
    /// taken, so each is written exactly once.
    pub fn record_forwarded(&self, row: &Forwarded) -> Result<bool, SqlError> {
        let written = self.sql.query(
            "SELECT seq FROM forwarded WHERE source = ?1",
            &[Value::text(row.from.as_str())],
        )?;
        let last = written.first().map(|last| last.int(0)).transpose()?;
        if last.is_some_and(|last| row.seq <= last) {
            return Ok(false);
        }
        self.record(&row.record, Millis(row.at))?;
        self.sql.execute(
            "INSERT INTO forwarded (source, seq) VALUES (?1, ?2)
             ON CONFLICT (source) DO UPDATE SET seq = excluded.seq",
            &[Value::text(row.from.as_str()), Value::int(row.seq)],
        )?;
        Ok(true)
    }

    /// Lets go of the rows older than a year.
    fn forget_before(&self, now: Millis) -> Result<(), SqlError> {
        let year_ago = now.0.saturating_sub(RETENTION_DAYS * 86_400_000);
        self.sql
            .execute("DELETE FROM audit WHERE at < ?1", &[Value::int(year_ago)])?;
        Ok(())
    }

    /// Up to `limit` audit rows that `filter` lets through, newest first (by
    /// the time of what each records, then the order it was written in), after
    /// `after`; and where the next page goes on, if it does. Each filter is a
    /// range of an index (`AuditQuery`); with two or more, a page passes over
    /// at most `AUDIT_SCANNED_ROWS` rows, and one that came short goes on from
    /// the last it passed over.
    pub fn audit(
        &self,
        filter: &AuditFilter,
        after: Option<&AuditCursor>,
        limit: u32,
        now: Millis,
    ) -> Result<(Vec<AuditRow>, Option<AuditCursor>), SqlError> {
        // A log no one writes to still shows nothing older than its bound.
        self.forget_before(now)?;
        let limit = limit.max(1);
        let mut query = AuditQuery::of(filter, after);
        let statement = query.rows(limit);
        let rows = self.sql.query(&statement, &query.args)?;
        let cursor = |row: &Row| -> Result<AuditCursor, SqlError> {
            Ok(AuditCursor {
                at: row.int(1)?,
                id: row.int(0)?,
            })
        };
        if rows.len() > limit as usize {
            let page = rows[..limit as usize]
                .iter()
                .map(audit_row_of)
                .collect::<Result<Vec<_>, _>>()?;
            let next = cursor(&rows[limit as usize - 1])?;
            return Ok((page, Some(next)));
        }
        let page = rows
            .iter()
            .map(audit_row_of)
            .collect::<Result<Vec<_>, _>>()?;
        if query.within.is_empty() {
            return Ok((page, None));
        }
        // The page came short: it goes on from the last row passed over, when
        // the range holds more.
        let mut query = AuditQuery::of(filter, after);
        let statement = query.passed_over();
        let passed = self.sql.query(&statement, &query.args)?;
        let next = match passed.as_slice() {
            [last, _] => Some(AuditCursor {
                at: last.int(0)?,
                id: last.int(1)?,
            }),
            _ => None,
        };
        Ok((page, next))
    }
}

fn page_of(
    rows: Vec<Row>,
    limit: u32,
) -> Result<(Vec<LicenseRow>, Option<LicenseCursor>), SqlError> {
    let more = rows.len() > limit as usize;
    let mut next = None;
    let mut licenses = Vec::with_capacity(rows.len().min(limit as usize));
    for row in rows.iter().take(limit as usize) {
        licenses.push(license_of(row)?);
        next = Some(LicenseCursor {
            created_at: row.int(3)?,
            seq: row.int(5)?,
        });
    }
    Ok((licenses, next.filter(|_| more)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::audit::Stamp;
    use crate::store::sql::native::NativeSql;

    /// The log unfiltered.
    const EVERYTHING: AuditFilter = AuditFilter {
        kind: None,
        key: None,
        license: None,
        from: None,
        to: None,
    };

    fn directory() -> Directory<NativeSql> {
        let directory = Directory::new(NativeSql::new());
        directory.migrate().unwrap();
        directory
    }

    fn id(n: u64) -> String {
        format!("lic_{n:024x}")
    }

    fn labels(page: &[LicenseRow]) -> Vec<&str> {
        page.iter().map(|row| row.label.as_str()).collect()
    }

    #[test]
    fn a_label_prefix_finds_licenses_case_insensitively_newest_first_a_page_at_a_time() {
        let directory = directory();
        for (n, label) in ["Acme GmbH", "acme corp", "Beta", "ACME Labs", "Äcme", ""]
            .iter()
            .enumerate()
        {
            directory
                .add_license(
                    &id(n as u64),
                    (label, ""),
                    UnixTime(100 + n as u64 / 2),
                    None,
                )
                .unwrap();
        }
        let (page, next) = directory.licenses(Some("aCmE"), None, 2).unwrap();
        assert_eq!(labels(&page), ["ACME Labs", "acme corp"]);
        let (rest, end) = directory.licenses(Some("acme"), next.as_ref(), 2).unwrap();
        assert_eq!((labels(&rest), end), (vec!["Acme GmbH"], None));
        assert_eq!(
            labels(&directory.licenses(Some("äC"), None, 10).unwrap().0),
            ["Äcme"]
        );
        let (all, _) = directory.licenses(None, None, 10).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(
            all[0].license,
            id(5),
            "newest first, the later id first within a second"
        );
        assert_eq!(directory.count().unwrap(), 6);
        let cursor = LicenseCursor::decode(&next.unwrap().encode()).unwrap();
        assert_eq!(
            directory
                .licenses(Some("acme"), Some(&cursor), 2)
                .unwrap()
                .0,
            rest
        );
        assert_eq!(LicenseCursor::decode("1.lic_../x"), None);
        assert_eq!(LicenseCursor::decode("1"), None);
        assert_eq!(
            LicenseCursor::decode("9007199254740992.1"),
            None,
            "past what storage holds exactly"
        );
    }

    #[test]
    fn a_search_passes_over_a_bounded_number_of_licenses_and_goes_on_from_there() {
        let directory = directory();
        let total = SEARCHED_ROWS + 5;
        for n in 0..total {
            let label = if n == 0 { "rare" } else { "common" };
            directory
                .add_license(&id(n), (label, ""), UnixTime(n), None)
                .unwrap();
        }
        let (found, next) = directory.licenses(Some("rare"), None, 10).unwrap();
        assert!(
            found.is_empty(),
            "the one match is past the first searched rows"
        );
        let next = next.expect("the search goes on");
        assert_eq!(next.created_at, total - SEARCHED_ROWS);
        let (found, end) = directory.licenses(Some("rare"), Some(&next), 10).unwrap();
        assert_eq!((labels(&found), end), (vec!["rare"], None));
    }

    #[test]
    fn labels_and_notes_change_as_given_and_a_revocation_keeps_its_first_time() {
        let directory = directory();
        directory
            .add_license(&id(1), ("Old", "n"), UnixTime(5), None)
            .unwrap();
        let row = directory
            .relabel(&id(1), Some("New"), None)
            .unwrap()
            .unwrap();
        assert_eq!((row.label.as_str(), row.note.as_str()), ("New", "n"));
        assert_eq!(
            labels(&directory.licenses(Some("new"), None, 5).unwrap().0),
            ["New"]
        );
        assert_eq!(directory.relabel(&id(2), Some("x"), None).unwrap(), None);
        directory.mark_revoked(&id(1), UnixTime(7)).unwrap();
        directory.mark_revoked(&id(1), UnixTime(9)).unwrap();
        assert_eq!(
            directory.license(&id(1)).unwrap().unwrap().revoked_at,
            Some(UnixTime(7).to_rfc3339())
        );
        directory
            .add_license(&id(1), ("again", ""), UnixTime(8), None)
            .unwrap();
        assert_eq!(
            directory.license(&id(1)).unwrap().unwrap().label,
            "New",
            "taken over once"
        );
    }

    #[test]
    fn a_revoked_key_names_no_one_from_the_next_call() {
        let directory = directory();
        directory
            .add_key(("key_1", "alice", Role::Read), "d1", UnixTime(1))
            .unwrap();
        let alice = directory.actor("d1").unwrap().unwrap();
        assert_eq!(alice.name(), "alice");
        assert_eq!(directory.active_keys().unwrap(), 1);
        assert_eq!(
            directory.revoke_key("key_1", UnixTime(2)).unwrap(),
            Some("alice".into())
        );
        assert_eq!(directory.actor("d1").unwrap(), None);
        assert_eq!(directory.revoke_key("key_1", UnixTime(3)).unwrap(), None);
        assert_eq!(directory.active_keys().unwrap(), 0);
        assert_eq!(
            directory.keys().unwrap()[0].revoked_at,
            Some(UnixTime(2).to_rfc3339())
        );
    }

    #[test]
    fn the_keys_published_are_the_standing_ones_and_the_last_revoked() {
        let directory = directory();
        let most = MAX_REVOKED_KNOWN;
        for n in 0..most + 2 {
            let id = format!("key_{n}");
            let digest = format!("d{n}");
            directory
                .add_key((id.as_str(), "k", Role::Admin), &digest, UnixTime(n))
                .unwrap();
        }
        for n in 0..most + 1 {
            let id = format!("key_{n}");
            directory.revoke_key(&id, UnixTime(1_000 + n)).unwrap();
        }
        let known = directory.known_keys().unwrap();
        assert_eq!(
            known.keys.len() as u64,
            most + 1,
            "one standing, {most} revoked"
        );
        let standing = format!("d{}", most + 1);
        assert!(known.caller(&standing).is_ok());
        assert_eq!(
            known.caller("d0"),
            Err(None),
            "revoked first, and forgotten"
        );
        assert!(matches!(known.caller("d1"), Err(Some(key)) if key.revoked));
    }

    #[test]
    fn refusals_counted_elsewhere_add_their_count_to_the_row() {
        let directory = directory();
        directory
            .record_counted(&refusal("203.0.113.1"), Millis(1_000), 40)
            .unwrap();
        directory
            .record_counted(&refusal("203.0.113.1"), Millis(20_000), 2)
            .unwrap();
        directory
            .record_counted(&refusal("203.0.113.2"), Millis(20_000), 5)
            .unwrap();
        let (rows, _) = directory
            .audit(&EVERYTHING, None, 10, Millis(30_000))
            .unwrap();
        let counts: Vec<u64> = rows.iter().map(|row| row.count).collect();
        assert_eq!(counts, [5, 42]);
    }

    fn refusal(client: &str) -> Record {
        Record {
            action: Action::Refused,
            target: "GET /admin/status".into(),
            detail: "401".into(),
            by: Stamp {
                actor: None,
                key: None,
                client: Some(client.into()),
            },
        }
    }

    fn forwarded(seq: u64, detail: &str) -> Forwarded {
        let mut record = refusal("203.0.113.1");
        record.action = Action::ListEdited;
        record.target = "global list".into();
        record.detail = detail.into();
        Forwarded {
            from: "lists".into(),
            seq,
            at: 5_000 + seq,
            record,
        }
    }

    #[test]
    fn a_forwarded_row_is_written_once_at_its_changes_time_and_none_older_than_the_last() {
        let directory = directory();
        assert!(directory.record_forwarded(&forwarded(1, "one")).unwrap());
        assert!(!directory.record_forwarded(&forwarded(1, "one")).unwrap());
        assert!(directory.record_forwarded(&forwarded(3, "three")).unwrap());
        assert!(
            !directory.record_forwarded(&forwarded(2, "two")).unwrap(),
            "sent in order, so an older one was written already"
        );
        let mut other = forwarded(1, "another object's");
        other.from = "elsewhere".into();
        assert!(directory.record_forwarded(&other).unwrap());
        let (rows, _) = directory
            .audit(&EVERYTHING, None, 10, Millis(10_000))
            .unwrap();
        let written: Vec<(&str, &str)> = rows
            .iter()
            .map(|row| (row.detail.as_str(), row.at.as_str()))
            .collect();
        let at = |ms: u64| Millis(ms).unix().to_rfc3339();
        // Listed by the time of their changes, a row that came late among them.
        assert_eq!(
            written,
            [
                ("three", at(5_003).as_str()),
                ("another object's", at(5_001).as_str()),
                ("one", at(5_001).as_str()),
            ]
        );
    }

    #[test]
    fn a_directory_from_the_step_before_takes_forwarded_rows_after_its_upgrade() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..1]).unwrap();
        directory
            .add_license(&id(1), ("Acme", ""), UnixTime(1), None)
            .unwrap();
        directory.migrate().unwrap();
        assert_eq!(directory.license(&id(1)).unwrap().unwrap().label, "Acme");
        assert!(directory.record_forwarded(&forwarded(1, "one")).unwrap());
        assert!(!directory.record_forwarded(&forwarded(1, "one")).unwrap());
    }

    #[test]
    fn a_directory_from_before_the_count_counts_its_licenses_in_one_row() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..3]).unwrap();
        for n in 1..=3 {
            let at = UnixTime(n);
            directory
                .add_license(&id(n), ("Acme", ""), at, None)
                .unwrap();
        }
        directory.migrate().unwrap();
        assert_eq!(directory.count().unwrap(), 3);
        directory
            .add_license(&id(4), ("Acme", ""), UnixTime(4), None)
            .unwrap();
        // The same license again changes nothing, and counts nothing.
        directory
            .add_license(&id(4), ("Acme", ""), UnixTime(5), None)
            .unwrap();
        assert_eq!(directory.count().unwrap(), 4);
        // The number is the counter's, read as one row, not a count of the licenses.
        directory
            .sql
            .execute("UPDATE license_count SET licenses = 1000 WHERE id = 0", &[])
            .unwrap();
        assert_eq!(directory.count().unwrap(), 1000);
    }

    #[test]
    fn refusals_of_one_call_from_one_address_within_a_minute_are_one_counted_row() {
        let directory = directory();
        for (client, at) in [
            ("203.0.113.1", 1_000),
            ("203.0.113.1", 60_999),
            ("203.0.113.2", 61_000),
            ("203.0.113.1", 62_000),
            ("203.0.113.1", 200_000),
        ] {
            directory.record(&refusal(client), Millis(at)).unwrap();
        }
        let (rows, next) = directory
            .audit(&EVERYTHING, None, 10, Millis(200_000))
            .unwrap();
        let counts: Vec<u64> = rows.iter().map(|row| row.count).collect();
        assert_eq!((counts, next), (vec![1, 1, 1, 2], None));
    }

    #[test]
    fn the_log_keeps_a_year_and_at_most_its_rows_of_each_kind_and_pages_newest_first() {
        let directory = directory();
        let day = 86_400_000;
        let mut created = refusal("x");
        created.action = Action::LicenseCreated;
        directory.record(&created, Millis(day)).unwrap();
        let later = Millis(day * (RETENTION_DAYS + 1) + 1);
        assert_eq!(
            directory
                .audit(&EVERYTHING, None, 10, later)
                .unwrap()
                .0
                .len(),
            0,
            "a year on, even unwritten"
        );
        directory.record(&created, later).unwrap();
        let (rows, _) = directory.audit(&EVERYTHING, None, 10, later).unwrap();
        assert_eq!(rows.len(), 1, "the row of a year before went");
        // A flood of refusals, each of another call, one more than the log keeps
        // of a kind, as production records them: they push out refusals only.
        let most = MAX_ROWS;
        let start = later.0 + 1;
        for n in 0..most + 1 {
            let mut flood = refusal("203.0.113.9");
            flood.target = format!("GET /admin/x{n}");
            directory.record(&flood, Millis(start + n)).unwrap();
        }
        let now = Millis(start + most + 1);
        let count = |refusal: u64| {
            directory
                .sql
                .query(
                    "SELECT count(*) FROM audit WHERE refusal = ?1",
                    &[Value::int(refusal)],
                )
                .unwrap()[0]
                .int(0)
                .unwrap()
        };
        assert_eq!((count(0), count(1)), (1, most), "the change stands");
        for n in 0..most {
            directory.record(&created, Millis(now.0 + n)).unwrap();
        }
        assert_eq!((count(0), count(1)), (most, most));
        let (first, next) = directory.audit(&EVERYTHING, None, 3, now).unwrap();
        let newest = first[0].id;
        let (second, _) = directory.audit(&EVERYTHING, next.as_ref(), 3, now).unwrap();
        assert_eq!(second[0].id, newest - 3);
        assert!(first
            .iter()
            .chain(&second)
            .all(|row| row.action == "license.created"));
    }

    /// A change at `at` milliseconds, its detail the time, by a key or the admin token.
    fn change_at(action: Action, target: &str, key: Option<&str>, at: u64) -> (Record, Millis) {
        let record = Record {
            action,
            target: target.into(),
            detail: at.to_string(),
            by: Stamp {
                actor: Some(key.map_or(ADMIN_TOKEN_NAME, |_| "alice").into()),
                key: key.map(str::to_owned),
                client: Some("203.0.113.1".into()),
            },
        };
        (record, Millis(at))
    }

    const ALICE: &str = "key_00000000000000a1";
    const L1: &str = "lic_000000000000000000000001";

    /// A log of each kind of row, by alice's key and the admin token, on two licenses.
    fn filed_log(directory: &Directory<NativeSql>) {
        let refused = Record {
            action: Action::Refused,
            target: "GET /admin/status".into(),
            detail: "3000".into(),
            by: Stamp {
                actor: Some("alice".into()),
                key: Some(ALICE.into()),
                client: Some("203.0.113.1".into()),
            },
        };
        let rows = [
            change_at(Action::LicenseCreated, L1, None, 1_000),
            change_at(Action::LicenseLabelled, L1, Some(ALICE), 2_000),
            (refused, Millis(3_000)),
            change_at(Action::KeyCreated, "key_00000000000000b2", None, 4_000),
            change_at(
                Action::LicenseRevoked,
                "lic_000000000000000000000002",
                Some(ALICE),
                5_000,
            ),
            change_at(Action::ListEdited, "global list", Some(ALICE), 6_000),
        ];
        for (record, at) in &rows {
            directory.record(record, *at).unwrap();
        }
    }

    /// The details (each row's time) of a page, and where the next goes on.
    fn page(
        directory: &Directory<NativeSql>,
        filter: &AuditFilter,
        after: Option<&AuditCursor>,
        limit: u32,
    ) -> (Vec<String>, Option<AuditCursor>) {
        let (rows, next) = directory
            .audit(filter, after, limit, Millis(10_000))
            .unwrap();
        (rows.into_iter().map(|row| row.detail).collect(), next)
    }

    fn filter(kind: Option<&str>, key: Option<&str>, license: Option<&str>) -> AuditFilter {
        AuditFilter::parse(kind, key, license, (None, None)).unwrap()
    }

    #[test]
    fn the_log_is_filtered_by_kind_key_license_and_time_newest_first_a_page_at_a_time() {
        let directory = directory();
        filed_log(&directory);
        let shown = |filter: AuditFilter| page(&directory, &filter, None, 10).0;
        assert_eq!(
            shown(filter(Some("changes"), None, None)),
            ["6000", "5000", "4000", "2000", "1000"]
        );
        assert_eq!(shown(filter(Some("refused"), None, None)), ["3000"]);
        assert_eq!(shown(filter(Some("license.revoked"), None, None)), ["5000"]);
        assert_eq!(
            shown(filter(None, Some(ALICE), None)),
            ["6000", "5000", "3000", "2000"]
        );
        assert_eq!(
            shown(filter(None, Some("ADMIN_TOKEN"), None)),
            ["4000", "1000"]
        );
        assert_eq!(shown(filter(None, None, Some(L1))), ["2000", "1000"]);
        let between = AuditFilter {
            from: Some(2_000),
            to: Some(5_000),
            ..EVERYTHING
        };
        assert_eq!(shown(between), ["4000", "3000", "2000"]);
        assert_eq!(
            shown(filter(Some("changes"), Some(ALICE), None)),
            ["6000", "5000", "2000"],
            "two filters at once"
        );
        // A page at a time, each going on from the last.
        let changes = filter(Some("changes"), None, None);
        let (first, next) = page(&directory, &changes, None, 2);
        assert_eq!(first, ["6000", "5000"]);
        let next = AuditCursor::decode(&next.unwrap().encode()).unwrap();
        let (second, next) = page(&directory, &changes, Some(&next), 2);
        assert_eq!(second, ["4000", "2000"]);
        let (third, end) = page(&directory, &changes, next.as_ref(), 2);
        assert_eq!((third, end), (vec!["1000".to_owned()], None));
        assert_eq!(AuditCursor::decode("1.x"), None);
        assert_eq!(AuditCursor::decode("9007199254740992.1"), None);
    }

    #[test]
    fn each_filter_reads_a_range_of_its_own_index_newest_first() {
        let directory = directory();
        filed_log(&directory);
        let after = AuditCursor { at: 5_500, id: 9 };
        let timed = AuditFilter {
            from: Some(1_500),
            to: Some(5_500),
            ..EVERYTHING
        };
        for (filter, index) in [
            (EVERYTHING, "audit_by_when"),
            (timed, "audit_by_when"),
            (filter(Some("changes"), None, None), "audit_by_refusal"),
            (filter(Some("refused"), None, None), "audit_by_action"),
            (filter(None, Some(ALICE), None), "audit_by_key"),
            (filter(None, Some("ADMIN_TOKEN"), None), "audit_by_refusal"),
            (filter(None, None, Some(L1)), "audit_by_target"),
            (
                filter(Some("changes"), Some(ALICE), Some(L1)),
                "audit_by_target",
            ),
        ] {
            for cursor in [None, Some(&after)] {
                let mut query = AuditQuery::of(&filter, cursor);
                let plan = directory.sql.plan(&query.rows(10), &query.args);
                assert!(plan.contains(index), "{filter:?}: {plan}");
                if query.within.is_empty() {
                    assert!(!plan.contains("TEMP B-TREE"), "{filter:?}: {plan}");
                }
                if filter != EVERYTHING {
                    assert!(
                        plan.contains("SEARCH"),
                        "a range, not a scan: {filter:?}: {plan}"
                    );
                }
                // And it answers: every row it shows is one the filter lets through.
                assert!(directory.audit(&filter, cursor, 10, Millis(10_000)).is_ok());
            }
        }
    }

    #[test]
    fn a_page_of_two_filters_passes_over_a_bounded_number_of_rows_and_goes_on_from_there() {
        let directory = directory();
        let (change, at) = change_at(Action::ListEdited, "global list", Some(ALICE), 1);
        directory.record(&change, at).unwrap();
        for n in 0..AUDIT_SCANNED_ROWS + 5 {
            let mut refused = change.clone();
            refused.action = Action::Refused;
            refused.target = format!("GET /admin/x{n}");
            directory.record(&refused, Millis(2 + n)).unwrap();
        }
        let mine = filter(Some("changes"), Some(ALICE), None);
        let (found, next) = page(&directory, &mine, None, 10);
        assert!(
            found.is_empty(),
            "the one change is past the rows passed over"
        );
        let next = next.expect("the page goes on");
        assert_eq!(next.at, 2 + 5, "from the last row passed over");
        let (found, end) = page(&directory, &mine, Some(&next), 10);
        assert_eq!((found, end), (vec!["1".to_owned()], None));
    }

    #[test]
    fn a_directory_of_the_step_before_filters_its_log_once_upgraded() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..2]).unwrap();
        filed_log(&directory);
        directory.migrate().unwrap();
        let shown = page(&directory, &filter(None, None, Some(L1)), None, 10).0;
        assert_eq!(shown, ["2000", "1000"]);
        let indexes = directory
            .sql
            .query(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'audit_by_%'",
                &[],
            )
            .unwrap()[0]
            .int(0)
            .unwrap();
        assert_eq!(
            indexes, 6,
            "by kind (for the bound), time, action, key, target, refusal"
        );
    }
}
