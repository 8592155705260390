//! Where a version of a list is cut into shards, and which of them it shares with
//! the version published before it. The cuts stay where they were from one
//! version to the next, so an edit changes the shard it falls in and no other:
//! only that shard is written to KV, and only that shard is loaded again by the
//! isolates, whatever the size of the list.

use std::collections::HashSet;

use super::ip_list::ListEntries;
use super::snapshot::{shard_key, Manifest, Shard, SHARD_ENTRIES};

/// Intervals a shard is cut to hold when it is cut anew: half what it may hold,
/// so that edits grow it a long time before it splits.
pub const FILL: usize = SHARD_ENTRIES / 2;

/// A version's shards: where each begins, the KV key each is read under, and
/// those this version writes.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub starts: Vec<u32>,
    pub keys: Vec<String>,
    /// The shards this version writes, by index; the others are an earlier version's.
    pub writes: Vec<(usize, Shard)>,
    /// Keys the version before named that this one does not.
    pub gone: Vec<String>,
}

/// The published version a new one is cut like: its manifest, and the entries it
/// holds when they are known (without them no shard is shared).
pub struct Published<'a> {
    pub manifest: &'a Manifest,
    pub entries: Option<&'a ListEntries>,
}

/// Cuts `entries` for version `version` where `before` was cut, reusing each of its
/// shards that holds what the new version holds there.
pub fn plan(version: u64, entries: &ListEntries, before: Option<Published>) -> Plan {
    let merged: Vec<(u32, u32)> = entries.intervals().collect();
    let previous = before.as_ref().map_or(&[][..], |b| &b.manifest.shards[..]);
    let starts = cuts(&merged, previous);
    let old_keys: Vec<String> = before.as_ref().map_or_else(Vec::new, |b| {
        (0..b.manifest.shards.len())
            .filter_map(|index| b.manifest.key(index))
            .collect()
    });
    let old_merged: Option<Vec<(u32, u32)>> = before
        .as_ref()
        .and_then(|b| b.entries)
        .map(|entries| entries.intervals().collect());
    let old_parts = old_merged
        .as_deref()
        .map_or_else(Vec::new, |merged| parts(merged, previous));
    let mut keys = Vec::with_capacity(starts.len());
    let mut writes = Vec::new();
    for (index, (start, part)) in starts.iter().zip(parts(&merged, &starts)).enumerate() {
        let same = previous
            .binary_search(start)
            .ok()
            .filter(|&old| old_parts.get(old) == Some(&part))
            .and_then(|old| old_keys.get(old));
        match same {
            Some(key) => keys.push(key.clone()),
            None => {
                keys.push(shard_key(version, index));
                writes.push((index, Shard::of_intervals(part.to_vec())));
            }
        }
    }
    let named: HashSet<&String> = keys.iter().collect();
    let gone = old_keys
        .iter()
        .filter(|key| !named.contains(key))
        .cloned()
        .collect();
    Plan {
        starts,
        keys,
        writes,
        gone,
    }
}

/// The first address of each shard: the first 0, then each of `previous` that no
/// interval straddles, a straddled one moved just past its interval; a shard left
/// empty goes, and one over `SHARD_ENTRIES` is cut in parts of about `FILL`.
fn cuts(merged: &[(u32, u32)], previous: &[u32]) -> Vec<u32> {
    let mut kept = vec![0u32];
    for &cut in previous.iter().filter(|&&cut| cut > 0) {
        let at = merged.partition_point(|&(_, last)| last < cut);
        let cut = match merged.get(at) {
            Some(&(first, last)) if first < cut => match last.checked_add(1) {
                Some(past) => past,
                None => continue,
            },
            _ => cut,
        };
        if kept.last().is_some_and(|&last| cut > last) {
            kept.push(cut);
        }
    }
    let mut starts = Vec::with_capacity(kept.len());
    for (index, (&start, part)) in kept.iter().zip(parts(merged, &kept)).enumerate() {
        if part.is_empty() && index > 0 {
            continue;
        }
        starts.push(start);
        if part.len() > SHARD_ENTRIES {
            let size = part.len().div_ceil(part.len().div_ceil(FILL));
            starts.extend(part.chunks(size).skip(1).map(|piece| piece[0].0));
        }
    }
    starts
}

/// The intervals each shard holds: those that begin from its start to the next one's.
fn parts<'a>(merged: &'a [(u32, u32)], starts: &[u32]) -> Vec<&'a [(u32, u32)]> {
    let begin = |start: u32| merged.partition_point(|&(first, _)| first < start);
    starts
        .iter()
        .enumerate()
        .map(|(index, &start)| {
            let end = starts
                .get(index + 1)
                .map_or(merged.len(), |&next| begin(next));
            &merged[begin(start).min(end)..end]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::range::Ipv4Range;

    fn manifest(version: u64, plan: &Plan) -> Manifest {
        Manifest {
            version,
            published_at: 0,
            entries: 0,
            shards: plan.starts.clone(),
            keys: plan.keys.clone(),
            deltas_from: 0,
        }
    }

    /// Single addresses, two apart, so that none merge: `count` of them from `from`.
    fn spread(from: u32, count: usize) -> Vec<Ipv4Range> {
        (0..count as u32)
            .map(|n| Ipv4Range::from_parts(from + n * 2, 32).unwrap())
            .collect()
    }

    /// Every shard's intervals, read through the keys, as an isolate would: the
    /// shards written by `plans` in order, later ones over earlier ones.
    fn read(plans: &[(u64, &Plan)], last: &Plan) -> Vec<(u32, u32)> {
        let mut written = std::collections::HashMap::new();
        for (_, plan) in plans {
            for (index, shard) in &plan.writes {
                written.insert(plan.keys[*index].clone(), shard.clone());
            }
        }
        let held = last
            .keys
            .iter()
            .map(|key| std::rc::Rc::new(written[key].clone()))
            .collect();
        crate::domain::snapshot::Shards::new(last.starts.clone(), held)
            .read_from(0)
            .collect()
    }

    #[test]
    fn an_edit_writes_the_one_shard_it_falls_in_and_keeps_the_others_keys() {
        let entries = ListEntries::new(spread(0x0100_0000, SHARD_ENTRIES * 2));
        let first = plan(1, &entries, None);
        assert_eq!(first.starts.len(), 4, "cut anew in parts of FILL");
        assert_eq!(first.writes.len(), 4);
        let mut edited = entries.clone();
        edited.edit(spread(0x0100_0001, 1), vec![]);
        let published = manifest(1, &first);
        let second = plan(
            2,
            &edited,
            Some(Published {
                manifest: &published,
                entries: Some(&entries),
            }),
        );
        assert_eq!(second.starts, first.starts);
        assert_eq!(second.writes.len(), 1, "only the shard of 1.0.0.1");
        assert_eq!(second.writes[0].0, 0);
        assert_eq!(second.keys[0], shard_key(2, 0));
        assert_eq!(second.keys[1..], first.keys[1..]);
        assert_eq!(second.gone, [shard_key(1, 0)]);
        assert_eq!(
            read(&[(1, &first), (2, &second)], &second),
            edited.intervals().collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_unchanged_list_writes_nothing_and_a_manifest_before_keys_is_read_by_version() {
        let entries = ListEntries::new(spread(0x0100_0000, 10));
        let mut published = manifest(7, &plan(7, &entries, None));
        published.keys.clear();
        let again = plan(
            8,
            &entries,
            Some(Published {
                manifest: &published,
                entries: Some(&entries),
            }),
        );
        assert_eq!(again.writes, []);
        assert_eq!(again.keys, [shard_key(7, 0)]);
        assert_eq!(again.gone, Vec::<String>::new());
    }

    #[test]
    fn without_the_entries_published_every_shard_is_written_and_every_old_key_goes() {
        let entries = ListEntries::new(spread(0x0100_0000, SHARD_ENTRIES * 2));
        let first = plan(1, &entries, None);
        let published = manifest(1, &first);
        let blind = Published {
            manifest: &published,
            entries: None,
        };
        let second = plan(2, &entries, Some(blind));
        assert_eq!(second.starts, first.starts, "cut where it was");
        assert_eq!(second.writes.len(), 4);
        assert_eq!(second.gone, first.keys);
    }

    #[test]
    fn a_shard_grown_past_its_bound_is_cut_in_two_and_an_emptied_one_goes() {
        let entries = ListEntries::new(spread(0x0100_0000, SHARD_ENTRIES * 2));
        let first = plan(1, &entries, None);
        assert_eq!(first.starts.len(), 4);
        let mut grown = entries.clone();
        grown.edit(spread(0x1000, SHARD_ENTRIES - FILL + 1), vec![]);
        let published = manifest(1, &first);
        let second = plan(
            2,
            &grown,
            Some(Published {
                manifest: &published,
                entries: Some(&entries),
            }),
        );
        assert_eq!(
            second.starts.len(),
            6,
            "the first in three: {:?}",
            second.starts
        );
        assert_eq!(second.keys[3..], first.keys[1..], "the others are kept");
        assert_eq!(second.writes.len(), 3);
        let emptied = ListEntries::new(spread(0x0100_0000, FILL));
        let third = plan(
            3,
            &emptied,
            Some(Published {
                manifest: &published,
                entries: Some(&entries),
            }),
        );
        assert_eq!(third.starts, [0]);
        assert_eq!(third.keys, [first.keys[0].clone()], "the first is kept");
        assert_eq!(third.gone, first.keys[1..]);
    }

    fn range_strategy() -> impl Strategy<Value = Ipv4Range> {
        (any::<u32>(), 8u8..=32).prop_map(|(addr, prefix)| {
            Ipv4Range::from_parts(addr & (u32::MAX << (32 - prefix)), prefix).unwrap()
        })
    }

    proptest! {
        /// Whatever the cuts of the version before, the shards a version names hold
        /// its intervals exactly, none straddled, and a lookup finds each address
        /// in the shard its start says.
        #[test]
        fn the_shards_named_hold_the_new_list_and_no_interval_is_cut(
            old in proptest::collection::vec(range_strategy(), 0..60),
            new in proptest::collection::vec(range_strategy(), 0..60),
            cuts_before in proptest::collection::vec(any::<u32>(), 0..6),
            probes in proptest::collection::vec(any::<u32>(), 0..20),
        ) {
            let (old, new) = (ListEntries::new(old), ListEntries::new(new));
            let old_merged: Vec<(u32, u32)> = old.intervals().collect();
            let mut starts = cuts(&old_merged, &cuts_before);
            starts.sort_unstable();
            let first = Plan {
                keys: (0..starts.len()).map(|index| shard_key(1, index)).collect(),
                writes: parts(&old_merged, &starts)
                    .into_iter()
                    .map(|part| Shard::of_intervals(part.to_vec()))
                    .enumerate()
                    .collect(),
                starts,
                gone: vec![],
            };
            let published = manifest(1, &first);
            let second = plan(2, &new, Some(Published { manifest: &published, entries: Some(&old) }));
            let merged: Vec<(u32, u32)> = new.intervals().collect();
            prop_assert_eq!(read(&[(1, &first), (2, &second)], &second), merged.clone());
            prop_assert_eq!(second.starts[0], 0);
            prop_assert!(second.starts.windows(2).all(|w| w[0] < w[1]));
            for &start in &second.starts {
                prop_assert!(!merged.iter().any(|&(first, last)| first < start && start <= last));
            }
            for addr in probes.into_iter().chain(merged.iter().map(|&(first, _)| first)) {
                let held = second.keys[manifest(2, &second).shard_of(addr)].clone();
                let inside = merged.iter().any(|&(first, last)| first <= addr && addr <= last);
                let shard = second.writes.iter().find(|(i, _)| second.keys[*i] == held).map(|(_, s)| s.clone())
                    .or_else(|| first.writes.iter().find(|(i, _)| first.keys[*i] == held).map(|(_, s)| s.clone()));
                prop_assert_eq!(shard.unwrap().contains(addr), inside, "{:#x}", addr);
            }
            if old == new {
                prop_assert_eq!(second.writes.len(), 0);
            }
        }
    }
}
