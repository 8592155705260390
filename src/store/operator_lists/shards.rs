//! The snapshot's shards as the operator lists' object builds and keeps them: built from the
//! chunks at each publication, stored a part of `SHARD_PART_BYTES` a row until
//! KV has them, and read back for the snapshot's size.

use crate::domain::code::Coded;
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::clip;
use crate::domain::net::intervals::combine;
use crate::domain::net::intervals::union_of_sorted;
use crate::domain::net::intervals::{Intervals, Op};
use crate::domain::operator_lists::chunk::{ChunkInfo, PROMOTED};
use crate::domain::operator_lists::cut::Plan;
use crate::domain::operator_lists::delta::MAX_DELTA_INTERVALS;
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{promoted_key, Manifest, Shard};
use crate::store::operator_lists::chunks::Column;
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::{Sql, SqlError, Value};

/// Bytes of a shard in one stored row: SQLite rows here hold at most 2 MB.
const SHARD_PART_BYTES: usize = 1 << 20;

/// What a publication built of one family's shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built<A> {
    /// What changed since the version before, `None` when that is unknown or too large.
    pub change: Option<Intervals<A>>,
    /// What changed in the promoted parts since the version before, as `change`:
    /// where a feed's label of a block may have changed.
    pub promoted_change: Option<Intervals<A>>,
    /// The shards written, by index, that got a promoted part.
    pub promoted: Vec<usize>,
}

impl<S: Sql> OperatorListTables<S> {
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
        let mut promoted_change = change.clone();
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
            // What changed, of the shards and of their promoted parts: unknown
            // (`None`) where the version before is not kept, or too large.
            if let Some(before) = before {
                for (found, now, promoted) in [
                    (&mut change, &intervals, false),
                    (&mut promoted_change, &promoted_only, true),
                ] {
                    let old = match found {
                        Some(_) => self.published_between(kind, before, (low, high), promoted)?,
                        None => continue,
                    };
                    *found = found.take().zip(old).and_then(|(mut found, old)| {
                        found.extend(combine(&old, now, Op::Xor));
                        (found.len() <= MAX_DELTA_INTERVALS).then_some(found)
                    });
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
            promoted_change: promoted_change.map(union_of_sorted),
            promoted: promoted_parts,
        })
    }

    /// The intervals of one family of the version `manifest` names from `low`
    /// to `high`, in its shards or, when `promoted`, in their promoted parts,
    /// if this table kept every one of them; none if that version had no
    /// shard of this family. A shard with no promoted part adds none (a
    /// manifest written before promoted parts names none, and feeds read it so).
    fn published_between<A: Column>(
        &self,
        kind: ListKind,
        manifest: &Manifest,
        (low, high): (A, A),
        promoted: bool,
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
            let key = match promoted {
                false => key,
                true if part.has_promoted(index) => promoted_key(&key),
                true => continue,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::intervals::combine;
    use crate::domain::net::range::Ipv4Range;

    use crate::domain::operator_lists::cut::{self, Published};
    use crate::domain::operator_lists::list::FamilyEntries;

    use crate::store::operator_lists::test_tables::*;
    use crate::store::sql::native::NativeSql;

    /// The intervals of every shard a manifest names, in order, as kept here.
    fn published(tables: &OperatorListTables<NativeSql>, manifest: &Manifest) -> Intervals {
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
                promoted_change: None,
                promoted: vec![]
            },
            "no version before: a reset"
        );
        let v1 = first.manifest(1);
        let old: Intervals = list.intervals().collect();
        assert_eq!(published(&tables, &v1), old);

        let add = FamilyEntries::new(vec![
            Ipv4Range::parse("8.0.0.2").unwrap(),
            Ipv4Range::parse("8.0.0.0/30").unwrap(),
        ]);
        let remove = FamilyEntries::new(vec![Ipv4Range::parse("8.0.0.1").unwrap()]);
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
        tables: &OperatorListTables<NativeSql>,
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
        let promoted = FamilyEntries::new(
            ["8.0.0.2", "8.0.0.8/30", "8.0.0.12", "9.0.0.0/24"]
                .map(ip)
                .to_vec(),
        );
        let (_, index) = tables
            .promote(KIND, &index, (&promoted, &FamilyEntries::default()), 2)
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
        let decayed = FamilyEntries::new(vec![ip("9.0.0.0/24")]);
        let (_, index) = tables
            .promote(KIND, &index, (&FamilyEntries::default(), &decayed), 3)
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
        assert_eq!(
            built.promoted_change,
            Some(vec![interval("9.0.0.0/24")]),
            "what left the list left the promoted part too"
        );
        let mut v2 = second.manifest(2);
        v2.promoted = Some(second.promoted(&built.promoted));
        assert_eq!(
            v2.promoted,
            Some(vec![0]),
            "the first shard, not written again, keeps the promoted part it had"
        );
        assert_eq!(
            promoted_part(&tables, &v2, 0),
            promoted_part(&tables, &v1, 0),
            "shared with its shard"
        );
        assert!(promoted_part(&tables, &v2, last).is_none());

        // The operator takes over the promoted 8.0.0.2: the list holds what it
        // held, and the promoted part's change says where a label moved.
        let taken = FamilyEntries::new(vec![ip("8.0.0.2")]);
        let (_, index) = tables
            .edit(KIND, &index, (&taken, &FamilyEntries::default()), 4)
            .unwrap();
        let third = cut::plan(
            3,
            &index,
            Some(Published {
                manifest: &v2,
                rev: 3,
            }),
        );
        assert_eq!(third.writes, [0]);
        let built = tables
            .build_shards(KIND, &index, &third, Some(&v2))
            .unwrap();
        assert_eq!(
            (built.change, built.promoted_change),
            (Some(vec![]), Some(vec![interval("8.0.0.2")])),
            "a takeover changes no membership of the list, only of its promoted part"
        );
    }
}
