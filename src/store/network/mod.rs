//! The report shards' SQLite databases: who reported which address, and when.

pub mod tally;
