//! Thin adapters over the platform's storage: KV for read-mostly global data,
//! a Durable Object per license holder for the personal list.

pub mod allow_list;
pub mod global_list;
pub mod holders;
pub mod licenses;

use worker::kv::GetOptionsBuilder;

/// KV refuses a cache TTL under 60 seconds; 0 means "always read through".
fn cached(get: GetOptionsBuilder, cache_seconds: u64) -> GetOptionsBuilder {
    if cache_seconds >= 60 {
        get.cache_ttl(cache_seconds)
    } else {
        get
    }
}
