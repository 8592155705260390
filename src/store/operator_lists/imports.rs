//! An import's runs: the entries staged in sorted runs of at most
//! `RUN_PART_ENTRIES` a part, merged beside the live list with the promoted
//! entries the list keeps, and swapped in at once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::domain::net::family::Addr;
use crate::domain::net::range::Cidr;
use crate::domain::operator_lists::chunk::{ChunkEntry, ChunkInfo, Filling, PROMOTED};
use crate::domain::operator_lists::list::{Changes, EntrySource, FamilyEntries, ListKind};
use crate::store::operator_lists::chunks::{Column, STAGED};
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::{Sql, SqlError, Value};

/// Entries in one stored part of an import's run.
const RUN_PART_ENTRIES: usize = 65_536;

impl<S: Sql> OperatorListTables<S> {
    /// Stores run `run` of import `import`: a part of its entries of one family,
    /// sorted. The runs of one import are numbered across both families.
    pub fn stage_run<A: Addr>(
        &self,
        import: u64,
        run: usize,
        entries: &FamilyEntries<A>,
    ) -> Result<(), SqlError> {
        for (part, slice) in entries.as_slice().chunks(RUN_PART_ENTRIES).enumerate() {
            self.sql.execute(
                "INSERT OR REPLACE INTO runs (import, run, part, data) VALUES (?1, ?2, ?3, ?4)",
                &[
                    Value::int(import),
                    Value::int(run as u64),
                    Value::int(part as u64),
                    Value::Blob(FamilyEntries::new(slice.to_vec()).encode()),
                ],
            )?;
        }
        Ok(())
    }
    fn run_part<A: Addr>(
        &self,
        import: u64,
        run: usize,
        part: usize,
    ) -> Result<Option<Vec<Cidr<A>>>, SqlError> {
        let rows = self.sql.query(
            "SELECT data FROM runs WHERE import = ?1 AND run = ?2 AND part = ?3",
            &[
                Value::int(import),
                Value::int(run as u64),
                Value::int(part as u64),
            ],
        )?;
        rows.first()
            .map(|row| {
                let entries = FamilyEntries::decode(row.blob(0)?)
                    .ok_or_else(|| SqlError("a run of an import does not decode".to_owned()))?;
                Ok(entries.as_slice().to_vec())
            })
            .transpose()
    }
    /// Merges the runs `runs` of import `import`, all of one family, into staged
    /// chunks beside the family's, an entry already listed keeping its provenance.
    /// The promoted entries stay as they were: an import replaces the operator's
    /// own, and a range it lists that was promoted is the operator's from then on.
    /// Returns the import's entries and what it changes of the operator's. A family
    /// with no entry before or after stays without a chunk.
    pub fn merge_runs<A: Column>(
        &self,
        kind: ListKind,
        import: u64,
        runs: &[usize],
        index: &[ChunkInfo<A>],
    ) -> Result<(usize, Changes), SqlError> {
        let mut cursors: Vec<RunCursor<A>> = runs.iter().copied().map(RunCursor::new).collect();
        let mut heap = BinaryHeap::new();
        for (run, cursor) in cursors.iter_mut().enumerate() {
            if let Some(range) = cursor.next(self, import)? {
                heap.push(Reverse((range, run)));
            }
        }
        // The promoted entries come last of all sources: of a range the import
        // lists too, the import's comes first and the promoted one is passed over.
        let promoted_source = cursors.len();
        let mut promoted = PromotedEntries::new(index);
        if let Some(range) = promoted.next(self, kind)? {
            heap.push(Reverse((range, promoted_source)));
        }
        let mut old = OldEntries::new(index);
        let (mut count, mut kept) = (0, 0);
        let mut last: Option<Cidr<A>> = None;
        let mut filling = Filling::new(A::default());
        while let Some(Reverse((range, source))) = heap.pop() {
            let next = match cursors.get_mut(source) {
                Some(cursor) => cursor.next(self, import)?,
                None => promoted.next(self, kind)?,
            };
            if let Some(next) = next {
                heap.push(Reverse((next, source)));
            }
            if last == Some(range) {
                continue;
            }
            last = Some(range);
            let edit = if source == promoted_source {
                PROMOTED
            } else {
                count += 1;
                match old.find(self, kind, range)? {
                    Some(edit) if edit != PROMOTED => {
                        kept += 1;
                        edit
                    }
                    _ => import,
                }
            };
            if let Some((start, part)) = filling.push(ChunkEntry { range, edit }) {
                self.write_chunk(kind, (start, &part), import, STAGED)?;
            }
        }
        let (start, part) = filling.finish();
        if !(part.is_empty() && A::FAMILY == 6 && index.is_empty()) {
            self.write_chunk(kind, (start, &part), import, STAGED)?;
        }
        let before: usize = index
            .iter()
            .map(|info| info.count(EntrySource::Operator))
            .sum();
        Ok((
            count,
            Changes {
                added: count - kept,
                removed: before - kept,
            },
        ))
    }
    /// Makes the chunks import `import` staged, of both families, the list's, as
    /// written by `rev`. A family the import left without a chunk keeps its own.
    pub fn swap_in(&self, kind: ListKind, import: u64, rev: u64) -> Result<(), SqlError> {
        for filed in [u32::filed(kind), u128::filed(kind)] {
            let staged = self.sql.query(
                "SELECT 1 FROM chunks WHERE kind = ?1 AND state = 2 AND rev = ?2 LIMIT 1",
                &[Value::text(filed), Value::int(import)],
            )?;
            if staged.is_empty() {
                continue;
            }
            self.sql.execute(
                "UPDATE chunks SET state = 0 WHERE kind = ?1 AND state = 1",
                &[Value::text(filed)],
            )?;
            self.sql.execute(
                "UPDATE chunks SET state = 1, rev = ?3 WHERE kind = ?1 AND state = 2 AND rev = ?2",
                &[Value::text(filed), Value::int(import), Value::int(rev)],
            )?;
        }
        self.drop_runs(import)
    }
    fn drop_runs(&self, import: u64) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM runs WHERE import = ?1", &[Value::int(import)])?;
        Ok(())
    }
    /// Forgets what import `import` staged: it failed, or changed nothing.
    pub fn drop_import(&self, import: u64) -> Result<(), SqlError> {
        self.drop_runs(import)?;
        self.sql.execute(
            "DELETE FROM chunks WHERE state = 2 AND rev = ?1",
            &[Value::int(import)],
        )?;
        Ok(())
    }
    /// Forgets every import under way: after a restart none is.
    pub fn drop_imports(&self) -> Result<(), SqlError> {
        self.sql.execute("DELETE FROM runs", &[])?;
        self.sql
            .execute("DELETE FROM chunks WHERE state = 2", &[])?;
        Ok(())
    }
}

/// Where the merge of an import is in one of its runs.
struct RunCursor<A> {
    run: usize,
    part: usize,
    held: std::vec::IntoIter<Cidr<A>>,
}

impl<A: Addr> RunCursor<A> {
    fn new(run: usize) -> Self {
        Self {
            run,
            part: 0,
            held: Vec::new().into_iter(),
        }
    }

    fn next<S: Sql>(
        &mut self,
        tables: &OperatorListTables<S>,
        import: u64,
    ) -> Result<Option<Cidr<A>>, SqlError> {
        loop {
            if let Some(range) = self.held.next() {
                return Ok(Some(range));
            }
            match tables.run_part(import, self.run, self.part)? {
                Some(entries) => {
                    self.part += 1;
                    self.held = entries.into_iter();
                }
                None => return Ok(None),
            }
        }
    }
}

/// The promoted entries of the list before an import, in order, read a chunk at
/// a time as the merge goes, of the chunks that hold any.
struct PromotedEntries<'a, A> {
    chunks: std::slice::Iter<'a, ChunkInfo<A>>,
    held: std::vec::IntoIter<Cidr<A>>,
}

impl<'a, A: Column> PromotedEntries<'a, A> {
    fn new(index: &'a [ChunkInfo<A>]) -> Self {
        Self {
            chunks: index.iter(),
            held: Vec::new().into_iter(),
        }
    }

    fn next<S: Sql>(
        &mut self,
        tables: &OperatorListTables<S>,
        kind: ListKind,
    ) -> Result<Option<Cidr<A>>, SqlError> {
        loop {
            if let Some(range) = self.held.next() {
                return Ok(Some(range));
            }
            let Some(info) = self.chunks.find(|info| info.promoted > 0) else {
                return Ok(None);
            };
            let promoted: Vec<Cidr<A>> = tables
                .chunk(kind, info)?
                .into_iter()
                .filter(|kept| kept.edit == PROMOTED)
                .map(|kept| kept.range)
                .collect();
            self.held = promoted.into_iter();
        }
    }
}

/// The list's entries before an import, read a chunk at a time as the merge goes.
struct OldEntries<'a, A> {
    index: &'a [ChunkInfo<A>],
    next_chunk: usize,
    held: std::iter::Peekable<std::vec::IntoIter<ChunkEntry<A>>>,
}

impl<'a, A: Column> OldEntries<'a, A> {
    fn new(index: &'a [ChunkInfo<A>]) -> Self {
        Self {
            index,
            next_chunk: 0,
            held: Vec::new().into_iter().peekable(),
        }
    }

    /// The provenance of `range` if the list held it; ranges are asked in order.
    fn find<S: Sql>(
        &mut self,
        tables: &OperatorListTables<S>,
        kind: ListKind,
        range: Cidr<A>,
    ) -> Result<Option<u64>, SqlError> {
        loop {
            while self.held.next_if(|kept| kept.range < range).is_some() {}
            if let Some(kept) = self.held.peek() {
                return Ok((kept.range == range).then_some(kept.edit));
            }
            let Some(info) = self.index.get(self.next_chunk) else {
                return Ok(None);
            };
            self.next_chunk += 1;
            self.held = tables.chunk(kind, info)?.into_iter().peekable();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::range::Ipv4Range;

    use crate::store::operator_lists::test_tables::*;

    #[test]
    fn an_import_merges_its_runs_beside_the_list_and_swaps_in_at_once() {
        let tables = tables();
        let range = |s: &str| Ipv4Range::parse(s).unwrap();
        let entries = |list: &[&str]| FamilyEntries::new(list.iter().map(|s| range(s)).collect());
        let index = tables
            .install(KIND, &entries(&["1.1.1.1", "2.2.2.2"]), 1)
            .unwrap();
        tables
            .stage_run(7, 0, &entries(&["3.3.3.3", "1.1.1.1"]))
            .unwrap();
        tables
            .stage_run(7, 1, &entries(&["3.3.3.3", "4.4.4.0/24"]))
            .unwrap();
        let (count, changes) = tables.merge_runs(KIND, 7, &[0, 1], &index).unwrap();
        assert_eq!(
            (count, changes),
            (
                3,
                Changes {
                    added: 2,
                    removed: 1
                }
            )
        );
        assert_eq!(
            tables.chunk_index(KIND).unwrap(),
            index,
            "staged, not yet the list"
        );
        tables.swap_in(KIND, 7, 8).unwrap();
        let after: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        assert!(after.iter().all(|info| info.rev == 8));
        let kept: Vec<(String, u64)> = read_all(&tables, &after)
            .iter()
            .map(|k| (k.range.to_string(), k.edit))
            .collect();
        let expected = [("1.1.1.1", 1), ("3.3.3.3", 7), ("4.4.4.0/24", 7)];
        assert_eq!(kept, expected.map(|(r, e)| (r.to_owned(), e)));
        tables.forget_replaced_chunks().unwrap();
        tables.stage_run(9, 0, &entries(&["5.5.5.5"])).unwrap();
        tables.merge_runs(KIND, 9, &[0], &after).unwrap();
        tables.drop_import(9).unwrap();
        let rows = tables
            .sql
            .query("SELECT count(*) FROM chunks", &[])
            .unwrap();
        assert_eq!(
            rows[0].int(0).unwrap() as usize,
            after.len(),
            "nothing else is left"
        );
        let rows = tables.sql.query("SELECT count(*) FROM runs", &[]).unwrap();
        assert_eq!(rows[0].int(0).unwrap(), 0);
    }

    #[test]
    fn an_import_replaces_each_family_and_leaves_a_list_without_ipv6_without_ipv6_chunks() {
        let tables = tables();
        let v4 = |list: &[&str]| {
            FamilyEntries::new(list.iter().map(|s| Ipv4Range::parse(s).unwrap()).collect())
        };
        let index = tables.install(KIND, &v4(&["1.1.1.1"]), 1).unwrap();
        tables.stage_run(5, 0, &v4(&["2.2.2.2"])).unwrap();
        tables.merge_runs(KIND, 5, &[0], &index).unwrap();
        tables.merge_runs::<u128>(KIND, 5, &[], &[]).unwrap();
        tables.swap_in(KIND, 5, 6).unwrap();
        assert!(
            tables.chunk_index::<u128>(KIND).unwrap().is_empty(),
            "a list without IPv6 entries has no IPv6 chunk"
        );

        let index: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        tables.stage_run(7, 0, &v4(&[])).unwrap();
        tables
            .stage_run(
                7,
                1,
                &FamilyEntries::new(vec![ipv6("2a00::/32"), ipv6("2600::1")]),
            )
            .unwrap();
        assert_eq!(tables.merge_runs(KIND, 7, &[0], &index).unwrap().0, 0);
        let (count, changes) = tables.merge_runs::<u128>(KIND, 7, &[1], &[]).unwrap();
        assert_eq!((count, changes.added, changes.removed), (2, 2, 0));
        tables.swap_in(KIND, 7, 8).unwrap();
        assert_eq!(size_of(&tables.chunk_index::<u32>(KIND).unwrap()), 0);
        let v6: Vec<ChunkInfo<u128>> = tables.chunk_index(KIND).unwrap();
        assert_eq!(size_of(&v6), 2);

        // A list that held IPv6 entries is emptied of them by an import without any.
        tables.stage_run(9, 0, &v4(&["3.3.3.3"])).unwrap();
        let index: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        tables.merge_runs(KIND, 9, &[0], &index).unwrap();
        tables.merge_runs::<u128>(KIND, 9, &[], &v6).unwrap();
        tables.swap_in(KIND, 9, 10).unwrap();
        assert_eq!(size_of(&tables.chunk_index::<u128>(KIND).unwrap()), 0);
        assert_eq!(size_of(&tables.chunk_index::<u32>(KIND).unwrap()), 1);
    }

    #[test]
    fn an_import_keeps_the_promoted_entries_and_takes_over_those_it_lists() {
        let tables = tables();
        let range = |s: &str| Ipv4Range::parse(s).unwrap();
        let entries = |list: &[&str]| FamilyEntries::new(list.iter().map(|s| range(s)).collect());
        let index = tables
            .install(KIND, &entries(&["1.1.1.1", "2.2.2.2"]), 1)
            .unwrap();
        let (_, index) = tables
            .promote(
                KIND,
                &index,
                (
                    &entries(&["3.3.3.3", "5.5.5.5", "6.6.6.6"]),
                    &FamilyEntries::default(),
                ),
                2,
            )
            .unwrap();
        tables
            .stage_run(7, 0, &entries(&["1.1.1.1", "5.5.5.5"]))
            .unwrap();
        tables.stage_run(7, 1, &entries(&["4.4.4.4"])).unwrap();
        let (count, changes) = tables.merge_runs(KIND, 7, &[0, 1], &index).unwrap();
        assert_eq!(
            (count, changes),
            (
                3,
                Changes {
                    added: 2,
                    removed: 1
                }
            ),
            "5.5.5.5 is the operator's now; 2.2.2.2 went; the promoted ones are no change"
        );
        tables.swap_in(KIND, 7, 8).unwrap();
        let after: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        let kept: Vec<(String, u64)> = read_all(&tables, &after)
            .iter()
            .map(|k| (k.range.to_string(), k.edit))
            .collect();
        let expected = [
            ("1.1.1.1", 1),
            ("3.3.3.3", PROMOTED),
            ("4.4.4.4", 7),
            ("5.5.5.5", 7),
            ("6.6.6.6", PROMOTED),
        ];
        assert_eq!(kept, expected.map(|(r, e)| (r.to_owned(), e)));
        assert_eq!(after.iter().map(|info| info.promoted).sum::<usize>(), 2);

        // An import of the same entries again changes nothing.
        tables
            .stage_run(9, 0, &entries(&["1.1.1.1", "4.4.4.4", "5.5.5.5"]))
            .unwrap();
        let (count, changes) = tables.merge_runs(KIND, 9, &[0], &after).unwrap();
        assert_eq!((count, changes), (3, Changes::default()));
    }

    #[test]
    fn an_import_merges_the_promoted_entries_of_every_chunk_in_order() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        // Every chunk gets promoted addresses between the operator's.
        let promoted = spread(1_500, 400, 2);
        let (_, index) = tables
            .promote(KIND, &index, (&promoted, &FamilyEntries::default()), 2)
            .unwrap();
        assert!(index.iter().all(|info| info.promoted > 0));
        // The import: every other address of the list, and every other promoted one.
        let halves = |entries: &FamilyEntries| {
            FamilyEntries::new(entries.as_slice().iter().copied().step_by(2).collect())
        };
        let (operator, taken) = (halves(&list), halves(&promoted));
        tables.stage_run(5, 0, &operator).unwrap();
        tables.stage_run(5, 1, &taken).unwrap();
        let (count, changes) = tables.merge_runs(KIND, 5, &[0, 1], &index).unwrap();
        assert_eq!(count, operator.len() + taken.len());
        assert_eq!(
            changes,
            Changes {
                added: taken.len(),
                removed: list.len() - operator.len()
            }
        );
        tables.swap_in(KIND, 5, 6).unwrap();
        let after: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        let mut mine = operator.clone();
        mine.edit(taken.as_slice().to_vec(), vec![]);
        assert_eq!(
            from_source(&tables, &after, EntrySource::Operator),
            mine.as_slice()
        );
        let mut left = promoted.clone();
        left.edit(vec![], taken.as_slice().to_vec());
        assert_eq!(
            from_source(&tables, &after, EntrySource::Promoted),
            left.as_slice()
        );
        assert_eq!(
            after.iter().map(|info| info.promoted).sum::<usize>(),
            left.len()
        );
        let all: Vec<ChunkEntry> = read_all(&tables, &after);
        assert!(all.windows(2).all(|w| w[0].range < w[1].range));
    }
}
