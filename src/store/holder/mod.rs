//! A holder's object's SQLite database: its schema (`schema`), how its rows keep
//! an address (`rows`), and one `HolderTables` whose methods live in
//! these files by what they keep: the list, its history and counters (`list`), the
//! holder's allow list (`allow`), the feed's reads and deltas (`feed`), the
//! feed tokens with their positions (`feed_tokens`), the reports kept until
//! they are sent on (`reports`), the holder's CrowdSec engines (`machines`),
//! what its bouncers and engines report of themselves (`usage_metrics`),
//! and its Cloudflare connection with the items put in its list (`cloudflare`).
//! `rule_tests` runs the holder's rules against it and against the in-memory
//! store alike.

pub mod allow;
pub mod cloudflare;
pub mod feed;
pub mod feed_tokens;
pub mod list;
pub mod machines;
pub mod reports;
pub mod rows;
#[cfg(test)]
mod rule_tests;
pub mod schema;
pub mod usage_metrics;
