//! The writer's lists in SQLite, a chunk a row (`chunk`): the chunks an edit falls
//! in read and rewritten, an import staged in sorted runs and merged into chunks
//! beside the list it replaces, and the shards of each publication built from the
//! chunks and kept beside them, so that the next publication can tell what changed.
//! Nothing here holds more than a chunk, a run's part or a shard at a time.
//!
//! A chunk row is live (`state` 1), replaced (0: kept while an export may still
//! read it) or staged (2: written by an import not swapped in yet).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::domain::code::Coded;
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::{clip, combine, union_of_sorted, Intervals, Op};
use crate::domain::net::range::Cidr;
use crate::domain::operator_lists::chunk::{self, ChunkInfo, Filling, KeptEntry, PROMOTED};
use crate::domain::operator_lists::cut::Plan;
use crate::domain::operator_lists::delta::MAX_DELTA_INTERVALS;
use crate::domain::operator_lists::list::{Changes, EntrySource, ListEntries, ListKind};
use crate::domain::operator_lists::snapshot::{promoted_key, Manifest, Shard, Sharded};
use crate::store::operator_lists::tables::ListTables;
use crate::store::sql::{Row, Sql, SqlError, Value};

const LIVE: u64 = 1;
const STAGED: u64 = 2;
/// Entries in one stored part of an import's run.
const RUN_PART_ENTRIES: usize = 65_536;
/// Bytes of a shard in one stored row: SQLite rows here hold at most 2 MB.
const SHARD_PART_BYTES: usize = 1 << 20;

/// What a publication built of one family's shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built<A> {
    /// What changed since the version before, `None` when that is unknown or too large.
    pub change: Option<Intervals<A>>,
    /// The shards written, by index, that got a promoted part.
    pub promoted: Vec<usize>,
}

/// Where an edit or import came from, as the `edits` table records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Edit,
    Import,
    /// Entries an earlier version of the writer kept, taken over as they were.
    TakenOver,
    /// A batch of promotions and their decays from the holders' report shards.
    Promoted,
}

impl Source {
    fn code(self) -> &'static str {
        match self {
            Source::Edit => "edit",
            Source::Import => "import",
            Source::TakenOver => "taken-over",
            Source::Promoted => "promoted",
        }
    }
}

/// Which change added an entry, as the `edits` table keeps it; a promoted entry
/// says only that it is (`promoted`), with no change of the operator's, 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    pub edit: u64,
    /// When, in milliseconds.
    pub at_ms: Option<u64>,
    /// `edit`, `import`, `taken-over` or `promoted`.
    pub source: Option<String>,
    /// The acting operator key's name.
    pub by: Option<String>,
}

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

impl<S: Sql> ListTables<S> {
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
    ) -> Result<Vec<KeptEntry<A>>, SqlError> {
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

    fn write_chunk<A: Column>(
        &self,
        kind: ListKind,
        (start, entries): (A, &[KeptEntry<A>]),
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
    /// earlier version of the writer kept, taken over.
    pub fn install(
        &self,
        kind: ListKind,
        entries: &ListEntries,
        id: u64,
    ) -> Result<Vec<ChunkInfo>, SqlError> {
        self.sql.execute(
            "UPDATE chunks SET state = 0 WHERE kind = ?1 AND state = 1",
            &[Value::text(kind.code())],
        )?;
        let mut filling = Filling::new(0);
        let mut index = Vec::new();
        for &range in entries.as_slice() {
            if let Some((start, part)) = filling.push(KeptEntry { range, edit: id }) {
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
        (add, remove): (&ListEntries<A>, &ListEntries<A>),
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
        (add, remove): (&ListEntries<A>, &ListEntries<A>),
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
        (add, remove): (&ListEntries<A>, &ListEntries<A>),
        rev: u64,
        apply: impl Fn(&mut Vec<KeptEntry<A>>, &[Cidr<A>], &[Cidr<A>]) -> Changes,
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

    /// Stores run `run` of import `import`: a part of its entries of one family,
    /// sorted. The runs of one import are numbered across both families.
    pub fn stage_run<A: Addr>(
        &self,
        import: u64,
        run: usize,
        entries: &ListEntries<A>,
    ) -> Result<(), SqlError> {
        for (part, slice) in entries.as_slice().chunks(RUN_PART_ENTRIES).enumerate() {
            self.sql.execute(
                "INSERT OR REPLACE INTO runs (import, run, part, data) VALUES (?1, ?2, ?3, ?4)",
                &[
                    Value::int(import),
                    Value::int(run as u64),
                    Value::int(part as u64),
                    Value::Blob(ListEntries::new(slice.to_vec()).encode()),
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
                let entries = ListEntries::decode(row.blob(0)?)
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
            if let Some((start, part)) = filling.push(KeptEntry { range, edit }) {
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

    /// Records edit or import `id`: when, of which list, from where and by whom,
    /// what it changed, and the list's size after it.
    pub fn record_edit(
        &self,
        id: u64,
        kind: ListKind,
        (at_ms, by): (u64, Option<&str>),
        (source, changes): (Source, Changes),
        entries: usize,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO edits (id, kind, at, source, added, removed, entries, by_actor)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                Value::int(id),
                Value::text(kind.code()),
                Value::int(at_ms),
                Value::text(source.code()),
                Value::int(changes.added as u64),
                Value::int(changes.removed as u64),
                Value::int(entries as u64),
                Value::opt_text(by),
            ],
        )?;
        Ok(())
    }

    /// The entries of the live chunks `index` names that cover `address`, each with
    /// the edit or import that added it: at most the chunks whose span reaches the
    /// address are read, never the list.
    pub fn covering<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        address: A,
    ) -> Result<Vec<(Cidr<A>, Provenance)>, SqlError> {
        let before = index.partition_point(|info| info.start <= address);
        let mut found = Vec::new();
        for info in index[..before]
            .iter()
            .filter(|info| info.reach.is_some_and(|reach| reach >= address))
        {
            for kept in self.chunk(kind, info)? {
                if kept.range.first() <= address && address <= kept.range.last() {
                    found.push((kept.range, self.provenance(kept.edit)?));
                }
            }
        }
        Ok(found)
    }

    /// What the `edits` table says of edit `id`; a row dropped or never written
    /// (entries kept before edits were recorded) says only its number. A promoted
    /// entry has no row: the report shards' batches are no change of the operator's.
    fn provenance(&self, id: u64) -> Result<Provenance, SqlError> {
        if id == PROMOTED {
            return Ok(Provenance {
                source: Some(Source::Promoted.code().to_owned()),
                ..Provenance::default()
            });
        }
        let rows = self.sql.query(
            "SELECT at, source, by_actor FROM edits WHERE id = ?1",
            &[Value::int(id)],
        )?;
        let Some(row) = rows.first() else {
            return Ok(Provenance {
                edit: id,
                ..Provenance::default()
            });
        };
        Ok(Provenance {
            edit: id,
            at_ms: Some(row.int(0)?),
            source: Some(row.text(1)?),
            by: row.opt_text(2)?,
        })
    }

    /// The list's size after each of its last `count` changes, oldest first, with
    /// when each was made (milliseconds); changes recorded before sizes were are left out.
    pub fn sizes(&self, kind: ListKind, count: usize) -> Result<Vec<(u64, u64)>, SqlError> {
        let rows = self.sql.query(
            "SELECT at, entries FROM edits WHERE kind = ?1 AND entries IS NOT NULL
             ORDER BY id DESC LIMIT ?2",
            &[Value::text(kind.code()), Value::int(count as u64)],
        )?;
        let mut sizes = rows
            .iter()
            .map(|row| Ok((row.int(0)?, row.int(1)?)))
            .collect::<Result<Vec<_>, SqlError>>()?;
        sizes.reverse();
        Ok(sizes)
    }

    /// The highest number an edit or import was given, as far as anything kept
    /// says (a publication keeps the last it counted, which may have left no row):
    /// numbers are never given twice.
    pub fn last_edit(&self) -> Result<u64, SqlError> {
        let rows = self.sql.query(
            "SELECT max(m) FROM (
                SELECT max(id) AS m FROM edits UNION ALL SELECT max(rev) FROM chunks
                UNION ALL SELECT max(rev) FROM lists
            )",
            &[],
        )?;
        Ok(rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten()
            .unwrap_or(0))
    }

    /// Builds and keeps the shards of one family `plan` writes, from the chunks of
    /// `index`, each with its promoted part where it holds promoted entries, and
    /// answers what changed since `before` (whose shards this table kept): `None`
    /// when that is unknown or too large.
    pub fn build_shards<A: Column>(
        &self,
        kind: ListKind,
        index: &[ChunkInfo<A>],
        plan: &Plan<A>,
        before: Option<&Manifest>,
    ) -> Result<Built<A>, SqlError> {
        let mut change: Option<Intervals<A>> = before.map(|_| Vec::new());
        let mut promoted_parts = Vec::new();
        for &shard_index in &plan.writes {
            // The shard's entries read once, the operator's apart from the
            // promoted ones; each part sorted, as the chunks keep them.
            let (mut operator, mut promoted) = (Vec::new(), Vec::new());
            for info in &index[plan.chunks[shard_index].clone()] {
                for kept in self.chunk(kind, info)? {
                    let interval = (kept.range.first(), kept.range.last());
                    match kept.edit {
                        PROMOTED => promoted.push(interval),
                        _ => operator.push(interval),
                    }
                }
            }
            let (operator, promoted) = (union_of_sorted(operator), union_of_sorted(promoted));
            // An address the operator lists too is the operator's, whichever
            // entry holds it: the promoted part is what only the reports hold.
            let (intervals, promoted_only) = match promoted.is_empty() {
                true => (operator, Vec::new()),
                false => (
                    combine(&operator, &promoted, Op::Union),
                    combine(&promoted, &operator, Op::Minus),
                ),
            };
            let low = plan.starts[shard_index];
            let high = plan
                .starts
                .get(shard_index + 1)
                .and_then(|&next| next.before())
                .unwrap_or(A::MAX);
            if let (Some(found), Some(before)) = (change.as_mut(), before) {
                match self.published_between(kind, before, low, high)? {
                    Some(old) => found.extend(combine(&old, &intervals, Op::Xor)),
                    None => change = None,
                }
                if change
                    .as_ref()
                    .is_some_and(|c| c.len() > MAX_DELTA_INTERVALS)
                {
                    change = None;
                }
            }
            let key = &plan.keys[shard_index];
            self.save_shard(kind, key, &Shard::of_intervals(intervals))?;
            if !promoted_only.is_empty() {
                self.save_shard(
                    kind,
                    &promoted_key(key),
                    &Shard::of_intervals(promoted_only),
                )?;
                promoted_parts.push(shard_index);
            }
        }
        Ok(Built {
            change: change.map(union_of_sorted),
            promoted: promoted_parts,
        })
    }

    /// The intervals of one family of the version `manifest` names from `low` to
    /// `high`, if this table kept every shard of it there; none if that version
    /// had no shard of this family.
    fn published_between<A: Column>(
        &self,
        kind: ListKind,
        manifest: &Manifest,
        low: A,
        high: A,
    ) -> Result<Option<Intervals<A>>, SqlError> {
        let part = manifest.part::<A>();
        let mut old = Vec::new();
        if part.is_empty() {
            return Ok(Some(old));
        }
        for index in part.shard_of(low)..=part.shard_of(high) {
            let Some(key) = part.key(index) else {
                return Ok(None);
            };
            let Some(shard) = self.shard(kind, &key)? else {
                return Ok(None);
            };
            old.extend(clip(&shard.intervals(), low, high));
        }
        Ok(Some(old))
    }

    fn save_shard<A: Addr>(
        &self,
        kind: ListKind,
        key: &str,
        shard: &Shard<A>,
    ) -> Result<(), SqlError> {
        self.forget_shard(kind, key)?;
        let bytes = shard.encode();
        for (part, data) in bytes.chunks(SHARD_PART_BYTES).enumerate() {
            self.sql.execute(
                "INSERT INTO shards (kind, key, part, data) VALUES (?1, ?2, ?3, ?4)",
                &[
                    Value::text(kind.code()),
                    Value::text(key),
                    Value::int(part as u64),
                    Value::Blob(data.to_vec()),
                ],
            )?;
        }
        Ok(())
    }

    /// A shard a publication built, as its bytes, if this table keeps it.
    pub fn shard_bytes(&self, kind: ListKind, key: &str) -> Result<Option<Vec<u8>>, SqlError> {
        let rows = self.sql.query(
            "SELECT data FROM shards WHERE kind = ?1 AND key = ?2 ORDER BY part",
            &[Value::text(kind.code()), Value::text(key)],
        )?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        for row in &rows {
            bytes.extend_from_slice(row.blob(0)?);
        }
        Ok(Some(bytes))
    }

    fn shard<A: Addr>(&self, kind: ListKind, key: &str) -> Result<Option<Shard<A>>, SqlError> {
        self.shard_bytes(kind, key)?
            .map(|bytes| {
                Shard::decode(&bytes)
                    .ok_or_else(|| SqlError(format!("kept shard {key} does not decode")))
            })
            .transpose()
    }

    pub fn forget_shard(&self, kind: ListKind, key: &str) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM shards WHERE kind = ?1 AND key = ?2",
            &[Value::text(kind.code()), Value::text(key)],
        )?;
        Ok(())
    }

    /// Bytes of the shards and promoted parts, of both families, `manifest` names
    /// that this table keeps.
    pub fn snapshot_bytes(&self, kind: ListKind, manifest: &Manifest) -> Result<usize, SqlError> {
        let mut total = 0;
        for key in manifest.keys().chain(manifest.promoted_keys()) {
            let rows = self.sql.query(
                "SELECT coalesce(sum(length(data)), 0) FROM shards WHERE kind = ?1 AND key = ?2",
                &[Value::text(kind.code()), Value::text(key)],
            )?;
            total += rows.first().map(|row| row.int(0)).transpose()?.unwrap_or(0) as usize;
        }
        Ok(total)
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
        tables: &ListTables<S>,
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
        tables: &ListTables<S>,
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
    held: std::iter::Peekable<std::vec::IntoIter<KeptEntry<A>>>,
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
        tables: &ListTables<S>,
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
    use crate::domain::operator_lists::chunk::{CHUNK_ENTRIES, CHUNK_FILL};
    use crate::domain::operator_lists::cut::{self, Published};
    use crate::store::operator_lists::tables::StoredPublication;
    use crate::store::sql::native::NativeSql;

    const KIND: ListKind = ListKind::Global;

    fn tables() -> ListTables<NativeSql> {
        let tables = ListTables::new(NativeSql::new());
        tables.migrate().unwrap();
        tables
    }

    /// `count` single addresses `step` apart from 8.0.0.0, plus `offset`.
    fn spread(count: u32, step: u32, offset: u32) -> ListEntries {
        ListEntries::new(
            (0..count)
                .map(|n| Ipv4Range::from_parts(0x0800_0000 + n * step + offset, 32).unwrap())
                .collect(),
        )
    }

    fn read_all(tables: &ListTables<NativeSql>, index: &[ChunkInfo]) -> Vec<KeptEntry> {
        index
            .iter()
            .flat_map(|info| tables.chunk(KIND, info).unwrap())
            .collect()
    }

    #[test]
    fn an_edit_over_many_chunks_is_the_edit_of_the_whole_list() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        assert_eq!(index.len(), 150_000usize.div_ceil(CHUNK_FILL));
        // Enough into the first chunk to split it, and some out of the fourth.
        let add = spread(33_000, 2, 1);
        let remove =
            ListEntries::new(list.as_slice()[3 * CHUNK_FILL..3 * CHUNK_FILL + 10].to_vec());
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
    fn the_lists_size_after_each_change_reads_back_oldest_first() {
        let tables = tables();
        for (id, entries) in [(1, 10), (2, 15), (3, 12)] {
            let changes = Changes {
                added: 5,
                removed: 0,
            };
            tables
                .record_edit(
                    id,
                    KIND,
                    (id * 1000, None),
                    (Source::Edit, changes),
                    entries,
                )
                .unwrap();
        }
        tables
            .record_edit(
                4,
                ListKind::Allow,
                (4000, None),
                (Source::Edit, Changes::default()),
                1,
            )
            .unwrap();
        assert_eq!(
            tables.sizes(KIND, 30).unwrap(),
            [(1000, 10), (2000, 15), (3000, 12)]
        );
        assert_eq!(
            tables.sizes(KIND, 2).unwrap(),
            [(2000, 15), (3000, 12)],
            "the last ones"
        );
    }

    #[test]
    fn the_entries_covering_an_address_come_with_the_change_that_added_them() {
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        let wide = Ipv4Range::from_parts(0x0800_0000, 8).unwrap();
        let add = ListEntries::new(vec![wide]);
        let (_, index) = tables
            .edit(KIND, &index, (&add, &ListEntries::default()), 2)
            .unwrap();
        let changes = Changes {
            added: 1,
            removed: 0,
        };
        tables
            .record_edit(2, KIND, (5000, Some("alice")), (Source::Edit, changes), 1)
            .unwrap();
        // An address far into the list: the /8 starts in the first chunk, its /32 in a later one.
        let address = 0x0800_0000 + 4 * 100_000;
        let covering = tables.covering(KIND, &index, address).unwrap();
        let by_alice = Provenance {
            edit: 2,
            at_ms: Some(5000),
            source: Some("edit".into()),
            by: Some("alice".into()),
        };
        let installed = Provenance {
            edit: 1,
            ..Provenance::default()
        };
        assert_eq!(
            covering,
            [
                (wide, by_alice.clone()),
                (Ipv4Range::from_parts(address, 32).unwrap(), installed)
            ]
        );
        assert_eq!(
            tables.covering(KIND, &index, address + 1).unwrap(),
            [(wide, by_alice)],
            "between two addresses only the /8"
        );
        assert!(tables
            .covering(KIND, &index, 0x0900_0000)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn numbers_are_never_given_twice_even_those_only_a_publication_counted() {
        let tables = tables();
        assert_eq!(tables.last_edit().unwrap(), 0);
        tables.install(KIND, &spread(3, 4, 0), 5).unwrap();
        assert_eq!(tables.last_edit().unwrap(), 5);
        tables
            .record_edit(7, KIND, (0, None), (Source::Edit, Changes::default()), 0)
            .unwrap();
        assert_eq!(tables.last_edit().unwrap(), 7);
        let counted = StoredPublication {
            rev: 9,
            ..StoredPublication::default()
        };
        tables.save_publication(KIND, &counted).unwrap();
        assert_eq!(tables.last_edit().unwrap(), 9);
    }

    #[test]
    fn an_edit_whose_transaction_fails_leaves_every_chunk_as_it_was() {
        use crate::store::sql::Transactional;
        let tables = tables();
        let list = spread(150_000, 4, 0);
        let index = tables.install(KIND, &list, 1).unwrap();
        let add = spread(33_000, 2, 1);
        let failed: Result<(), SqlError> = tables.sql.atomically(|| {
            tables.edit(KIND, &index, (&add, &ListEntries::default()), 2)?;
            Err(SqlError("a fault after the writes".to_owned()))
        });
        assert!(failed.is_err());
        assert_eq!(tables.chunk_index(KIND).unwrap(), index);
        let kept: Vec<Ipv4Range> = read_all(&tables, &index).iter().map(|k| k.range).collect();
        assert_eq!(kept, list.as_slice());
    }

    #[test]
    fn an_import_merges_its_runs_beside_the_list_and_swaps_in_at_once() {
        let tables = tables();
        let range = |s: &str| Ipv4Range::parse(s).unwrap();
        let entries = |list: &[&str]| ListEntries::new(list.iter().map(|s| range(s)).collect());
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

    /// The intervals of every shard a manifest names, in order, as kept here.
    fn published(tables: &ListTables<NativeSql>, manifest: &Manifest) -> Intervals {
        (0..manifest.part::<u32>().len())
            .flat_map(|index| {
                let bytes = tables
                    .shard_bytes(KIND, &manifest.part::<u32>().key(index).unwrap())
                    .unwrap()
                    .unwrap();
                Shard::<u32>::decode(&bytes).unwrap().intervals()
            })
            .collect()
    }

    #[test]
    fn shards_built_from_the_chunks_hold_the_list_and_the_piece_is_what_changed() {
        let tables = tables();
        // Pairs of adjacent addresses, so that shards hold intervals, not single addresses.
        let mut list = spread(300_000, 4, 0);
        list.edit(spread(300_000, 4, 1).as_slice().to_vec(), vec![]);
        let index = tables.install(KIND, &list, 1).unwrap();
        let first = cut::plan(1, &index, None);
        assert!(first.starts.len() > 1);
        assert_eq!(
            tables.build_shards(KIND, &index, &first, None).unwrap(),
            Built {
                change: None,
                promoted: vec![]
            },
            "no version before: a reset"
        );
        let v1 = first.manifest(1);
        let old: Intervals = list.intervals().collect();
        assert_eq!(published(&tables, &v1), old);

        let add = ListEntries::new(vec![
            Ipv4Range::parse("8.0.0.2").unwrap(),
            Ipv4Range::parse("8.0.0.0/30").unwrap(),
        ]);
        let remove = ListEntries::new(vec![Ipv4Range::parse("8.0.0.1").unwrap()]);
        let (_, after) = tables.edit(KIND, &index, (&add, &remove), 2).unwrap();
        list.edit(add.as_slice().to_vec(), remove.as_slice().to_vec());
        let second = cut::plan(
            2,
            &after,
            Some(Published {
                manifest: &v1,
                rev: 1,
            }),
        );
        assert_eq!(second.writes, [0]);
        let piece = tables
            .build_shards(KIND, &after, &second, Some(&v1))
            .unwrap()
            .change;
        let new: Intervals = list.intervals().collect();
        assert_eq!(piece, Some(combine(&old, &new, Op::Xor)));
        assert_eq!(published(&tables, &second.manifest(2)), new);
    }

    /// The intervals of the promoted part of shard `index` that `manifest`
    /// names, as kept here; `None` when it has none.
    fn promoted_part(
        tables: &ListTables<NativeSql>,
        manifest: &Manifest,
        index: usize,
    ) -> Option<Intervals> {
        let part = manifest.part::<u32>();
        let bytes = tables
            .shard_bytes(KIND, &promoted_key(&part.key(index).unwrap()))
            .unwrap()?;
        Some(Shard::<u32>::decode(&bytes).unwrap().intervals())
    }

    #[test]
    fn a_shards_promoted_part_holds_what_only_the_reports_promoted_and_goes_with_it() {
        let tables = tables();
        let ip = |text: &str| Ipv4Range::parse(text).unwrap();
        // Pairs of adjacent addresses from 8.0.0.0, the operator's, in several shards.
        let mut list = spread(300_000, 4, 0);
        list.edit(spread(300_000, 4, 1).as_slice().to_vec(), vec![]);
        let index = tables.install(KIND, &list, 1).unwrap();
        // Beside the operator's 8.0.0.0-1, 8.0.0.8-9 and 8.0.0.12; past the list's end.
        let promoted = ListEntries::new(
            ["8.0.0.2", "8.0.0.8/30", "8.0.0.12", "9.0.0.0/24"]
                .map(ip)
                .to_vec(),
        );
        let (_, index) = tables
            .promote(KIND, &index, (&promoted, &ListEntries::default()), 2)
            .unwrap();
        let first = cut::plan(1, &index, None);
        let last = first.starts.len() - 1;
        assert!(last > 1, "several shards");
        let built = tables.build_shards(KIND, &index, &first, None).unwrap();
        assert_eq!(built.promoted, [0, last]);
        let mut v1 = first.manifest(1);
        v1.promoted = Some(first.promoted(&built.promoted));
        assert_eq!(v1.promoted, Some(vec![0, last as u32]));
        let interval = |text: &str| (ip(text).first(), ip(text).last());
        assert_eq!(
            promoted_part(&tables, &v1, 0),
            Some(vec![interval("8.0.0.2"), interval("8.0.0.10/31")]),
            "what the operator lists too, 8.0.0.8-9 and 8.0.0.12, is the operator's"
        );
        assert_eq!(
            promoted_part(&tables, &v1, last),
            Some(vec![interval("9.0.0.0/24")])
        );
        assert!((1..last).all(|index| promoted_part(&tables, &v1, index).is_none()));
        let mut whole = list.clone();
        whole.edit(promoted.as_slice().to_vec(), vec![]);
        assert_eq!(
            published(&tables, &v1),
            whole.intervals().collect::<Intervals>(),
            "the shards hold both"
        );

        // The /24 decays: its shard is written again, without a promoted part,
        // and the old one's goes with it; the first shard keeps its own.
        let decayed = ListEntries::new(vec![ip("9.0.0.0/24")]);
        let (_, index) = tables
            .promote(KIND, &index, (&ListEntries::default(), &decayed), 3)
            .unwrap();
        let second = cut::plan(
            2,
            &index,
            Some(Published {
                manifest: &v1,
                rev: 2,
            }),
        );
        assert_eq!(second.writes, [last]);
        let old_key = first.keys[last].clone();
        assert_eq!(second.gone, [old_key.clone(), promoted_key(&old_key)]);
        let built = tables
            .build_shards(KIND, &index, &second, Some(&v1))
            .unwrap();
        assert_eq!(built.promoted, Vec::<usize>::new());
        assert_eq!(built.change, Some(vec![interval("9.0.0.0/24")]));
        let mut v2 = second.manifest(2);
        v2.promoted = Some(second.promoted(&built.promoted));
        assert_eq!(v2.promoted, Some(vec![0]));
        assert_eq!(
            promoted_part(&tables, &v2, 0),
            promoted_part(&tables, &v1, 0),
            "shared with its shard"
        );
        assert!(promoted_part(&tables, &v2, last).is_none());
    }

    fn ipv6(text: &str) -> Cidr<u128> {
        Cidr::parse(text).unwrap()
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
        let many = ListEntries::new(many);
        let (changes, index) = tables
            .edit(KIND, &none, (&many, &ListEntries::default()), 2)
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
        let one = ListEntries::new(vec![ipv6("2a00:1450::1")]);
        let (_, after) = tables
            .edit(KIND, &index, (&one, &ListEntries::default()), 3)
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
    fn an_import_replaces_each_family_and_leaves_a_list_without_ipv6_without_ipv6_chunks() {
        let tables = tables();
        let v4 = |list: &[&str]| {
            ListEntries::new(list.iter().map(|s| Ipv4Range::parse(s).unwrap()).collect())
        };
        let index = tables.install(KIND, &v4(&["1.1.1.1"]), 1).unwrap();
        tables.stage_run(5, 0, &v4(&["2.2.2.2"])).unwrap();
        tables.merge_runs(KIND, 5, &[0], &index).unwrap();
        tables.merge_runs::<u128>(KIND, 5, &[], &[]).unwrap();
        tables.swap_in(KIND, 5, 6).unwrap();
        assert!(tables.chunk_index::<u128>(KIND).unwrap().is_empty());

        let index: Vec<ChunkInfo> = tables.chunk_index(KIND).unwrap();
        tables.stage_run(7, 0, &v4(&[])).unwrap();
        tables
            .stage_run(
                7,
                1,
                &ListEntries::new(vec![ipv6("2a00::/32"), ipv6("2600::1")]),
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

    /// The entries of these chunks from `source`.
    fn from_source(
        tables: &ListTables<NativeSql>,
        index: &[ChunkInfo],
        source: EntrySource,
    ) -> Vec<Ipv4Range> {
        read_all(tables, index)
            .iter()
            .filter(|kept| kept.source() == source)
            .map(|kept| kept.range)
            .collect()
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
        let promoted = ListEntries::new(vec![new[0], new[1], list.as_slice()[7]]);
        let (changes, after) = tables
            .promote(KIND, &index, (&promoted, &ListEntries::default()), 2)
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
            .edit(KIND, &after, (&ListEntries::default(), &promoted), 3)
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
            .promote(KIND, &edited, (&ListEntries::default(), &promoted), 4)
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
            .promote(KIND, &index, (&promoted, &ListEntries::default()), 2)
            .unwrap();
        let dismissed = ListEntries::new(promoted.as_slice()[..1].to_vec());
        let (gone, index) = tables
            .promote(KIND, &index, (&ListEntries::default(), &dismissed), 3)
            .unwrap();
        let add = spread(1, 4, 1);
        let (changes, index) = tables
            .edit(KIND, &index, (&add, &ListEntries::default()), 3)
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
        let one = ListEntries::new(vec![ipv6("2a00:1450::/64")]);
        let (changes, index) = tables
            .promote::<u128>(KIND, &[], (&one, &ListEntries::default()), 5)
            .unwrap();
        assert_eq!(changes.added, 1);
        assert_eq!((index.len(), index[0].promoted, index[0].rev), (1, 1, 5));
        assert_eq!(tables.chunk_index::<u128>(KIND).unwrap(), index);
    }

    #[test]
    fn an_import_keeps_the_promoted_entries_and_takes_over_those_it_lists() {
        let tables = tables();
        let range = |s: &str| Ipv4Range::parse(s).unwrap();
        let entries = |list: &[&str]| ListEntries::new(list.iter().map(|s| range(s)).collect());
        let index = tables
            .install(KIND, &entries(&["1.1.1.1", "2.2.2.2"]), 1)
            .unwrap();
        let (_, index) = tables
            .promote(
                KIND,
                &index,
                (
                    &entries(&["3.3.3.3", "5.5.5.5", "6.6.6.6"]),
                    &ListEntries::default(),
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
            .promote(KIND, &index, (&promoted, &ListEntries::default()), 2)
            .unwrap();
        assert!(index.iter().all(|info| info.promoted > 0));
        // The import: every other address of the list, and every other promoted one.
        let halves = |entries: &ListEntries| {
            ListEntries::new(entries.as_slice().iter().copied().step_by(2).collect())
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
        let all: Vec<KeptEntry> = read_all(&tables, &after);
        assert!(all.windows(2).all(|w| w[0].range < w[1].range));
    }

    #[test]
    fn a_promoted_entry_is_looked_up_as_promoted_without_a_change() {
        let tables = tables();
        let index = tables.install(KIND, &spread(10, 4, 0), 1).unwrap();
        let wide = Ipv4Range::from_parts(0x0800_0000, 24).unwrap();
        let (_, index) = tables
            .promote(
                KIND,
                &index,
                (&ListEntries::new(vec![wide]), &ListEntries::default()),
                2,
            )
            .unwrap();
        let promoted = Provenance {
            edit: 0,
            at_ms: None,
            source: Some("promoted".into()),
            by: None,
        };
        let installed = Provenance {
            edit: 1,
            ..Provenance::default()
        };
        assert_eq!(
            tables.covering(KIND, &index, 0x0800_0004).unwrap(),
            [
                (wide, promoted.clone()),
                (Ipv4Range::from_parts(0x0800_0004, 32).unwrap(), installed)
            ]
        );
        assert_eq!(
            tables.covering(KIND, &index, 0x0800_0005).unwrap(),
            [(wide, promoted)]
        );
    }

    fn size_of<A>(index: &[ChunkInfo<A>]) -> usize {
        index.iter().map(|info| info.entries).sum()
    }
}
