//! Thin adapters over the platform's storage: KV for read-mostly global data,
//! a Durable Object per license holder for the personal list, and the one
//! writer of the operator's lists.

pub mod holder_list;
pub mod holders;
pub mod kv;
pub mod licenses;
pub mod lists;
pub mod sql;

use std::fmt;

use worker::kv::{Key, KvError, KvStore};

/// What went wrong below the HTTP layer, with its cause; the edge decides what a
/// client is told (`http::error`).
#[derive(Debug)]
pub enum StoreError {
    /// A call into the platform failed: a binding, a Durable Object, a request.
    Platform(worker::Error),
    Kv(KvError),
    Json(serde_json::Error),
    Randomness(getrandom::Error),
    /// Stored or answered data is not what this service writes.
    Corrupt(String),
    /// The holder's object refuses every call: the license is revoked.
    LicenseRevoked,
    /// The holder's object no longer has the feed token.
    FeedTokenRevoked,
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
            Self::Corrupt(detail) => f.write_str(detail),
            Self::LicenseRevoked => f.write_str("license revoked"),
            Self::FeedTokenRevoked => f.write_str("feed token revoked"),
            Self::UnknownCursor => f.write_str("unknown cursor"),
        }
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
#[cfg(test)]
mod rule_tests;
