//! The operator lists' object's lists in SQLite, a chunk a row (`chunk`): the chunks an edit or
//! a promotion falls in read and rewritten, and how a family's addresses are
//! filed in their columns (`Column`). An import's runs are `imports`, the edit
//! log `edits`, the publications' shards `shards`. Nothing here holds more than
//! a chunk at a time.
//!
//! A chunk row is live (`state` 1), replaced (0: kept while an export may still
//! read it) or staged (2: written by an import not swapped in yet).

use crate::domain::code::Coded;
use crate::domain::net::range::Cidr;
use crate::domain::operator_lists::chunk::{self, ChunkEntry, ChunkInfo, Filling};
use crate::domain::operator_lists::list::{Changes, FamilyEntries, ListKind};
use crate::domain::operator_lists::snapshot::Sharded;
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::{Row, Sql, SqlError, Value};

pub(super) const LIVE: u64 = 1;
pub(super) const STAGED: u64 = 2;

/// How a family's chunks are filed: under which `kind` (the IPv4 chunks under
/// the list's own code, as before IPv6), and how an address is held in the
/// `start`, `first` and `reach` columns: an IPv4 address as an integer, an IPv6
/// one as its 16 bytes, big-endian, which SQLite orders as the addresses.
pub trait Column: Sharded {
    fn filed(kind: ListKind) -> &'static str;
    fn value(self) -> Value;
    fn read(row: &Row, column: usize) -> Result<Option<Self>, SqlError>;
}

impl Column for u32 {
    fn filed(kind: ListKind) -> &'static str {
        kind.code()
    }

    fn value(self) -> Value {
        Value::int(u64::from(self))
    }

    fn read(row: &Row, column: usize) -> Result<Option<Self>, SqlError> {
        row.opt_int(column)?
            .map(|value| {
                u32::try_from(value)
                    .map_err(|_| SqlError(format!("an address over 32 bits: {value}")))
            })
            .transpose()
    }
}

impl Column for u128 {
    fn filed(kind: ListKind) -> &'static str {
        match kind {
            ListKind::Global => "global6",
            ListKind::Allow => "allow6",
        }
    }

    fn value(self) -> Value {
        Value::Blob(self.to_be_bytes().to_vec())
    }

    fn read(row: &Row, column: usize) -> Result<Option<Self>, SqlError> {
        row.opt_blob(column)?
            .map(|bytes| {
                bytes
                    .try_into()
                    .map(u128::from_be_bytes)
                    .map_err(|_| SqlError(format!("an IPv6 address of {} bytes", bytes.len())))
            })
            .transpose()
    }
}

fn required<A>(value: Option<A>) -> Result<A, SqlError> {
    value.ok_or_else(|| SqlError("a chunk with no start".to_owned()))
}

impl<S: Sql> OperatorListTables<S> {
    /// The list's live chunks of one family, in address order.
    pub fn chunk_index<A: Column>(&self, kind: ListKind) -> Result<Vec<ChunkInfo<A>>, SqlError> {
        let rows = self.sql.query(
            "SELECT start, rev, entries, first, reach, promoted FROM chunks
             WHERE kind = ?1 AND state = 1 ORDER BY start",
            &[Value::text(A::filed(kind))],
        )?;
        rows.iter()
            .map(|row| {
                Ok(ChunkInfo {
                    start: required(A::read(row, 0)?)?,
                    rev: row.int(1)?,
                    entries: row.int(2)? as usize,
                    promoted: row.int(5)? as usize,
                    first: A::read(row, 3)?,
                    reach: A::read(row, 4)?,
                })
            })
            .collect()
    }

    /// The entries of a chunk, live or replaced.
    pub fn chunk<A: Column>(
        &self,
        kind: ListKind,
        info: &ChunkInfo<A>,
    ) -> Result<Vec<ChunkEntry<A>>, SqlError> {
        let rows = self.sql.query(
            "SELECT data FROM chunks WHERE kind = ?1 AND start = ?2 AND rev = ?3",
            &[
                Value::text(A::filed(kind)),
                info.start.value(),
                Value::int(info.rev),
            ],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| SqlError(format!("the {} list has no chunk {info:?}", kind.code())))?;
        chunk::decode(row.blob(0)?).ok_or_else(|| {
            SqlError(format!(
                "a chunk of the {} list does not decode",
                kind.code()
            ))
        })
    }

    pub(super) fn write_chunk<A: Column>(
        &self,
        kind: ListKind,
        (start, entries): (A, &[ChunkEntry<A>]),
        rev: u64,
        state: u64,
    ) -> Result<ChunkInfo<A>, SqlError> {
        let info = ChunkInfo::of(start, rev, entries);
        self.sql.execute(
            "INSERT OR REPLACE INTO chunks
                (kind, start, rev, state, entries, first, reach, data, promoted)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            &[
                Value::text(A::filed(kind)),
                start.value(),
                Value::int(rev),
                Value::int(state),
                Value::int(info.entries as u64),
                info.first.map_or(Value::Null, A::value),
                info.reach.map_or(Value::Null, A::value),
                Value::Blob(chunk::encode(entries)),
                Value::int(info.promoted as u64),
            ],
        )?;
        Ok(info)
    }

    fn replace_chunk<A: Column>(
        &self,
        kind: ListKind,
        info: &ChunkInfo<A>,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE chunks SET state = 0 WHERE kind = ?1 AND start = ?2 AND rev = ?3",
            &[
                Value::text(A::filed(kind)),
                info.start.value(),
                Value::int(info.rev),
            ],
        )?;
        Ok(())
    }

    /// Replaces the list's chunks by `entries`, as written by `id`: what an
    /// earlier version of the operator lists' object kept, taken over.
    pub fn install(
        &self,
        kind: ListKind,
        entries: &FamilyEntries,
        id: u64,
    ) -> Result<Vec<ChunkInfo>, SqlError> {
        self.sql.execute(
            "UPDATE chunks SET state = 0 WHERE kind = ?1 AND state = 1",
            &[Value::text(kind.code())],
        )?;
        let mut filling = Filling::new(0);
        let mut index = Vec::new();
        for &range in entries.as_slice() {
            if let Some((start, part)) = filling.push(ChunkEntry { range, edit: id }) {
                index.push(self.write_chunk(kind, (start, &part), id, LIVE)?);
            }
        }
        let (start, part) = filling.finish();
        index.push(self.write_chunk(kind, (start, &part), id, LIVE)?);
        Ok(index)
    }

    /// Applies an edit of one family, as `id`, to the chunks it falls in, each
    /// read, changed and rewritten (cut in two when it grew past its bound) one at
    /// a time. Returns what changed and the family's chunks after it. A family with
    /// no chunk yet (IPv6, until its first entry) gets its first.
    pub fn edit<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        (add, remove): (&FamilyEntries<A>, &FamilyEntries<A>),
        id: u64,
    ) -> Result<(Changes, Vec<ChunkInfo<A>>), SqlError> {
        self.change(kind, index, (add, remove), id, |entries, add, remove| {
            chunk::apply(entries, add, remove, id)
        })
    }

    /// Promotes `add` and lets go of the promoted entries of `remove`, of one
    /// family (`chunk::promote`), as an edit does, the chunks it rewrites numbered
    /// `rev`: what the holders' reports promote and let decay, and what the
    /// operator dismisses.
    pub fn promote<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        (add, remove): (&FamilyEntries<A>, &FamilyEntries<A>),
        rev: u64,
    ) -> Result<(Changes, Vec<ChunkInfo<A>>), SqlError> {
        self.change(kind, index, (add, remove), rev, chunk::promote)
    }

    /// A change of the chunks `add` and `remove` fall in, `apply` making it to
    /// each one's entries, the chunks it changes written anew as `rev`.
    fn change<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        (add, remove): (&FamilyEntries<A>, &FamilyEntries<A>),
        rev: u64,
        apply: impl Fn(&mut Vec<ChunkEntry<A>>, &[Cidr<A>], &[Cidr<A>]) -> Changes,
    ) -> Result<(Changes, Vec<ChunkInfo<A>>), SqlError> {
        if index.is_empty() {
            let mut entries = Vec::new();
            let changes = apply(&mut entries, add.as_slice(), &[]);
            if changes == Changes::default() {
                return Ok((changes, Vec::new()));
            }
            let written = chunk::cut(A::default(), entries)
                .into_iter()
                .map(|(start, part)| self.write_chunk(kind, (start, &part), rev, LIVE))
                .collect::<Result<_, _>>()?;
            return Ok((changes, written));
        }
        let (mut add, mut remove) = (add.as_slice(), remove.as_slice());
        let mut total = Changes::default();
        let mut after = Vec::with_capacity(index.len() + 1);
        for (n, info) in index.iter().enumerate() {
            // What falls in this chunk: entries whose first address is before the next chunk's start.
            let next = index.get(n + 1).map(|next| next.start);
            let mine = |ranges: &[Cidr<A>]| {
                ranges.partition_point(|range| next.is_none_or(|next| range.first() < next))
            };
            let (these_added, rest) = add.split_at(mine(add));
            add = rest;
            let (these_removed, rest) = remove.split_at(mine(remove));
            remove = rest;
            if these_added.is_empty() && these_removed.is_empty() {
                after.push(*info);
                continue;
            }
            let mut entries = self.chunk(kind, info)?;
            let changes = apply(&mut entries, these_added, these_removed);
            if changes == Changes::default() {
                after.push(*info);
                continue;
            }
            total += changes;
            self.replace_chunk(kind, info)?;
            for (start, part) in chunk::cut(info.start, entries) {
                after.push(self.write_chunk(kind, (start, &part), rev, LIVE)?);
            }
        }
        Ok((total, after))
    }

    /// Deletes the chunks replaced: once no export can still be reading them.
    pub fn forget_replaced_chunks(&self) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM chunks WHERE state = 0", &[])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::range::Ipv4Range;
    use crate::domain::operator_lists::chunk::{CHUNK_ENTRIES, CHUNK_FILL};
    use crate::domain::operator_lists::cut::{self, Published};
    use crate::domain::operator_lists::list::EntrySource;
    use crate::domain::operator_lists::snapshot::Shard;

    use crate::store::operator_lists::test_tables::*;

    #[test]
    fn an_edit_over_many_chunks_is_the_edit_of_the_whole_list() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        assert_eq!(index.len(), 150_000usize.div_ceil(CHUNK_FILL));
        // Enough into the first chunk to split it, and some out of the fourth.
        let add = spread(33_000, 2, 1);
        let remove =
            FamilyEntries::new(list.as_slice()[3 * CHUNK_FILL..3 * CHUNK_FILL + 10].to_vec());
        let (changes, after) = tables.edit(KIND, &index, (&add, &remove), 2).unwrap();
        let mut model = list.clone();
        assert_eq!(
            changes,
            model.edit(add.as_slice().to_vec(), remove.as_slice().to_vec())
        );
        assert_eq!(
            after,
            tables.chunk_index(KIND).unwrap(),
            "what is stored is what is answered"
        );
        assert!(after.len() > index.len(), "the first chunk was cut");
        assert!(after.iter().all(|info| info.entries <= CHUNK_ENTRIES));
        let kept = read_all(&tables, &after);
        assert_eq!(
            kept.iter().map(|k| k.range).collect::<Vec<_>>(),
            model.as_slice()
        );
        for entry in &kept {
            let added = add.as_slice().binary_search(&entry.range).is_ok();
            assert_eq!(entry.edit, if added { 2 } else { 1 }, "{}", entry.range);
        }
        let untouched = index.iter().filter(|info| after.contains(info)).count();
        assert_eq!(
            untouched,
            index.len() - 2,
            "only the first and fourth chunks were rewritten"
        );
    }

    #[test]
    fn an_edit_whose_transaction_fails_leaves_every_chunk_as_it_was() {
        use crate::store::sql::Transactional;
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        let add = spread(33_000, 2, 1);
        let failed: Result<(), SqlError> = tables.sql.atomically(|| {
            tables.edit(KIND, &index, (&add, &FamilyEntries::default()), 2)?;
            Err(SqlError("a fault after the writes".to_owned()))
        });
        assert!(failed.is_err());
        assert_eq!(tables.chunk_index(KIND).unwrap(), index);
        let kept: Vec<Ipv4Range> = read_all(&tables, &index).iter().map(|k| k.range).collect();
        assert_eq!(kept, list.as_slice());
    }

    #[test]
    fn ipv6_entries_live_in_chunks_of_their_own_ordered_by_their_16_bytes() {
        let tables = tables();
        let v4 = tables.install(KIND, &spread(10, 2, 0), 1).unwrap();
        let none: Vec<ChunkInfo<u128>> = tables.chunk_index(KIND).unwrap();
        assert!(none.is_empty(), "no IPv6 chunk before the first IPv6 entry");
        // /64s from 2a00:: on, enough for several chunks, and one at the very top.
        let mut many: Vec<Cidr<u128>> = (0..CHUNK_ENTRIES as u128 + 10)
            .map(|n| Cidr::from_parts(0x2a00 << 112 | n << 64, 64).unwrap())
            .collect();
        many.push(ipv6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
        let many = FamilyEntries::new(many);
        let (changes, index) = tables
            .edit(KIND, &none, (&many, &FamilyEntries::default()), 2)
            .unwrap();
        assert_eq!(changes.added, many.len());
        assert!(index.len() > 1, "cut into chunks");
        assert_eq!(
            tables.chunk_index::<u128>(KIND).unwrap(),
            index,
            "read back in address order"
        );
        assert_eq!(
            tables.chunk_index::<u32>(KIND).unwrap(),
            v4,
            "the IPv4 chunks as they were"
        );
        let read: Vec<Cidr<u128>> = index
            .iter()
            .flat_map(|info| tables.chunk(KIND, info).unwrap())
            .map(|kept| kept.range)
            .collect();
        assert_eq!(read, many.as_slice());

        let plan = cut::plan(1, &index, None);
        assert_eq!(
            tables
                .build_shards(KIND, &index, &plan, None)
                .unwrap()
                .change,
            None
        );
        let mut manifest = cut::plan(1, &v4, None).manifest(1);
        manifest.ipv6 = crate::domain::operator_lists::snapshot::Ipv6Shards {
            starts: plan.starts.clone(),
            keys: plan.keys.clone(),
            promoted: None,
        };
        assert!(manifest
            .ipv6
            .keys
            .iter()
            .all(|key| key.starts_with("v1/ipv6/")));
        let held: Vec<(u128, u128)> = manifest
            .part::<u128>()
            .keys()
            .flat_map(|key| {
                let bytes = tables.shard_bytes(KIND, &key).unwrap().unwrap();
                Shard::<u128>::decode(&bytes).unwrap().intervals()
            })
            .collect();
        assert_eq!(held, many.intervals().collect::<Vec<_>>());

        // One more address: the change is that address, in its family alone.
        let one = FamilyEntries::new(vec![ipv6("2a00:1450::1")]);
        let (_, after) = tables
            .edit(KIND, &index, (&one, &FamilyEntries::default()), 3)
            .unwrap();
        let next = cut::plan(
            2,
            &after,
            Some(Published {
                manifest: &manifest,
                rev: 2,
            }),
        );
        assert_eq!(next.writes.len(), 1, "the one shard it falls in");
        let change = tables
            .build_shards(KIND, &after, &next, Some(&manifest))
            .unwrap()
            .change;
        let address = one.as_slice()[0].first();
        assert_eq!(change, Some(vec![(address, address)]));
    }

    #[test]
    fn a_promotion_rewrites_the_chunks_it_falls_in_and_no_edit_removes_what_it_promoted() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        // One address in the first chunk, one in the fourth, and one listed already.
        let new = [
            Ipv4Range::from_parts(0x0800_0001, 32).unwrap(),
            Ipv4Range::from_parts(0x0800_0000 + 4 * 3 * CHUNK_FILL as u32 + 1, 32).unwrap(),
        ];
        let promoted = FamilyEntries::new(vec![new[0], new[1], list.as_slice()[7]]);
        let (changes, after) = tables
            .promote(KIND, &index, (&promoted, &FamilyEntries::default()), 2)
            .unwrap();
        assert_eq!(
            changes,
            Changes {
                added: 2,
                removed: 0
            }
        );
        assert_eq!(after, tables.chunk_index(KIND).unwrap());
        assert_eq!(
            after.iter().filter(|info| info.rev == 2).count(),
            2,
            "the two chunks it added to, as a change numbered 2"
        );
        assert_eq!(
            after.iter().map(|info| info.promoted).sum::<usize>(),
            2,
            "the address the operator listed stays the operator's"
        );
        assert_eq!(from_source(&tables, &after, EntrySource::Promoted), new);

        // An edit that removes them changes nothing; the reports' decay removes them.
        let (changes, edited) = tables
            .edit(KIND, &after, (&FamilyEntries::default(), &promoted), 3)
            .unwrap();
        assert_eq!(
            changes,
            Changes {
                added: 0,
                removed: 1
            },
            "only the operator's own"
        );
        assert_eq!(from_source(&tables, &edited, EntrySource::Promoted), new);
        let (changes, decayed) = tables
            .promote(KIND, &edited, (&FamilyEntries::default(), &promoted), 4)
            .unwrap();
        assert_eq!(
            changes,
            Changes {
                added: 0,
                removed: 2
            }
        );
        assert!(decayed.iter().all(|info| info.promoted == 0));
        assert_eq!(size_of(&decayed), list.len() - 1);
    }

    #[test]
    fn a_dismissal_and_an_edit_of_one_chunk_in_one_change_leave_it_live() {
        // An operator's edit with removePromoted: the promoted entries go, then the
        // edit applies, both numbered as the one change, over the same chunk.
        let tables = tables();
        let list = spread(10, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        let promoted = spread(3, 4, 2);
        let (_, index) = tables
            .promote(KIND, &index, (&promoted, &FamilyEntries::default()), 2)
            .unwrap();
        let dismissed = FamilyEntries::new(promoted.as_slice()[..1].to_vec());
        let (gone, index) = tables
            .promote(KIND, &index, (&FamilyEntries::default(), &dismissed), 3)
            .unwrap();
        let add = spread(1, 4, 1);
        let (changes, index) = tables
            .edit(KIND, &index, (&add, &FamilyEntries::default()), 3)
            .unwrap();
        assert_eq!((gone.removed, changes.added), (1, 1));
        tables.forget_replaced_chunks().unwrap();
        assert_eq!(tables.chunk_index(KIND).unwrap(), index);
        assert_eq!(
            (
                index.len(),
                index[0].rev,
                index[0].entries,
                index[0].promoted
            ),
            (1, 3, 13, 2)
        );
        assert_eq!(
            from_source(&tables, &index, EntrySource::Promoted),
            promoted.as_slice()[1..]
        );
    }

    #[test]
    fn a_first_promotion_of_a_family_without_chunks_writes_its_first() {
        let tables = tables();
        let one = FamilyEntries::new(vec![ipv6("2a00:1450::/64")]);
        let (changes, index) = tables
            .promote::<u128>(KIND, &[], (&one, &FamilyEntries::default()), 5)
            .unwrap();
        assert_eq!(changes.added, 1);
        assert_eq!((index.len(), index[0].promoted, index[0].rev), (1, 1, 5));
        assert_eq!(tables.chunk_index::<u128>(KIND).unwrap(), index);
    }
}
