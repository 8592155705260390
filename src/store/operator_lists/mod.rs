//! The operator's lists where they are kept: the writer's SQLite database (one
//! `ListTables` whose methods live in `tables`, its schema, publications and edits,
//! and `chunks`, the lists' entries a chunk at a time), and the snapshots it
//! publishes to KV as each isolate reads and holds them (`snapshots`, loaded once
//! per isolate through `shared_load`); and the promotions waiting for the
//! operator's review (`review`).

pub mod chunks;
pub mod review;
pub mod shared_load;
pub mod snapshots;
pub mod tables;
