//! A Durable Object's SQLite database as the stores see it: a statement, its
//! arguments, its rows. Production runs it on the object's `SqlStorage`; the
//! native tests run the very same statements on a real SQLite (`rusqlite`).

use std::fmt;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::{SqlCursor, SqlStorage, SqlStorageValue, State};

use crate::domain::net::address::Listed;
use crate::platform::meter::{self, Billable};

/// A value bound to a statement or read from a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Integer(i64),
    Text(String),
    Blob(Vec<u8>),
}

/// The largest integer that crosses into JavaScript exactly: the object's storage
/// hands integers to the Worker as JavaScript numbers.
pub const MAX_EXACT_INTEGER: i64 = (1 << 53) - 1;

impl Value {
    pub fn int(value: u64) -> Self {
        Self::Integer(i64::try_from(value).unwrap_or(i64::MAX))
    }

    pub fn text(value: impl Into<String>) -> Self {
        Self::Text(value.into())
    }

    pub fn opt_int(value: Option<u64>) -> Self {
        value.map_or(Self::Null, Self::int)
    }

    pub fn opt_text(value: Option<&str>) -> Self {
        value.map_or(Self::Null, Self::text)
    }

    /// An address or /64 as its row's key (`Listed::key`).
    pub fn listed(ip: Listed) -> Self {
        Self::Blob(ip.key().as_bytes().to_vec())
    }
}

/// A statement the database refused, or a value that is not what the store wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError(pub String);

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One row of a result, read by column position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row(pub Vec<Value>);

impl Row {
    fn value(&self, column: usize) -> Result<&Value, SqlError> {
        self.0
            .get(column)
            .ok_or_else(|| SqlError(format!("no column {column} in {:?}", self.0)))
    }

    pub fn opt_int(&self, column: usize) -> Result<Option<u64>, SqlError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(n) => u64::try_from(*n)
                .map(Some)
                .map_err(|_| SqlError(format!("column {column}: negative {n}"))),
            other => Err(SqlError(format!(
                "column {column}: expected an integer, found {other:?}"
            ))),
        }
    }

    pub fn int(&self, column: usize) -> Result<u64, SqlError> {
        self.opt_int(column)?
            .ok_or_else(|| SqlError(format!("column {column}: NULL where an integer belongs")))
    }

    pub fn opt_text(&self, column: usize) -> Result<Option<String>, SqlError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(text) => Ok(Some(text.clone())),
            other => Err(SqlError(format!(
                "column {column}: expected text, found {other:?}"
            ))),
        }
    }

    /// A text column read as what it writes (`FromStr`), when it is not null.
    pub fn opt_parsed<T: std::str::FromStr>(&self, column: usize) -> Result<Option<T>, SqlError>
    where
        T::Err: std::fmt::Debug,
    {
        self.opt_text(column)?
            .map(|text| {
                text.parse()
                    .map_err(|e| SqlError(format!("column {column}: {text:?}: {e:?}")))
            })
            .transpose()
    }

    pub fn text(&self, column: usize) -> Result<String, SqlError> {
        self.opt_text(column)?
            .ok_or_else(|| SqlError(format!("column {column}: NULL where text belongs")))
    }

    pub fn blob(&self, column: usize) -> Result<&[u8], SqlError> {
        self.opt_blob(column)?
            .ok_or_else(|| SqlError(format!("column {column}: NULL where a blob belongs")))
    }

    pub fn opt_blob(&self, column: usize) -> Result<Option<&[u8]>, SqlError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Blob(bytes) => Ok(Some(bytes)),
            other => Err(SqlError(format!(
                "column {column}: expected a blob, found {other:?}"
            ))),
        }
    }
}

/// What the stores need of a database. Every call is synchronous and runs to its
/// end, so a sequence of calls with no `await` between them commits as one write.
pub trait Sql {
    /// Runs one statement with `?n` placeholders and returns every row it yields.
    fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError>;
    /// Runs one statement and returns how many rows it wrote.
    fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError>;
    /// Runs several statements without arguments, such as a schema's.
    fn script(&self, statements: &str) -> Result<(), SqlError>;
}

impl<T: Sql> Sql for &T {
    fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
        (**self).query(statement, args)
    }

    fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError> {
        (**self).execute(statement, args)
    }

    fn script(&self, statements: &str) -> Result<(), SqlError> {
        (**self).script(statements)
    }
}

impl Sql for SqlStorage {
    fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
        let cursor = self.exec(statement, bindings(args)).map_err(fault)?;
        let rows = cursor
            .raw()
            .map(|row| {
                row.map_err(fault)?
                    .into_iter()
                    .map(from_storage)
                    .collect::<Result<_, _>>()
                    .map(Row)
            })
            .collect();
        metered(&cursor);
        rows
    }

    fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError> {
        let cursor = self.exec(statement, bindings(args)).map_err(fault)?;
        let written = cursor.rows_written();
        meter::count(Billable::RowsWritten(written));
        meter::count_with(|| Billable::RowsRead(cursor.rows_read()));
        Ok(written)
    }

    fn script(&self, statements: &str) -> Result<(), SqlError> {
        metered(&self.exec(statements, None).map_err(fault)?);
        Ok(())
    }
}

/// The rows a statement read and wrote, as Cloudflare bills them, once it ran to
/// its end; asked of the cursor only in the build that counts.
fn metered(cursor: &SqlCursor) {
    meter::count_with(|| Billable::RowsRead(cursor.rows_read()));
    meter::count_with(|| Billable::RowsWritten(cursor.rows_written()));
}

/// A database that runs several statements as one transaction: all their writes,
/// or none when the body fails.
pub trait Transactional: Sql {
    fn atomically<T>(&self, body: impl FnOnce() -> Result<T, SqlError>) -> Result<T, SqlError>;
}

#[wasm_bindgen]
extern "C" {
    /// A Durable Object's storage, for what `worker::Storage` does not offer.
    #[derive(Clone)]
    pub type ObjectStorage;

    #[wasm_bindgen(method, catch, js_name = transactionSync)]
    fn transaction_sync(
        this: &ObjectStorage,
        body: &mut dyn FnMut() -> Result<JsValue, JsValue>,
    ) -> Result<JsValue, JsValue>;
}

/// A Durable Object's SQLite database with its storage's `transactionSync`.
#[derive(Clone)]
pub struct DurableSql {
    sql: SqlStorage,
    storage: ObjectStorage,
}

impl DurableSql {
    /// The database of the object whose state this is; the state goes back to the object.
    pub fn of(state: State) -> Result<(State, Self), worker::Error> {
        let inner = state._inner();
        let storage = inner
            .storage()
            .map_err(|e| worker::Error::RustError(format!("no storage: {e:?}")))?
            .unchecked_into::<ObjectStorage>();
        let state = State::from(inner);
        let sql = state.storage().sql();
        Ok((state, Self { sql, storage }))
    }
}

impl Sql for DurableSql {
    fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
        self.sql.query(statement, args)
    }

    fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError> {
        self.sql.execute(statement, args)
    }

    fn script(&self, statements: &str) -> Result<(), SqlError> {
        self.sql.script(statements)
    }
}

impl Transactional for DurableSql {
    fn atomically<T>(&self, body: impl FnOnce() -> Result<T, SqlError>) -> Result<T, SqlError> {
        let mut body = Some(body);
        let mut outcome = None;
        let ran = {
            let mut run = || -> Result<JsValue, JsValue> {
                let result = body.take().map(|body| body());
                let failed = !matches!(result, Some(Ok(_)));
                outcome = result;
                // Thrown, the runtime rolls the transaction back.
                match failed {
                    true => Err(JsValue::from_str("rolled back")),
                    false => Ok(JsValue::UNDEFINED),
                }
            };
            self.storage.transaction_sync(&mut run)
        };
        match (outcome, ran) {
            (Some(Err(error)), _) => Err(error),
            (Some(Ok(value)), Ok(_)) => Ok(value),
            (_, Err(thrown)) => Err(SqlError(format!("the transaction failed: {thrown:?}"))),
            (None, Ok(_)) => Err(SqlError("the transaction did not run".to_owned())),
        }
    }
}

/// Brings a database's schema to the newest version: step `n` takes it from version
/// `n` to `n + 1`, and the version is recorded with each step. Called where no
/// `await` follows until the end, so the runtime commits each step together with
/// its number, or neither. Databases created before their version was recorded
/// are at version 0, so a first step must be idempotent for them. A change to a
/// schema is a new step at the end, never an edit of an old one.
pub fn migrate(sql: &impl Sql, steps: &[&str]) -> Result<(), SqlError> {
    sql.script("CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)")?;
    let current = match sql
        .query("SELECT version FROM schema_version WHERE id = 0", &[])?
        .first()
    {
        Some(row) => row.int(0)? as usize,
        None => 0,
    };
    for (version, step) in steps.iter().enumerate().skip(current) {
        sql.script(step)?;
        sql.execute(
            "INSERT INTO schema_version (id, version) VALUES (0, ?1)
             ON CONFLICT (id) DO UPDATE SET version = excluded.version",
            &[Value::int(version as u64 + 1)],
        )?;
    }
    Ok(())
}

fn fault(error: worker::Error) -> SqlError {
    SqlError(error.to_string())
}

fn bindings(args: &[Value]) -> Vec<SqlStorageValue> {
    args.iter()
        .map(|value| match value {
            Value::Null => SqlStorageValue::Null,
            Value::Integer(n) => SqlStorageValue::Integer(*n),
            Value::Text(text) => SqlStorageValue::String(text.clone()),
            Value::Blob(bytes) => SqlStorageValue::Blob(bytes.clone()),
        })
        .collect()
}

fn from_storage(value: SqlStorageValue) -> Result<Value, SqlError> {
    match value {
        SqlStorageValue::Null => Ok(Value::Null),
        SqlStorageValue::Integer(n) => Ok(Value::Integer(n)),
        SqlStorageValue::Boolean(b) => Ok(Value::Integer(i64::from(b))),
        SqlStorageValue::String(text) => Ok(Value::Text(text)),
        SqlStorageValue::Blob(bytes) => Ok(Value::Blob(bytes)),
        SqlStorageValue::Float(f) => {
            Err(SqlError(format!("a number this store never writes: {f}")))
        }
    }
}

/// The same interface on a real SQLite, for the native tests of the stores. It
/// refuses integers the object's storage could not carry exactly, as production
/// would silently round them.
#[cfg(test)]
pub mod native {
    use rusqlite::types::{ToSqlOutput, ValueRef};
    use rusqlite::{Connection, ToSql};

    use super::{Row, Sql, SqlError, Value, MAX_EXACT_INTEGER};

    pub struct NativeSql(pub Connection);

    impl Default for NativeSql {
        fn default() -> Self {
            Self(Connection::open_in_memory().expect("an in-memory SQLite"))
        }
    }

    impl NativeSql {
        pub fn new() -> Self {
            Self::default()
        }

        /// SQLite's plan for `statement` with `args`, its steps joined by `; `:
        /// what a test of an index reads.
        pub fn plan(&self, statement: &str, args: &[Value]) -> String {
            self.query(&format!("EXPLAIN QUERY PLAN {statement}"), args)
                .unwrap()
                .iter()
                .map(|row| row.text(3).unwrap())
                .collect::<Vec<_>>()
                .join("; ")
        }
    }

    impl ToSql for Value {
        fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
            Ok(match self {
                Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
                Value::Integer(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
                Value::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
                Value::Blob(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            })
        }
    }

    fn exact(n: i64) -> Result<i64, SqlError> {
        if n.abs() > MAX_EXACT_INTEGER {
            return Err(SqlError(format!(
                "{n} would lose precision in a Durable Object's storage"
            )));
        }
        Ok(n)
    }

    fn checked(args: &[Value]) -> Result<(), SqlError> {
        args.iter().try_for_each(|value| match value {
            Value::Integer(n) => exact(*n).map(drop),
            _ => Ok(()),
        })
    }

    fn error(error: rusqlite::Error) -> SqlError {
        SqlError(error.to_string())
    }

    impl Sql for NativeSql {
        fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
            checked(args)?;
            let mut prepared = self.0.prepare(statement).map_err(error)?;
            let columns = prepared.column_count();
            let mut rows = prepared
                .query(rusqlite::params_from_iter(args))
                .map_err(error)?;
            let mut all = Vec::new();
            while let Some(row) = rows.next().map_err(error)? {
                let values = (0..columns)
                    .map(|column| match row.get_ref(column).map_err(error)? {
                        ValueRef::Null => Ok(Value::Null),
                        ValueRef::Integer(n) => exact(n).map(Value::Integer),
                        ValueRef::Text(text) => {
                            Ok(Value::Text(String::from_utf8_lossy(text).into_owned()))
                        }
                        ValueRef::Blob(bytes) => Ok(Value::Blob(bytes.to_vec())),
                        ValueRef::Real(f) => {
                            Err(SqlError(format!("a number this store never writes: {f}")))
                        }
                    })
                    .collect::<Result<_, _>>()?;
                all.push(Row(values));
            }
            Ok(all)
        }

        fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError> {
            checked(args)?;
            self.0
                .execute(statement, rusqlite::params_from_iter(args))
                .map_err(error)
        }

        fn script(&self, statements: &str) -> Result<(), SqlError> {
            self.0.execute_batch(statements).map_err(error)
        }
    }

    impl super::Transactional for NativeSql {
        fn atomically<T>(&self, body: impl FnOnce() -> Result<T, SqlError>) -> Result<T, SqlError> {
            self.0.execute_batch("BEGIN").map_err(error)?;
            let result = body();
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            self.0.execute_batch(end).map_err(error)?;
            result
        }
    }
}
