//! Where a version of a list is cut into shards, and which of them it shares with
//! the version published before it. A shard is a run of the operator lists' object's chunks
//! (`chunk`); the cuts stay where they were from one version to the next, so an
//! edit changes the shard it falls in and no other: only that shard is written to
//! KV, and only that shard is loaded again by the isolates, whatever the size of
//! the list.

use std::collections::HashSet;
use std::ops::Range;

use crate::domain::operator_lists::chunk::ChunkInfo;
use crate::domain::operator_lists::snapshot::{promoted_key, Manifest, Sharded, SHARD_ENTRIES};

/// Entries a shard is cut to hold when it is cut anew: half what it may hold, so
/// that edits grow it a long time before it splits.
pub const FILL: usize = SHARD_ENTRIES / 2;

/// A version's shards of one family: where each begins, the chunks it is made
/// of, the KV key it is read under, and those this version writes.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan<A = u32> {
    pub starts: Vec<A>,
    pub chunks: Vec<Range<usize>>,
    pub keys: Vec<String>,
    /// The shards this version writes, by index; the others are an earlier version's.
    pub writes: Vec<usize>,
    /// Keys the version before named that this one does not: the shards, and
    /// the promoted parts of those that had one, which go with them.
    pub gone: Vec<String>,
    /// The keys of the shards it shares with the version before that have a
    /// promoted part there: they keep it (`promoted`).
    kept_promoted: HashSet<String>,
}

/// The published version a new one is cut like: its manifest, and the last edit
/// it includes (a chunk written since is changed).
pub struct Published<'a> {
    pub manifest: &'a Manifest,
    pub rev: u64,
}

/// Cuts one family's chunks into shards for version `version` where `before`
/// was cut, reusing each of its shards whose chunks are all as they were.
pub fn plan<A: Sharded>(
    version: u64,
    chunks: &[ChunkInfo<A>],
    before: Option<Published>,
) -> Plan<A> {
    let part = before.as_ref().map(|b| b.manifest.part::<A>());
    let previous = part.as_ref().map_or(&[][..], |part| part.starts);
    let groups = groups(chunks, previous);
    let starts: Vec<A> = groups
        .iter()
        .map(|group| chunks[group.start].start)
        .collect();
    let old_keys: Vec<String> = part
        .as_ref()
        .map_or_else(Vec::new, |part| part.keys().collect());
    // A manifest written before promoted parts does not say which shards have
    // one: a shard of it that holds promoted entries is written anew, with its part.
    let names_promoted = part.as_ref().is_some_and(|part| part.names_promoted());
    let mut keys = Vec::with_capacity(groups.len());
    let mut writes = Vec::new();
    for (index, group) in groups.iter().enumerate() {
        let same = before.as_ref().and_then(|b| {
            let old = previous.binary_search(&starts[index]).ok()?;
            let same_end = previous.get(old + 1) == starts.get(index + 1);
            let unchanged = chunks[group.clone()].iter().all(|chunk| chunk.rev <= b.rev);
            let labelled = names_promoted
                || chunks[group.clone()]
                    .iter()
                    .all(|chunk| chunk.promoted == 0);
            (same_end && unchanged && labelled).then(|| old_keys.get(old).cloned())?
        });
        match same {
            Some(key) => keys.push(key),
            None => {
                keys.push(A::shard_key(version, index));
                writes.push(index);
            }
        }
    }
    let named: HashSet<&String> = keys.iter().collect();
    let had_promoted: HashSet<String> = part
        .as_ref()
        .map_or_else(HashSet::new, |part| part.keys_with_promoted().collect());
    let mut gone = Vec::new();
    for key in old_keys.iter().filter(|key| !named.contains(key)) {
        gone.push(key.clone());
        if had_promoted.contains(key) {
            gone.push(promoted_key(key));
        }
    }
    let kept_promoted = had_promoted
        .into_iter()
        .filter(|key| named.contains(key))
        .collect();
    Plan {
        starts,
        chunks: groups,
        keys,
        writes,
        gone,
        kept_promoted,
    }
}

impl<A> Plan<A> {
    /// The shards of the version, by index, that have a promoted part: of those
    /// it writes, the ones `written` names (built with one), and of those it
    /// shares with the version before, the ones that had one there.
    pub fn promoted(&self, written: &[usize]) -> Vec<u32> {
        (0..self.keys.len())
            .filter(|index| match self.writes.binary_search(index) {
                Ok(_) => written.contains(index),
                Err(_) => self.kept_promoted.contains(&self.keys[*index]),
            })
            .map(|index| index as u32)
            .collect()
    }

    /// The keys of the promoted parts this version writes, those `written` names.
    pub fn promoted_writes<'a>(
        &'a self,
        written: &'a [usize],
    ) -> impl Iterator<Item = String> + 'a {
        written.iter().map(|&index| promoted_key(&self.keys[index]))
    }
}

/// The chunks of each shard. A shard begins at the first chunk, and at each chunk
/// where one began before and may still begin: where no interval of the list
/// reaches across or up to its start. A shard left empty joins the one before,
/// and one over `SHARD_ENTRIES` entries is cut in parts of about `FILL`.
fn groups<A: Sharded>(chunks: &[ChunkInfo<A>], previous: &[A]) -> Vec<Range<usize>> {
    let mut may_begin = Vec::with_capacity(chunks.len());
    let mut reach: Option<A> = None;
    for (index, chunk) in chunks.iter().enumerate() {
        let clear = match reach.map(|r| r.after()) {
            _ if index == 0 => true,
            None => true,
            Some(None) => false,
            Some(Some(after)) => {
                after < chunk.start || (after == chunk.start && chunk.first != Some(chunk.start))
            }
        };
        may_begin.push(clear);
        reach = reach.max(chunk.reach);
    }
    let begins: Vec<usize> = (0..chunks.len())
        .filter(|&index| {
            index == 0 || (may_begin[index] && previous.binary_search(&chunks[index].start).is_ok())
        })
        .collect();
    let mut groups: Vec<Range<usize>> = Vec::with_capacity(begins.len());
    for (n, &begin) in begins.iter().enumerate() {
        let end = begins.get(n + 1).copied().unwrap_or(chunks.len());
        let entries: usize = chunks[begin..end].iter().map(|chunk| chunk.entries).sum();
        match groups.last_mut() {
            Some(last) if entries == 0 => last.end = end,
            _ if entries > SHARD_ENTRIES => {
                let mut from = begin;
                let mut held = 0;
                for index in begin..end {
                    if held >= FILL && may_begin[index] {
                        groups.push(from..index);
                        (from, held) = (index, 0);
                    }
                    held += chunks[index].entries;
                }
                groups.push(from..end);
            }
            _ => groups.push(begin..end),
        }
    }
    groups
}

#[cfg(test)]
impl Plan {
    /// The manifest that would name this plan's shards as version `version`.
    pub fn manifest(&self, version: u64) -> Manifest {
        Manifest {
            version,
            published_at: 0,
            entries: 0,
            shards: self.starts.clone(),
            keys: self.keys.clone(),
            promoted: None,
            deltas_from: 0,
            ipv6: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::operator_lists::chunk::CHUNK_FILL;

    fn shard_key(version: u64, index: usize) -> String {
        u32::shard_key(version, index)
    }

    /// `count` full chunks of single addresses two apart, from 1.0.0.0, written by edit 1.
    fn full(count: usize) -> Vec<ChunkInfo> {
        (0..count as u32)
            .map(|n| {
                let start = if n == 0 {
                    0
                } else {
                    0x0100_0000 + n * 2 * CHUNK_FILL as u32
                };
                let first = 0x0100_0000 + n * 2 * CHUNK_FILL as u32;
                ChunkInfo {
                    start,
                    rev: 1,
                    entries: CHUNK_FILL,
                    promoted: 0,
                    first: Some(first),
                    reach: Some(first + 2 * (CHUNK_FILL as u32 - 1)),
                }
            })
            .collect()
    }

    #[test]
    fn an_edit_writes_the_one_shard_it_falls_in_and_keeps_the_others_keys() {
        let chunks = full(40);
        let first = plan(1, &chunks, None);
        assert_eq!(
            first.starts.len(),
            40 * CHUNK_FILL / FILL,
            "cut anew in parts of FILL"
        );
        assert_eq!(first.writes.len(), first.starts.len());
        let mut edited = chunks.clone();
        edited[9].rev = 2;
        edited[9].entries += 1;
        let published = first.manifest(1);
        let second = plan(
            2,
            &edited,
            Some(Published {
                manifest: &published,
                rev: 1,
            }),
        );
        assert_eq!(second.starts, first.starts);
        let hit = second
            .chunks
            .iter()
            .position(|group| group.contains(&9))
            .unwrap();
        assert_eq!(second.writes, [hit]);
        assert_eq!(second.keys[hit], shard_key(2, hit));
        for index in (0..second.keys.len()).filter(|&index| index != hit) {
            assert_eq!(second.keys[index], first.keys[index]);
        }
        assert_eq!(second.gone, [first.keys[hit].clone()]);
    }

    #[test]
    fn a_shared_shard_keeps_its_promoted_part_and_a_gone_one_takes_its_part_along() {
        let chunks = full(40);
        let first = plan(1, &chunks, None);
        assert!(first.starts.len() >= 3);
        // Version 1 built a promoted part for its shards 0 and 2.
        let mut published = first.manifest(1);
        published.promoted = Some(first.promoted(&[0, 2]));
        assert_eq!(first.promoted(&[0, 2]), [0, 2]);
        assert_eq!(
            first.promoted_writes(&[0, 2]).collect::<Vec<_>>(),
            [promoted_key(&first.keys[0]), promoted_key(&first.keys[2])]
        );
        let mut edited = chunks.clone();
        edited[0].rev = 2;
        let second = plan(
            2,
            &edited,
            Some(Published {
                manifest: &published,
                rev: 1,
            }),
        );
        assert_eq!(second.writes, [0]);
        assert_eq!(
            second.gone,
            [first.keys[0].clone(), promoted_key(&first.keys[0])],
            "the rewritten shard's promoted part goes with it"
        );
        assert_eq!(
            second.promoted(&[]),
            [2],
            "built again without one, the shard it shares keeps its own"
        );
        assert_eq!(second.promoted(&[0]), [0, 2]);
        let mut manifest = second.manifest(2);
        manifest.promoted = Some(second.promoted(&[]));
        assert_eq!(
            manifest.part::<u32>().promoted_key(2),
            Some(promoted_key(&first.keys[2])),
            "under the key it was written with"
        );
    }

    #[test]
    fn a_shard_with_promoted_entries_is_written_anew_after_a_manifest_before_their_parts() {
        let mut chunks = full(40);
        let first = plan(1, &chunks, None);
        chunks[20].promoted = 3;
        let hit = first
            .chunks
            .iter()
            .position(|group| group.contains(&20))
            .unwrap();
        let mut published = first.manifest(1);
        let again = |published: &Manifest| {
            plan(
                2,
                &chunks,
                Some(Published {
                    manifest: published,
                    rev: 1,
                }),
            )
        };
        assert_eq!(
            again(&published).writes,
            [hit],
            "unchanged, but without the promoted part its manifest never named"
        );
        // Named, even as none (its promoted entries are the operator's too): shared.
        published.promoted = Some(vec![]);
        assert_eq!(again(&published).writes, Vec::<usize>::new());
    }

    #[test]
    fn an_unchanged_list_writes_nothing_and_a_manifest_before_keys_is_read_by_version() {
        let chunks = full(3);
        let mut published = plan(7, &chunks, None).manifest(7);
        published.keys.clear();
        let again = plan(
            8,
            &chunks,
            Some(Published {
                manifest: &published,
                rev: 1,
            }),
        );
        assert_eq!(again.writes, Vec::<usize>::new());
        assert_eq!(again.keys, [shard_key(7, 0)]);
        assert_eq!(again.gone, Vec::<String>::new());
    }

    #[test]
    fn a_shard_grown_past_its_bound_is_cut_and_an_emptied_one_joins_the_one_before() {
        let chunks = full(40);
        let first = plan(1, &chunks, None);
        let published = first.manifest(1);
        let per_shard = first.chunks[0].len();
        assert_eq!(per_shard, FILL.div_ceil(CHUNK_FILL));
        // Chunks split inside the first shard: twice as many, each as full as before.
        let mut grown: Vec<ChunkInfo> = chunks[..per_shard]
            .iter()
            .flat_map(|chunk| {
                let later = ChunkInfo {
                    start: chunk.first.unwrap() + 1,
                    rev: 2,
                    ..*chunk
                };
                [ChunkInfo { rev: 2, ..*chunk }, later]
            })
            .collect();
        grown.extend_from_slice(&chunks[per_shard..]);
        let second = plan(
            2,
            &grown,
            Some(Published {
                manifest: &published,
                rev: 1,
            }),
        );
        assert_eq!(
            second.starts.len(),
            first.starts.len() + 1,
            "the first in two"
        );
        assert_eq!(second.keys[2..], first.keys[1..], "the others are kept");
        assert_eq!(second.writes, [0, 1]);
        let mut emptied = chunks.clone();
        for chunk in &mut emptied[per_shard..2 * per_shard] {
            (chunk.entries, chunk.first, chunk.reach, chunk.rev) = (0, None, None, 2);
        }
        let third = plan(
            3,
            &emptied,
            Some(Published {
                manifest: &published,
                rev: 1,
            }),
        );
        assert_eq!(third.starts.len(), first.starts.len() - 1);
        assert_eq!(third.chunks[0], 0..2 * per_shard);
        assert_eq!(third.writes, [0]);
        assert_eq!(third.gone, first.keys[..2]);
    }

    #[test]
    fn a_shard_never_begins_where_an_interval_reaches_across_or_up_to_it() {
        let at = |start: u32, first: u32, reach: u32| ChunkInfo {
            start,
            rev: 1,
            entries: FILL,
            promoted: 0,
            first: Some(first),
            reach: Some(reach),
        };
        let chunks = [
            at(0, 10, 1000),
            at(500, 600, 700),
            at(1001, 1001, 1100),
            at(1101, 1102, 1200),
            at(1300, 1300, 1400),
        ];
        let cut = plan(1, &chunks, None);
        // 500 lies inside 10..1000; 1001 touches 1000; 1101 is clear (1102 does not touch 1100).
        assert_eq!(cut.starts, [0, 1101, 1300]);
        let again = plan(
            2,
            &chunks,
            Some(Published {
                manifest: &cut.manifest(1),
                rev: 1,
            }),
        );
        assert_eq!(again.starts, cut.starts);
        assert_eq!(again.writes, Vec::<usize>::new());
    }

    proptest! {
        /// Whatever the cuts before, the shards cover every chunk once, in order,
        /// begin where the list allows, and reuse a key only for the same chunks unchanged.
        #[test]
        fn shards_cover_the_chunks_and_reuse_only_what_is_unchanged(
            sizes in proptest::collection::vec((0usize..3 * CHUNK_FILL, 0u32..3, any::<bool>()), 1..40),
            cuts_before in proptest::collection::vec(0usize..40, 0..8),
        ) {
            let mut chunks = Vec::new();
            let mut address = 0u32;
            for (n, &(entries, gap, changed)) in sizes.iter().enumerate() {
                let start = if n == 0 { 0 } else { address + gap };
                let first = (entries > 0).then_some(start + gap);
                let reach = first.map(|first| first + entries as u32 + gap);
                address = reach.unwrap_or(start) + 1;
                chunks.push(ChunkInfo { start, rev: if changed { 2 } else { 1 }, entries, promoted: 0, first, reach });
            }
            let mut previous: Vec<u32> = cuts_before.iter().filter_map(|&i| chunks.get(i).map(|c| c.start)).collect();
            previous.push(0);
            previous.sort_unstable();
            previous.dedup();
            let old = Manifest { version: 1, published_at: 0, entries: 0, keys: vec![], shards: previous.clone(), promoted: None, deltas_from: 0, ipv6: Default::default() };
            let cut = plan(2, &chunks, Some(Published { manifest: &old, rev: 1 }));
            prop_assert_eq!(cut.chunks.first().map(|g| g.start), Some(0));
            prop_assert_eq!(cut.chunks.last().map(|g| g.end), Some(chunks.len()));
            for pair in cut.chunks.windows(2) {
                prop_assert_eq!(pair[0].end, pair[1].start);
                let begin = pair[1].start;
                let reach = chunks[..begin].iter().filter_map(|c| c.reach).max();
                prop_assert!(reach.is_none_or(|r| r < chunks[begin].start && !(r + 1 == chunks[begin].start && chunks[begin].first == Some(chunks[begin].start))));
            }
            for (index, key) in cut.keys.iter().enumerate() {
                if *key != shard_key(2, index) {
                    let old_index = previous.iter().position(|&s| s == cut.starts[index]).unwrap();
                    prop_assert_eq!(key, &shard_key(1, old_index));
                    prop_assert_eq!(previous.get(old_index + 1), cut.starts.get(index + 1));
                    prop_assert!(chunks[cut.chunks[index].clone()].iter().all(|c| c.rev == 1));
                }
            }
        }
    }
}
