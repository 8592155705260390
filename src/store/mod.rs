//! Thin adapters over the platform's storage: KV for read-mostly global data,
//! a Durable Object per license holder for the personal list.

pub mod allow_list;
pub mod global_list;
pub mod holders;
pub mod licenses;

use worker::kv::GetOptionsBuilder;

/// Whether a value an isolate loaded at `loaded_at_ms` may still stand in for a KV read.
fn fresh(loaded_at_ms: u64, now_ms: u64, cache_seconds: u64) -> bool {
    now_ms.saturating_sub(loaded_at_ms) < cache_seconds * 1000
}

/// KV refuses a cache TTL under 60 seconds; 0 means "always read through".
fn cached(get: GetOptionsBuilder, cache_seconds: u64) -> GetOptionsBuilder {
    if cache_seconds >= 60 {
        get.cache_ttl(cache_seconds)
    } else {
        get
    }
}
