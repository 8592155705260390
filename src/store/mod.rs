//! Adapters over the platform's storage: KV for read-mostly global data (the
//! license records, the published snapshots of the operator's lists) and the
//! SQLite databases of the Durable Objects.

pub mod canaries;
pub mod cloudflare_account;
pub mod directory;
pub mod holder;
pub mod kv;
pub mod licenses;
pub mod machines;
pub mod operator_keys;
pub mod operator_lists;
pub mod report_shard;
pub mod revocations;
pub mod sql;

use std::fmt;

use worker::kv::{Key, KvError, KvStore};

use crate::platform::meter::{self, Billable};

/// What went wrong below the HTTP layer, with its cause; the edge decides what a
/// client is told (`http::error`).
#[derive(Debug)]
pub enum StoreError {
    /// A call into the platform failed: a binding, a Durable Object, a request.
    Platform(worker::Error),
    Kv(KvError),
    Json(serde_json::Error),
    Randomness(getrandom::Error),
    /// A Durable Object's SQLite database refused a statement.
    Sql(sql::SqlError),
    /// A Durable Object could not answer a call, with the detail it gave.
    Object(String),
    /// A Durable Object of another build refused a call of this one's shape: the
    /// two Workers are between a deployment's two steps.
    OtherShape(String),
    /// Stored or answered data is not what this service writes.
    Corrupt(String),
    /// A paging cursor this service did not give out.
    UnknownCursor,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Platform(error) => write!(f, "platform: {error}"),
            Self::Kv(error) => write!(f, "KV: {error}"),
            Self::Json(error) => write!(f, "JSON: {error}"),
            Self::Randomness(error) => write!(f, "no randomness: {error}"),
            Self::Sql(error) => write!(f, "SQL: {error}"),
            Self::Object(detail) => write!(f, "object: {detail}"),
            Self::OtherShape(detail) => write!(f, "an object of another build: {detail}"),
            Self::Corrupt(detail) => f.write_str(detail),
            Self::UnknownCursor => f.write_str("unknown cursor"),
        }
    }
}

/// A Durable Object answers a fault of its own as a 500 with this text.
impl From<StoreError> for worker::Error {
    fn from(error: StoreError) -> Self {
        worker::Error::RustError(error.to_string())
    }
}

impl From<worker::Error> for StoreError {
    fn from(error: worker::Error) -> Self {
        Self::Platform(error)
    }
}

impl From<KvError> for StoreError {
    fn from(error: KvError) -> Self {
        Self::Kv(error)
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(error: serde_json::Error) -> Self {
        Self::Json(error)
    }
}

impl From<sql::SqlError> for StoreError {
    fn from(error: sql::SqlError) -> Self {
        Self::Sql(error)
    }
}

impl From<getrandom::Error> for StoreError {
    fn from(error: getrandom::Error) -> Self {
        Self::Randomness(error)
    }
}

/// One page of a namespace's keys (under `prefix`, if given; at most `limit`, else
/// KV's 1 000) after `cursor`, and the cursor of the next page when there is one.
pub async fn list_page(
    kv: &KvStore,
    prefix: Option<&str>,
    cursor: Option<String>,
    limit: Option<u64>,
) -> Result<(Vec<Key>, Option<String>), KvError> {
    let mut list = kv.list();
    if let Some(prefix) = prefix {
        list = list.prefix(prefix.to_owned());
    }
    if let Some(cursor) = cursor {
        list = list.cursor(cursor);
    }
    if let Some(limit) = limit {
        list = list.limit(limit);
    }
    meter::count(Billable::KvList);
    let page = list.execute().await?;
    Ok((page.keys, page.cursor.filter(|_| !page.list_complete)))
}

/// Every key of a namespace (under `prefix`, if given), handed to `each` a page of
/// at most 1 000 at a time.
pub async fn for_each_key(
    kv: &KvStore,
    prefix: Option<&str>,
    mut each: impl FnMut(&[Key]),
) -> Result<(), KvError> {
    let mut cursor = None;
    loop {
        let (keys, next) = list_page(kv, prefix, cursor, None).await?;
        each(&keys);
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}
