//! What the operator lists' tables' tests share: a fresh database, lists of
//! many entries, and a chunk's entries read back.

use crate::domain::net::range::Cidr;
use crate::domain::net::range::Ipv4Range;
use crate::domain::operator_lists::chunk::{ChunkEntry, ChunkInfo};
use crate::domain::operator_lists::list::{EntrySource, FamilyEntries, ListKind};
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::native::NativeSql;

pub const KIND: ListKind = ListKind::Global;

pub fn tables() -> OperatorListTables<NativeSql> {
    let tables = OperatorListTables::new(NativeSql::new());
    tables.migrate().unwrap();
    tables
}

/// `count` single addresses `step` apart from 8.0.0.0, plus `offset`.
pub fn spread(count: u32, step: u32, offset: u32) -> FamilyEntries {
    FamilyEntries::new(
        (0..count)
            .map(|n| Ipv4Range::from_parts(0x0800_0000 + n * step + offset, 32).unwrap())
            .collect(),
    )
}

pub fn read_all(tables: &OperatorListTables<NativeSql>, index: &[ChunkInfo]) -> Vec<ChunkEntry> {
    index
        .iter()
        .flat_map(|info| tables.chunk(KIND, info).unwrap())
        .collect()
}

pub fn ipv6(text: &str) -> Cidr<u128> {
    Cidr::parse(text).unwrap()
}

/// The entries of these chunks from `source`.
pub fn from_source(
    tables: &OperatorListTables<NativeSql>,
    index: &[ChunkInfo],
    source: EntrySource,
) -> Vec<Ipv4Range> {
    read_all(tables, index)
        .iter()
        .filter(|kept| kept.source() == source)
        .map(|kept| kept.range)
        .collect()
}

pub fn size_of<A>(index: &[ChunkInfo<A>]) -> usize {
    index.iter().map(|info| info.entries).sum()
}
