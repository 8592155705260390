//! A list as the operator lists' object keeps it in SQLite: cut by address into chunks of at most
//! `CHUNK_ENTRIES` entries, each entry with its provenance (the edit or import that
//! added it), so that an edit reads and rewrites only the chunks it falls in and a
//! list of ten million entries is never in the operator lists' object's memory whole. A chunk
//! holds the entries whose first address runs from its start to the next chunk's.

use crate::domain::net::family::Addr;
use crate::domain::net::range::Cidr;
use crate::domain::operator_lists::list::{Changes, EntrySource};

/// Entries in one chunk at most: its row stays well under SQLite's 2 MB a value.
pub const CHUNK_ENTRIES: usize = 65_536;
/// Entries a chunk is cut to hold when it is written anew: half what it may hold,
/// so that edits grow it a long time before it splits.
pub const CHUNK_FILL: usize = CHUNK_ENTRIES / 2;
/// Bytes an entry takes: first address (4 bytes IPv4, 16 IPv6), prefix length,
/// and the edit that added it. The first byte of a stored chunk names the family
/// (`Addr::FAMILY`), so each family's chunks keep their own layout.
const fn kept_bytes<A: Addr>() -> usize {
    A::BYTES + 5
}

/// The provenance of an entry the holders' reports promoted to the global list,
/// not the operator's: a chunk keeps an entry's edit in 32 bits, and the numbers
/// edits and imports are given (one a change, from 1) stay far below this one.
pub const PROMOTED: u64 = u32::MAX as u64;

/// One entry as the operator lists' object keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChunkEntry<A = u32> {
    pub range: Cidr<A>,
    /// The edit or import that added it (the operator lists' object's `edits` table), or `PROMOTED`.
    pub edit: u64,
}

impl<A> ChunkEntry<A> {
    pub fn source(&self) -> EntrySource {
        match self.edit {
            PROMOTED => EntrySource::Promoted,
            _ => EntrySource::Operator,
        }
    }
}

/// What the operator lists' object knows of a chunk without reading it: enough to find the chunks
/// an edit falls in, and where a shard may begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo<A = u32> {
    pub start: A,
    /// The edit that wrote this chunk's row last.
    pub rev: u64,
    pub entries: usize,
    /// Of those, the entries promoted (`PROMOTED`): the others are the operator's.
    pub promoted: usize,
    /// The first address of its first entry.
    pub first: Option<A>,
    /// The last address any of its entries reaches.
    pub reach: Option<A>,
}

impl<A: Addr> ChunkInfo<A> {
    pub fn of(start: A, rev: u64, entries: &[ChunkEntry<A>]) -> Self {
        Self {
            start,
            rev,
            entries: entries.len(),
            promoted: entries.iter().filter(|kept| kept.edit == PROMOTED).count(),
            first: entries.first().map(|kept| kept.range.first()),
            reach: entries.iter().map(|kept| kept.range.last()).max(),
        }
    }

    /// Entries of it from `source`.
    pub fn count(&self, source: EntrySource) -> usize {
        match source {
            EntrySource::Operator => self.entries - self.promoted,
            EntrySource::Promoted => self.promoted,
        }
    }
}

/// A chunk's entries as stored: the family byte, then each entry in order.
pub fn encode<A: Addr>(entries: &[ChunkEntry<A>]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(1 + entries.len() * kept_bytes::<A>());
    bytes.push(A::FAMILY);
    for kept in entries {
        kept.range.first().write_le(&mut bytes);
        bytes.push(kept.range.prefix());
        bytes.extend_from_slice(&(kept.edit as u32).to_le_bytes());
    }
    bytes
}

/// `None` for anything `encode` could not have written for this family.
pub fn decode<A: Addr>(bytes: &[u8]) -> Option<Vec<ChunkEntry<A>>> {
    let (&format, body) = bytes.split_first()?;
    let size = kept_bytes::<A>();
    if format != A::FAMILY || body.len() % size != 0 {
        return None;
    }
    let entries: Vec<ChunkEntry<A>> = body
        .chunks_exact(size)
        .map(|b| {
            let (first, rest) = b.split_at(A::BYTES);
            Some(ChunkEntry {
                range: Cidr::from_parts(A::read_le(first)?, rest[0])?,
                edit: u64::from(u32::from_le_bytes(rest[1..].try_into().ok()?)),
            })
        })
        .collect::<Option<_>>()?;
    entries
        .windows(2)
        .all(|w| w[0].range < w[1].range)
        .then_some(entries)
}

/// Removes `remove`, then adds `add` as edit `edit`, both sorted and without
/// duplicates; an entry already there keeps its provenance. Counts only what changed.
/// A promoted entry is the operator's to dismiss, never to remove by an edit
/// (`promote`); one the edit adds becomes the operator's, which no decay takes,
/// and counts as added.
pub fn apply<A: Addr>(
    entries: &mut Vec<ChunkEntry<A>>,
    add: &[Cidr<A>],
    remove: &[Cidr<A>],
    edit: u64,
) -> Changes {
    let before = entries.len();
    entries.retain(|kept| kept.edit == PROMOTED || remove.binary_search(&kept.range).is_err());
    let removed = before - entries.len();
    let added = merge_in(entries, add, |range, there| match there {
        Some(same) if same.edit != PROMOTED => (same, false),
        _ => (ChunkEntry { range, edit }, true),
    });
    Changes { added, removed }
}

/// Removes the promoted entries of `remove`, then adds `add` as promoted, both
/// sorted and without duplicates: what the holders' reports promote and let
/// decay, and what the operator dismisses (with nothing to add). An entry already
/// there stays as it is, the operator's or promoted, and so does the operator's
/// entry of a range in `remove`. Counts only what changed.
pub fn promote<A: Addr>(
    entries: &mut Vec<ChunkEntry<A>>,
    add: &[Cidr<A>],
    remove: &[Cidr<A>],
) -> Changes {
    let before = entries.len();
    entries.retain(|kept| kept.edit != PROMOTED || remove.binary_search(&kept.range).is_err());
    let removed = before - entries.len();
    let added = merge_in(entries, add, |range, there| match there {
        Some(same) => (same, false),
        None => (
            ChunkEntry {
                range,
                edit: PROMOTED,
            },
            true,
        ),
    });
    Changes { added, removed }
}

/// Merges the ranges of `add` (sorted, without duplicates) into `entries`: `keep`
/// says what a range becomes, given the entry of that range already there if any,
/// and whether that counts as added. Returns how many did.
fn merge_in<A: Addr>(
    entries: &mut Vec<ChunkEntry<A>>,
    add: &[Cidr<A>],
    keep: impl Fn(Cidr<A>, Option<ChunkEntry<A>>) -> (ChunkEntry<A>, bool),
) -> usize {
    let mut old = std::mem::take(entries).into_iter().peekable();
    let mut added = 0;
    for &range in add {
        while let Some(earlier) = old.next_if(|kept| kept.range < range) {
            entries.push(earlier);
        }
        let (kept, new) = keep(range, old.next_if(|kept| kept.range == range));
        entries.push(kept);
        added += usize::from(new);
    }
    entries.extend(old);
    added
}

/// Cuts entries arriving in address order into chunks of about `CHUNK_FILL`,
/// each begun at an entry's first address, the entries of one first address
/// (at most 129) kept together; one chunk is held at a time.
pub struct Filling<A = u32> {
    start: A,
    part: Vec<ChunkEntry<A>>,
}

impl<A: Addr> Filling<A> {
    /// The first chunk begins at `start`.
    pub fn new(start: A) -> Self {
        Self {
            start,
            part: Vec::with_capacity(CHUNK_FILL + 129),
        }
    }

    /// Adds the next entry; hands back the chunk it completed, if it did.
    pub fn push(&mut self, kept: ChunkEntry<A>) -> Option<(A, Vec<ChunkEntry<A>>)> {
        let full = self.part.len() >= CHUNK_FILL
            && self
                .part
                .last()
                .is_some_and(|last| last.range.first() != kept.range.first());
        let done = full.then(|| {
            let next = Vec::with_capacity(CHUNK_FILL + 129);
            let start = std::mem::replace(&mut self.start, kept.range.first());
            (start, std::mem::replace(&mut self.part, next))
        });
        self.part.push(kept);
        done
    }

    /// The last chunk, empty when no entry came.
    pub fn finish(self) -> (A, Vec<ChunkEntry<A>>) {
        (self.start, self.part)
    }
}

/// The entries of the chunk that starts at `start`, as chunks of at most
/// `CHUNK_ENTRIES`: itself when they fit, else parts of about `CHUNK_FILL`.
pub fn cut<A: Addr>(start: A, entries: Vec<ChunkEntry<A>>) -> Vec<(A, Vec<ChunkEntry<A>>)> {
    if entries.len() <= CHUNK_ENTRIES {
        return vec![(start, entries)];
    }
    let mut filling = Filling::new(start);
    let mut parts: Vec<(A, Vec<ChunkEntry<A>>)> = entries
        .into_iter()
        .filter_map(|kept| filling.push(kept))
        .collect();
    parts.push(filling.finish());
    parts
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::net::range::{Ipv4Range, Ipv6Range};

    fn range(text: &str) -> Ipv4Range {
        Ipv4Range::parse(text).unwrap()
    }

    fn kept(text: &str, edit: u64) -> ChunkEntry {
        ChunkEntry {
            range: range(text),
            edit,
        }
    }

    #[test]
    fn a_chunk_round_trips_and_refuses_what_it_did_not_write() {
        let entries = vec![
            kept("1.2.3.0/24", 7),
            kept("1.2.3.4", 9),
            kept("9.0.0.0/8", 1),
        ];
        let bytes = encode(&entries);
        assert_eq!(bytes.len(), 1 + 3 * 9);
        assert_eq!(decode(&bytes), Some(entries.clone()));
        assert_eq!(decode::<u32>(&bytes[..bytes.len() - 1]), None, "cut short");
        assert_eq!(decode::<u32>(&[6]), None, "another layout");
        let unsorted = encode(&[entries[2], entries[0]]);
        assert_eq!(decode::<u32>(&unsorted), None);
        assert_eq!(decode::<u32>(&encode::<u32>(&[])), Some(vec![]));
    }

    #[test]
    fn an_ipv6_chunk_keeps_its_own_layout_and_is_never_read_as_ipv4() {
        let kept6 = |text: &str, edit| ChunkEntry {
            range: Ipv6Range::parse(text).unwrap(),
            edit,
        };
        let entries = vec![
            kept6("2001:db8::/32", 3),
            kept6("2a00:1450::1", 4),
            kept6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 5),
        ];
        let bytes = encode(&entries);
        assert_eq!(
            (bytes[0], bytes.len()),
            (6, 1 + 3 * 21),
            "21 bytes an entry"
        );
        assert_eq!(decode(&bytes), Some(entries.clone()));
        assert_eq!(
            decode::<u32>(&bytes),
            None,
            "a chunk of another family is never read: an IPv6 chunk as IPv4"
        );
        assert_eq!(
            decode::<u128>(&encode::<u32>(&[])),
            None,
            "a chunk of another family is never read: an IPv4 chunk as IPv6"
        );
        assert_eq!(decode::<u128>(&bytes[..bytes.len() - 1]), None, "cut short");
        let info = ChunkInfo::of(0u128, 5, &entries);
        assert_eq!(
            (info.first, info.reach),
            (Some(0x2001_0db8 << 96), Some(u128::MAX))
        );
    }

    #[test]
    fn an_edit_counts_what_changed_and_keeps_the_provenance_of_what_stayed() {
        let mut entries = vec![kept("1.1.1.1", 1), kept("2.2.2.2", 1), kept("3.3.3.3", 1)];
        let changes = apply(
            &mut entries,
            &[range("1.1.1.1"), range("4.4.4.4")],
            &[range("2.2.2.2"), range("5.5.5.5")],
            2,
        );
        assert_eq!(
            changes,
            Changes {
                added: 1,
                removed: 1
            }
        );
        assert_eq!(
            entries,
            [kept("1.1.1.1", 1), kept("3.3.3.3", 1), kept("4.4.4.4", 2)]
        );
        let info = ChunkInfo::of(0, 2, &entries);
        assert_eq!(
            (info.entries, info.first, info.reach),
            (
                3,
                Some(range("1.1.1.1").first()),
                Some(range("4.4.4.4").first())
            )
        );
    }

    #[test]
    fn an_edit_never_removes_a_promoted_entry_and_takes_over_one_it_adds() {
        let mut entries = vec![
            kept("1.1.1.1", PROMOTED),
            kept("2.2.2.2", PROMOTED),
            kept("3.3.3.3", 1),
        ];
        let changes = apply(
            &mut entries,
            &[range("2.2.2.2"), range("3.3.3.3")],
            &[range("1.1.1.1"), range("3.3.3.3")],
            2,
        );
        assert_eq!(
            changes,
            Changes {
                added: 2,
                removed: 1
            },
            "2.2.2.2 became the operator's, 3.3.3.3 went and came back"
        );
        assert_eq!(
            entries,
            [
                kept("1.1.1.1", PROMOTED),
                kept("2.2.2.2", 2),
                kept("3.3.3.3", 2)
            ]
        );
        assert_eq!(
            (entries[0].source(), entries[1].source()),
            (EntrySource::Promoted, EntrySource::Operator)
        );
        let info = ChunkInfo::of(0, 2, &entries);
        assert_eq!(
            (
                info.entries,
                info.count(EntrySource::Operator),
                info.count(EntrySource::Promoted)
            ),
            (3, 2, 1)
        );
        let bytes = encode(&entries);
        assert_eq!(
            decode(&bytes),
            Some(entries),
            "PROMOTED fits a chunk's 32 bits"
        );
    }

    #[test]
    fn a_promotion_adds_what_is_absent_and_lets_go_of_promoted_entries_only() {
        let mut entries = vec![
            kept("1.1.1.1", 1),
            kept("2.2.2.2", PROMOTED),
            kept("3.3.3.3", PROMOTED),
        ];
        let changes = promote(
            &mut entries,
            &[range("1.1.1.1"), range("2.2.2.2"), range("4.4.4.0/24")],
            &[range("1.1.1.1"), range("3.3.3.3"), range("5.5.5.5")],
        );
        assert_eq!(
            changes,
            Changes {
                added: 1,
                removed: 1
            }
        );
        assert_eq!(
            entries,
            [
                kept("1.1.1.1", 1),
                kept("2.2.2.2", PROMOTED),
                kept("4.4.4.0/24", PROMOTED)
            ],
            "the operator's entry stays the operator's, whatever the reports say"
        );
        let dismissed = promote(&mut entries, &[], &[range("1.1.1.1"), range("2.2.2.2")]);
        assert_eq!(
            dismissed,
            Changes {
                added: 0,
                removed: 1
            }
        );
        assert_eq!(entries, [kept("1.1.1.1", 1), kept("4.4.4.0/24", PROMOTED)]);
    }

    #[test]
    fn a_chunk_over_its_bound_is_cut_between_two_first_addresses() {
        // Three entries at each first address: a cut never parts them.
        let entries: Vec<ChunkEntry> = (0..CHUNK_ENTRIES as u32)
            .flat_map(|n| {
                let first = 0x0800_0000 + (n << 8);
                [24, 28, 32].map(|prefix| ChunkEntry {
                    range: Ipv4Range::from_parts(first, prefix).unwrap(),
                    edit: 1,
                })
            })
            .collect();
        let parts = cut(5, entries.clone());
        assert_eq!(parts[0].0, 5);
        assert!(parts
            .iter()
            .all(|(_, part)| part.len() <= CHUNK_ENTRIES && !part.is_empty()));
        for pair in parts.windows(2) {
            let (_, before) = &pair[0];
            let (start, after) = &pair[1];
            assert_eq!(after[0].range.first(), *start);
            assert!(before.last().unwrap().range.first() < *start);
        }
        let joined: Vec<ChunkEntry> = parts.into_iter().flat_map(|(_, part)| part).collect();
        assert_eq!(joined, entries);
        assert_eq!(
            cut(7, entries[..10].to_vec()),
            [(7, entries[..10].to_vec())]
        );
    }

    proptest! {
        #[test]
        fn an_edit_of_a_chunk_is_the_edit_of_its_entries(
            old in proptest::collection::btree_set((any::<u32>(), 24u8..=32), 0..40),
            add in proptest::collection::btree_set((any::<u32>(), 24u8..=32), 0..20),
            remove in proptest::collection::btree_set((any::<u32>(), 24u8..=32), 0..20),
        ) {
            let ranges = |set: std::collections::BTreeSet<(u32, u8)>| {
                let mut ranges: Vec<Ipv4Range> = set
                    .into_iter()
                    .map(|(addr, prefix)| Ipv4Range::from_parts(addr & (u32::MAX << (32 - prefix)), prefix).unwrap())
                    .collect();
                ranges.sort();
                ranges.dedup();
                ranges
            };
            let (old, add, remove) = (ranges(old), ranges(add), ranges(remove));
            let mut model = crate::domain::operator_lists::list::FamilyEntries::new(old.clone());
            let expected = model.edit(add.clone(), remove.clone());
            let mut entries: Vec<ChunkEntry> = old.iter().map(|&range| ChunkEntry { range, edit: 1 }).collect();
            prop_assert_eq!(apply(&mut entries, &add, &remove, 2), expected);
            prop_assert_eq!(entries.iter().map(|kept| kept.range).collect::<Vec<_>>(), model.as_slice().to_vec());
            for kept in &entries {
                prop_assert_eq!(kept.edit == 1, old.contains(&kept.range) && !remove.contains(&kept.range));
            }
        }
    }
}
