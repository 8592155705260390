//! Thin adapters over the platform's storage: KV for read-mostly global data,
//! a Durable Object per license holder for the personal list, and the one
//! writer of the operator's lists.

pub mod holders;
pub mod licenses;
pub mod lists;

use worker::kv::{GetOptionsBuilder, Key, KvError, KvStore};

use crate::domain::settings::Freshness;

/// Whether a value an isolate loaded at `loaded_at_ms` may still stand in for a KV read.
fn fresh(loaded_at_ms: u64, now_ms: u64, freshness: Freshness) -> bool {
    now_ms.saturating_sub(loaded_at_ms) < freshness.isolate_seconds() * 1000
}

/// Every KV read asks for the shortest edge cache: KV keeps a value 60 seconds
/// when not told otherwise, which alone would use up the bound.
fn cached(get: GetOptionsBuilder) -> GetOptionsBuilder {
    get.cache_ttl(Freshness::EDGE_SECONDS)
}

/// Every key of a namespace (under `prefix`, if given), handed to `each` a page of
/// at most 1 000 at a time.
pub async fn for_each_key(kv: &KvStore, prefix: Option<&str>, mut each: impl FnMut(&[Key])) -> Result<(), KvError> {
    let mut cursor = None;
    loop {
        let mut list = kv.list();
        if let Some(prefix) = prefix {
            list = list.prefix(prefix.to_owned());
        }
        if let Some(cursor) = cursor.take() {
            list = list.cursor(cursor);
        }
        let page = list.execute().await?;
        each(&page.keys);
        match page.cursor.filter(|_| !page.list_complete) {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}
