//! The operator's lists where they are kept: the operator lists' object's SQLite database (one
//! `OperatorListTables` whose methods live in these files by what they keep: `tables`,
//! its schema and publications; `chunks`, the lists' entries a chunk at a time;
//! `imports`, an import's runs; `edits`, the edit log; `shards`, each
//! publication's shards), and the snapshots it
//! publishes to KV as each isolate reads and holds them (`snapshots`, each `version`
//! loaded once per isolate through `shared_load`, and the global list's `promoted_parts`); and the promotions waiting for the
//! operator's review (`review`).

pub mod chunks;
pub mod edits;
pub mod imports;
pub mod promoted_parts;
pub mod review;
pub mod shards;
pub mod shared_load;
pub mod snapshots;
pub mod tables;
#[cfg(test)]
mod test_tables;
pub mod version;
