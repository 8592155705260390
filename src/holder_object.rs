//! The Durable Object that owns one license holder's personal list. The runtime
//! runs one request at a time per object, and `apply` never awaits, so the
//! read-check-write of an add or remove cannot interleave with another; its
//! writes commit together, before the answer leaves.

use serde::Deserialize;
use worker::{durable_object, Date, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue, State};

use crate::config;
use crate::domain::holder::{apply, DailyUsage, Limits, ListStore, Operation, UnixTime};
use crate::domain::ipv4::PublicIpv4;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS entries (ip INTEGER PRIMARY KEY, added_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS usage (
        id INTEGER PRIMARY KEY CHECK (id = 0), day INTEGER NOT NULL, added INTEGER NOT NULL, removed INTEGER NOT NULL
    );";

#[durable_object]
pub struct HolderList {
    sql: SqlStorage,
    /// The limits once the schema exists; a configuration or storage fault otherwise,
    /// answered as a 500 on every request rather than a panic at start.
    ready: std::result::Result<Limits, String>,
}

impl DurableObject for HolderList {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        let ready = sql.exec(SCHEMA, None).map_err(|e| format!("schema: {e}")).and_then(|_| {
            Limits::from_config(config::var(&env, "DAILY_ADDITIONS").as_deref(), config::var(&env, "DAILY_REMOVALS").as_deref())
        });
        Self { sql, ready }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let path = req.path();
        let mut segments = path.trim_start_matches('/').splitn(2, '/');
        let operation = segments.next().and_then(Operation::from_name);
        let ip = segments.next().and_then(|s| PublicIpv4::parse(s).ok());
        let (Some(operation), Some(ip)) = (operation, ip) else {
            return Response::error(format!("not an operation: {path}"), 400);
        };
        let limits = match &self.ready {
            Ok(limits) => *limits,
            Err(problem) => return Response::error(problem.clone(), 500),
        };
        let mut store = SqlListStore { sql: &self.sql };
        let now = UnixTime(Date::now().as_millis() / 1000);
        Response::ok(apply(&mut store, operation, ip, now, limits)?.code())
    }
}

/// The personal list in the object's SQLite database. An address is stored as its
/// 32-bit integer value, the primary key, so a lookup is one index probe.
struct SqlListStore<'a> {
    sql: &'a SqlStorage,
}

fn ip_value(ip: PublicIpv4) -> SqlStorageValue {
    SqlStorageValue::Integer(ip.to_u32().into())
}

#[derive(Deserialize)]
struct UsageRow {
    day: u64,
    added: u32,
    removed: u32,
}

impl ListStore for SqlListStore<'_> {
    type Error = worker::Error;

    fn contains(&self, ip: PublicIpv4) -> Result<bool> {
        Ok(self.sql.exec("SELECT 1 FROM entries WHERE ip = ?", vec![ip_value(ip)])?.raw().next().is_some())
    }

    fn insert(&mut self, ip: PublicIpv4, at: UnixTime) -> Result<()> {
        self.sql.exec("INSERT INTO entries (ip, added_at) VALUES (?, ?)", vec![ip_value(ip), SqlStorageValue::Integer(at.0 as i64)])?;
        Ok(())
    }

    fn delete(&mut self, ip: PublicIpv4) -> Result<()> {
        self.sql.exec("DELETE FROM entries WHERE ip = ?", vec![ip_value(ip)])?;
        Ok(())
    }

    fn usage(&self) -> Result<DailyUsage> {
        let rows: Vec<UsageRow> = self.sql.exec("SELECT day, added, removed FROM usage WHERE id = 0", None)?.to_array()?;
        Ok(rows.first().map_or_else(DailyUsage::default, |row| DailyUsage { day: row.day, added: row.added, removed: row.removed }))
    }

    fn save_usage(&mut self, usage: DailyUsage) -> Result<()> {
        self.sql.exec(
            "INSERT INTO usage (id, day, added, removed) VALUES (0, ?, ?, ?)
             ON CONFLICT (id) DO UPDATE SET day = excluded.day, added = excluded.added, removed = excluded.removed",
            vec![
                SqlStorageValue::Integer(usage.day as i64),
                SqlStorageValue::Integer(usage.added.into()),
                SqlStorageValue::Integer(usage.removed.into()),
            ],
        )?;
        Ok(())
    }
}
