//! The report shards: objects that count holders' reports of attackers, each the
//! addresses `consensus::shard_of` gives it, so that no one object takes them all.

pub mod client;
#[cfg(feature = "objects")]
pub mod object;
pub mod protocol;
