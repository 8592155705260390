//! The report shards' SQLite databases: who reported which address, and when
//! (`tally`), how the votes are counted (`votes`), and what the operator's lookup
//! shows of an address (`lookup`).

pub mod lookup;
pub mod tally;
pub mod votes;
