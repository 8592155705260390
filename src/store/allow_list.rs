//! The allow list in KV: one key holding every range, one per line. Each isolate
//! parses it once per cache period and answers lookups from memory.

use std::cell::RefCell;
use std::rc::Rc;

use worker::Env;

use super::{cached, fresh};
use crate::domain::allow_list::{AllowEntries, AllowList};
use crate::domain::list_edit::ListEdit;
use crate::domain::range::Ipv4Range;
use crate::domain::settings::Freshness;
use crate::http::error::ApiError;

const BINDING: &str = "ALLOW_LIST";
const KEY: &str = "ranges";

thread_local! {
    /// (loaded at, in ms since the epoch; the compiled list). Workers isolates are single-threaded.
    static CACHE: RefCell<Option<(u64, Rc<AllowList>)>> = const { RefCell::new(None) };
}

pub async fn load(env: &Env, freshness: Freshness, now_ms: u64) -> Result<Rc<AllowList>, ApiError> {
    if let Some((_, list)) = CACHE.with_borrow(|cache| cache.as_ref().filter(|(at, _)| fresh(*at, now_ms, freshness)).cloned()) {
        return Ok(list);
    }
    let list = Rc::new(read_entries(env).await?.compile());
    CACHE.set(Some((now_ms, list.clone())));
    Ok(list)
}

/// Applies removals, then additions; counts only entries that changed.
pub async fn apply(env: &Env, edit: ListEdit<Ipv4Range>) -> Result<(usize, usize), ApiError> {
    let mut entries = read_entries(env).await?;
    let removed = edit.remove.iter().filter(|range| entries.remove(range)).count();
    let added = edit.add.into_iter().filter(|range| entries.insert(*range)).count();
    env.kv(BINDING)?.put(KEY, entries.to_text())?.execute().await?;
    CACHE.set(None);
    Ok((added, removed))
}

async fn read_entries(env: &Env) -> Result<AllowEntries, ApiError> {
    let text = cached(env.kv(BINDING)?.get(KEY)).text().await?;
    Ok(AllowEntries::from_text(text.as_deref().unwrap_or("")))
}
