//! The changes of an operator's list between published versions, so that a feed
//! since a cursor answers what changed instead of the whole list.
//!
//! Version `v` publishes, for each level `l` from 0 to the number of trailing zero
//! bits of `v`, the change over the versions `(v - 2^l, v]` (a Fenwick layout): any
//! span of versions is the symmetric difference of at most two pieces a level, so
//! a reader composes a few pieces however old its cursor, and a writer composes a
//! level from two pieces of the level below. A change is a set of addresses: those
//! that joined or left the list, one and the same thing (symmetric difference).

use serde::{Deserialize, Serialize};

use crate::domain::feed::item::Blocks;
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::{combine, hull, overlapping, Intervals, Op, Seek};
use crate::domain::net::ipv6::IPV4_MAPPED;
use crate::domain::net::range::Cidr;

/// Levels a version publishes at most: pieces up to 2^24 versions wide.
pub const MAX_LEVEL: u8 = 24;
/// A piece that would hold more intervals is published as `Piece::Reset`: a
/// cursor that old gets the whole list, which is then no larger than the change.
pub const MAX_DELTA_INTERVALS: usize = 1_000_000;

/// The addresses of each family whose membership changed, and, in the global
/// list's, those whose membership of its promoted part changed (`promoted`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionChange {
    pub v4: Intervals<u32>,
    pub v6: Intervals<u128>,
    /// Where a feed's label of a block (promoted or the operator's) may have
    /// changed, the block staying: the operator took over a promoted entry, or
    /// let go of one that covered it. Empty in pieces written before labels
    /// changed were published, and in every change of the allow lists: so in
    /// the only one an object's call carries (the holder's own allow list's),
    /// which is why it is never serialized.
    #[serde(skip)]
    pub promoted: PromotedChange,
}

/// The addresses of each family that joined or left the global list's promoted
/// part: what only the holders' reports hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromotedChange {
    pub v4: Intervals<u32>,
    pub v6: Intervals<u128>,
}

impl PromotedChange {
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl VersionChange {
    /// A change of IPv4 addresses only.
    pub fn ipv4(v4: Intervals<u32>) -> Self {
        Self {
            v4,
            ..Self::default()
        }
    }

    /// Intervals it holds, of both families, the promoted part's changes too.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len() + self.promoted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The change from one to the other, family by family: applying both is this.
    pub fn then(&self, later: &VersionChange) -> Self {
        Self {
            v4: combine(&self.v4, &later.v4, Op::Xor),
            v6: combine(&self.v6, &later.v6, Op::Xor),
            promoted: PromotedChange {
                v4: combine(&self.promoted.v4, &later.promoted.v4, Op::Xor),
                v6: combine(&self.promoted.v6, &later.promoted.v6, Op::Xor),
            },
        }
    }
}

/// One published piece of the changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// The addresses whose membership changed over the piece's versions.
    Changed(VersionChange),
    /// Too large a change, or one the operator lists' object no longer knows (it restarted with an
    /// unpublished change): a cursor before it starts afresh.
    Reset,
}

/// IPv4 intervals only: the layout of pieces written before IPv6, kept for a
/// change with no IPv6 part.
const FORMAT_CHANGED: u8 = 1;
const FORMAT_RESET: u8 = 2;
/// The count of IPv4 intervals, the IPv4 intervals, then the IPv6 ones.
const FORMAT_BOTH: u8 = 3;
/// The counts of the IPv4 intervals, the IPv6 ones and the promoted part's
/// IPv4 ones, then the four sets: the list's IPv4 and IPv6, the promoted
/// part's IPv4 and IPv6.
const FORMAT_PROMOTED: u8 = 4;

impl Piece {
    /// A change, or `Reset` when it is over the bound.
    pub fn of(change: VersionChange) -> Self {
        if change.len() > MAX_DELTA_INTERVALS {
            Self::Reset
        } else {
            Self::Changed(change)
        }
    }

    /// The piece `(v - 2^(l+1), v]` from its two halves of level `l`.
    pub fn join(earlier: &Piece, later: &Piece) -> Self {
        match (earlier, later) {
            (Self::Changed(a), Self::Changed(b)) => Self::of(a.then(b)),
            _ => Self::Reset,
        }
    }

    /// Little-endian: the format byte, then each interval's first and last address.
    pub fn encode(&self) -> Vec<u8> {
        let Self::Changed(change) = self else {
            return vec![FORMAT_RESET];
        };
        let promoted = &change.promoted;
        let mut bytes = Vec::with_capacity(
            13 + (change.v4.len() + promoted.v4.len()) * 8
                + (change.v6.len() + promoted.v6.len()) * 32,
        );
        if !promoted.is_empty() {
            bytes.push(FORMAT_PROMOTED);
            for count in [change.v4.len(), change.v6.len(), promoted.v4.len()] {
                bytes.extend_from_slice(&(count as u32).to_le_bytes());
            }
            write_intervals(&mut bytes, &change.v4);
            write_intervals(&mut bytes, &change.v6);
            write_intervals(&mut bytes, &promoted.v4);
            write_intervals(&mut bytes, &promoted.v6);
            return bytes;
        }
        if change.v6.is_empty() {
            bytes.push(FORMAT_CHANGED);
        } else {
            bytes.push(FORMAT_BOTH);
            bytes.extend_from_slice(&(change.v4.len() as u32).to_le_bytes());
        }
        write_intervals(&mut bytes, &change.v4);
        write_intervals(&mut bytes, &change.v6);
        bytes
    }

    /// `None` for anything `encode` could not have written. A piece of a
    /// format newer than this build knows (a writer deployed first, or a
    /// rollback) reads as `Reset`: a cursor before it starts afresh.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        match bytes.split_first()? {
            (&format, _) if format > FORMAT_PROMOTED => Some(Self::Reset),
            (&FORMAT_RESET, []) => Some(Self::Reset),
            (&FORMAT_CHANGED, body) => {
                Some(Self::Changed(VersionChange::ipv4(read_intervals(body)?)))
            }
            (&FORMAT_BOTH, body) => {
                let (count, body) = body.split_at_checked(4)?;
                let count = u32::from_le_bytes(count.try_into().ok()?) as usize;
                let (v4, v6) = body.split_at_checked(count.checked_mul(8)?)?;
                Some(Self::Changed(VersionChange {
                    v4: read_intervals(v4)?,
                    v6: read_intervals(v6)?,
                    promoted: PromotedChange::default(),
                }))
            }
            (&FORMAT_PROMOTED, body) => {
                let (counts, mut body) = body.split_at_checked(12)?;
                let count = |at: usize| -> Option<usize> {
                    Some(u32::from_le_bytes(counts.get(at..at + 4)?.try_into().ok()?) as usize)
                };
                let mut next = |count: usize, width: usize| -> Option<&[u8]> {
                    let (part, rest) = body.split_at_checked(count.checked_mul(width)?)?;
                    body = rest;
                    Some(part)
                };
                let (v4, v6, p4) = (
                    next(count(0)?, 8)?,
                    next(count(4)?, 32)?,
                    next(count(8)?, 8)?,
                );
                // The rest is the promoted part's IPv6 intervals.
                let p6 = body;
                Some(Self::Changed(VersionChange {
                    v4: read_intervals(v4)?,
                    v6: read_intervals(v6)?,
                    promoted: PromotedChange {
                        v4: read_intervals(p4)?,
                        v6: read_intervals(p6)?,
                    },
                }))
            }
            _ => None,
        }
    }
}

fn write_intervals<A: Addr>(bytes: &mut Vec<u8>, set: &[(A, A)]) {
    for &(first, last) in set {
        first.write_le(bytes);
        last.write_le(bytes);
    }
}

/// Sorted, disjoint, never adjacent intervals, or `None`.
fn read_intervals<A: Addr>(body: &[u8]) -> Option<Intervals<A>> {
    if !body.len().is_multiple_of(2 * A::BYTES) {
        return None;
    }
    let set: Intervals<A> = body
        .chunks_exact(2 * A::BYTES)
        .map(|b| Some((A::read_le(&b[..A::BYTES])?, A::read_le(&b[A::BYTES..])?)))
        .collect::<Option<_>>()?;
    let ordered = set.iter().all(|(a, b)| a <= b)
        && set
            .windows(2)
            .all(|w| w[0].1.after().is_some_and(|after| after < w[1].0));
    ordered.then_some(set)
}

/// The levels version `version` publishes a piece at.
pub fn levels(version: u64) -> impl Iterator<Item = u8> {
    let top = (version.trailing_zeros() as u8).min(MAX_LEVEL);
    (0..=top).filter(move |_| version > 0)
}

/// The first version a piece covers, after the one it starts from.
pub fn piece_start(version: u64, level: u8) -> u64 {
    version.saturating_sub(1 << level)
}

/// The pieces whose composition is the change from version `from` to `to`, the
/// newest first: at each step the widest piece that ends there and starts no
/// earlier than `from`. Empty when `from >= to`.
pub fn cover(from: u64, to: u64) -> Vec<(u64, u8)> {
    let mut pieces = Vec::new();
    let mut at = to;
    while at > from {
        let mut level = 0;
        while level < MAX_LEVEL
            && at.trailing_zeros() > u32::from(level)
            && at - (1 << (level + 1)) >= from
        {
            level += 1;
        }
        pieces.push((at, level));
        at -= 1 << level;
    }
    pieces
}

/// A list's intervals that touch (hold or neighbour) an address of `change`:
/// with `change`, they hold every maximal interval of both versions that differs.
pub fn touching<A: Addr>(set: &(impl Seek<A> + ?Sized), change: &[(A, A)]) -> Intervals<A> {
    let mut out: Intervals<A> = Vec::new();
    for &(first, last) in change {
        for interval in set
            .from(first.before().unwrap_or(first))
            .take_while(|&(start, _)| last.after().is_none_or(|after| start <= after))
        {
            if out.last() != Some(&interval) {
                out.push(interval);
            }
        }
    }
    out
}

/// Whether more than `cap` intervals of `set` touch `change`, counted without
/// holding them: what a delta would work out in memory.
pub fn touches_more_than<A: Addr>(
    set: &(impl Seek<A> + ?Sized),
    change: &[(A, A)],
    cap: usize,
) -> bool {
    let mut count = 0;
    for &(first, last) in change {
        count += set
            .from(first.before().unwrap_or(first))
            .take_while(|&(start, _)| last.after().is_none_or(|after| start <= after))
            .take(cap + 1 - count.min(cap + 1))
            .count();
        if count > cap {
            return true;
        }
    }
    false
}

/// How a feed's CIDR blocks of one family change from one version of the
/// challenged set to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockChanges<A = u32> {
    /// Blocks of the old version the new one has not.
    pub deleted: Vec<Cidr<A>>,
    /// Blocks of the new version the old one had not.
    pub added: Vec<Cidr<A>>,
    /// Blocks of both versions whose label (promoted or the operator's) may
    /// have changed (`relabeled`): a feed names them again.
    pub relabeled: Vec<Cidr<A>>,
}

impl<A> Default for BlockChanges<A> {
    fn default() -> Self {
        Self {
            deleted: Vec::new(),
            added: Vec::new(),
            relabeled: Vec::new(),
        }
    }
}

/// The blocks of the challenged set now (the global list without `allow`)
/// that hold an address of `promoted_change` and are none of the blocks
/// `added` names: blocks that stayed while what of them only the holders'
/// reports hold changed, so that their label may have changed. A feed's
/// label of a block is read from the promoted part, whole blocks only
/// (`Source::of_global`).
pub fn relabeled<A: Addr>(
    global: &(impl Seek<A> + ?Sized),
    promoted_change: &[(A, A)],
    allow: &[(A, A)],
    added: &[Cidr<A>],
) -> Vec<Cidr<A>> {
    let around = touching(global, promoted_change);
    let Some(span) = hull(&around, &[]) else {
        return Vec::new();
    };
    let stayed: Vec<Cidr<A>> =
        Blocks::new(combine(&around, overlapping(allow, span), Op::Minus).into_iter())
            .filter(|block| !overlapping(promoted_change, (block.first(), block.last())).is_empty())
            .collect();
    sorted_minus(&stayed, added)
}

/// The blocks a feed drops and adds when the global list changes by
/// `global_change` and the allow list by `allow_change`, to `allow`: `around` is
/// what `touching` gives for the new global list and the union of both changes.
/// Every maximal interval of either version's challenged set (the global list
/// without the allow list) is either within `around` and the changes or the same
/// in both, so only the blocks there can differ, and only those are compared.
pub fn block_changes<A: Addr>(
    around: &[(A, A)],
    global_change: &[(A, A)],
    allow: &[(A, A)],
    allow_change: &[(A, A)],
) -> BlockChanges<A> {
    // The blocks before and after lie within the blocks around and the global
    // change: only the allow list's intervals there are read, so that a delta
    // costs what changed, not the allow list's size.
    let Some(span) = hull(around, global_change) else {
        return BlockChanges::default();
    };
    let (allow, allow_change) = (overlapping(allow, span), overlapping(allow_change, span));
    let old = combine(around, global_change, Op::Xor);
    let old_allow = combine(allow, allow_change, Op::Xor);
    let blocks = |set: &[(A, A)], allow: &[(A, A)]| -> Vec<Cidr<A>> {
        Blocks::new(combine(set, allow, Op::Minus).into_iter()).collect()
    };
    let (old, new) = (blocks(&old, &old_allow), blocks(around, allow));
    BlockChanges {
        deleted: sorted_minus(&old, &new),
        added: sorted_minus(&new, &old),
        relabeled: Vec::new(),
    }
}

/// Where a change of the allow list moves a holder's own entries, each family
/// apart: those it now holds leave the feed, those it no longer holds join it.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowMoves {
    /// Addresses the allow list holds now and did not.
    pub hidden: Intervals,
    /// Addresses the allow list held and does not now.
    pub shown: Intervals,
    #[serde(default)]
    pub hidden6: Intervals<u128>,
    #[serde(default)]
    pub shown6: Intervals<u128>,
}

impl AllowMoves {
    /// `change` is the allow list's change, `allow` and `allow6` its new version.
    /// The IPv6 intervals leave out `::ffff:0:0/96`: an address there is an IPv4
    /// one, moved by the IPv4 intervals, and the holder's object need not read
    /// every IPv4 entry to find none of them IPv6.
    pub fn of(change: &VersionChange, allow: &[(u32, u32)], allow6: &[(u128, u128)]) -> Self {
        // Only the allow list's intervals within the change's reach matter.
        let allow = hull(&change.v4, &[]).map_or(&[][..], |span| overlapping(allow, span));
        let allow6 = hull(&change.v6, &[]).map_or(&[][..], |span| overlapping(allow6, span));
        let ipv6 = |op| combine(&combine(&change.v6, allow6, op), &[IPV4_MAPPED], Op::Minus);
        Self {
            hidden: combine(&change.v4, allow, Op::Both),
            shown: combine(&change.v4, allow, Op::Minus),
            hidden6: ipv6(Op::Both),
            shown6: ipv6(Op::Minus),
        }
    }

    /// Intervals of both families and both kinds.
    pub fn len(&self) -> usize {
        self.hidden.len() + self.shown.len() + self.hidden6.len() + self.shown6.len()
    }

    /// The moves of two allow lists at once, each kind united. An entry moved by
    /// one and still held by the other is moved once too often, which a feed
    /// forgives: a drop of what the firewall lacks does nothing, and an entry to
    /// hold that another list still governs is left out as every entry is.
    pub fn and(&self, other: &Self) -> Self {
        Self {
            hidden: combine(&self.hidden, &other.hidden, Op::Union),
            shown: combine(&self.shown, &other.shown, Op::Union),
            hidden6: combine(&self.hidden6, &other.hidden6, Op::Union),
            shown6: combine(&self.shown6, &other.shown6, Op::Union),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The blocks of `a` that are not in `b`, both sorted.
fn sorted_minus<A: Addr>(a: &[Cidr<A>], b: &[Cidr<A>]) -> Vec<Cidr<A>> {
    let mut rest = Vec::new();
    let mut j = 0;
    for &block in a {
        while b.get(j).is_some_and(|&other| other < block) {
            j += 1;
        }
        if b.get(j) != Some(&block) {
            rest.push(block);
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::net::intervals::union_of_sorted;
    use crate::domain::net::range::Ipv4Range;
    use crate::domain::operator_lists::snapshot::covers;

    #[test]
    fn a_span_of_versions_is_a_few_aligned_pieces_newest_first() {
        assert_eq!(cover(0, 1), [(1, 0)]);
        assert_eq!(cover(0, 8), [(8, 3)]);
        assert_eq!(cover(5, 12), [(12, 2), (8, 1), (6, 0)]);
        assert_eq!(cover(7, 7), []);
        assert_eq!(levels(12).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(levels(0).count(), 0);
        assert_eq!(levels(1 << 40).count(), usize::from(MAX_LEVEL) + 1);
        assert_eq!(piece_start(12, 2), 8);
    }

    #[test]
    fn intervals_touching_a_change_are_counted_up_to_a_cap() {
        let set: Intervals = vec![(1, 1), (3, 3), (5, 5), (9, 9)];
        assert!(!touches_more_than(set.as_slice(), &[(0, 6)], 3));
        assert!(touches_more_than(set.as_slice(), &[(0, 6)], 2));
        assert!(touches_more_than(set.as_slice(), &[(0, 2), (8, 9)], 1));
        assert!(
            !touches_more_than(set.as_slice(), &[(11, 20)], 0),
            "(9, 9) touches 10, not 11"
        );
        assert_eq!(touching(set.as_slice(), &[(0, 6)]).len(), 3);
    }

    #[test]
    fn pieces_round_trip_and_refuse_what_they_did_not_write() {
        let ipv4 = |set: Intervals| Piece::Changed(VersionChange::ipv4(set));
        let piece = ipv4(vec![(1, 1), (3, 9), (u32::MAX, u32::MAX)]);
        assert_eq!(Piece::decode(&piece.encode()), Some(piece.clone()));
        assert_eq!(piece.encode()[0], 1, "laid out as before IPv6");
        assert_eq!(Piece::decode(&Piece::Reset.encode()), Some(Piece::Reset));
        let bytes = piece.encode();
        assert_eq!(Piece::decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Piece::decode(&ipv4(vec![(3, 9), (1, 1)]).encode()), None);
        assert_eq!(
            Piece::decode(&ipv4(vec![(1, 1), (2, 9)]).encode()),
            None,
            "adjacent"
        );
        assert_eq!(Piece::join(&piece, &Piece::Reset), Piece::Reset);

        let both = Piece::Changed(VersionChange {
            v4: vec![(1, 1)],
            v6: vec![(0, 0), (5, 7), (u128::MAX, u128::MAX)],
            ..VersionChange::default()
        });
        let bytes = both.encode();
        assert_eq!(
            (bytes[0], bytes.len()),
            (3, 1 + 4 + 8 + 3 * 32),
            "a piece carries its whole IPv6 part beside the IPv4 one"
        );
        assert_eq!(
            Piece::decode(&bytes),
            Some(both.clone()),
            "a piece carries its whole IPv6 part beside the IPv4 one"
        );
        assert_eq!(Piece::decode(&bytes[..bytes.len() - 1]), None, "cut short");
        assert_eq!(Piece::decode(&bytes[..7]), None, "cut in its IPv4 part");
        let ipv6_only = Piece::Changed(VersionChange {
            v4: vec![],
            v6: vec![(1 << 100, (1 << 100) + 5)],
            ..VersionChange::default()
        });
        assert_eq!(Piece::decode(&ipv6_only.encode()), Some(ipv6_only.clone()));
        assert_eq!(
            Piece::join(&both, &ipv6_only),
            Piece::Changed(VersionChange {
                v4: vec![(1, 1)],
                v6: vec![
                    (0, 0),
                    (5, 7),
                    (1 << 100, (1 << 100) + 5),
                    (u128::MAX, u128::MAX)
                ],
                ..VersionChange::default()
            })
        );
    }

    #[test]
    fn a_piece_carries_its_promoted_parts_change_and_composes_it() {
        let labelled = Piece::Changed(VersionChange {
            v4: vec![(1, 1)],
            v6: vec![],
            promoted: PromotedChange {
                v4: vec![(5, 6)],
                v6: vec![(9, 9)],
            },
        });
        let bytes = labelled.encode();
        assert_eq!(
            (bytes[0], bytes.len()),
            (4, 1 + 12 + 8 + 8 + 32),
            "the counts, then the list's IPv4 part, the promoted IPv4 and IPv6 parts"
        );
        assert_eq!(Piece::decode(&bytes), Some(labelled.clone()));
        assert_eq!(Piece::decode(&bytes[..bytes.len() - 1]), None, "cut short");
        assert_eq!(Piece::decode(&bytes[..12]), None, "cut in its counts");
        assert_eq!(
            Piece::decode(&[5, 1, 2, 3]),
            Some(Piece::Reset),
            "a piece of a newer format starts a cursor afresh"
        );
        assert_eq!(
            Piece::join(&labelled, &labelled),
            Piece::Changed(VersionChange::default()),
            "a label moved and moved back is no change"
        );
        let ipv4 = Piece::Changed(VersionChange::ipv4(vec![(1, 1)]));
        assert_eq!(
            ipv4.encode()[0],
            1,
            "a piece with no promoted change is laid out as before"
        );
        assert_eq!(
            Piece::join(&ipv4, &labelled),
            Piece::Changed(VersionChange {
                promoted: PromotedChange {
                    v4: vec![(5, 6)],
                    v6: vec![(9, 9)],
                },
                ..VersionChange::default()
            })
        );
    }

    #[test]
    fn a_block_that_stayed_while_its_promoted_part_changed_is_named_again() {
        let r = |text: &str| Ipv4Range::parse(text).unwrap();
        let span = |text: &str| (r(text).first(), r(text).last());
        let global = [span("10.0.0.0/24"), span("10.0.2.7")];
        // The operator took over 10.0.0.5 and 10.0.2.7, promoted before.
        let promoted = [span("10.0.0.5"), span("10.0.2.7")];
        assert_eq!(
            relabeled(global.as_slice(), &promoted, &[], &[]),
            [r("10.0.0.0/24"), r("10.0.2.7")]
        );
        // The allow list splits the /24: only the block holding the address is named.
        let allow = [span("10.0.0.128/25")];
        assert_eq!(
            relabeled(global.as_slice(), &promoted, &allow, &[]),
            [r("10.0.0.0/25"), r("10.0.2.7")]
        );
        assert_eq!(
            relabeled(global.as_slice(), &promoted, &[], &[r("10.0.2.7")]),
            [r("10.0.0.0/24")],
            "a block the delta adds is named once"
        );
        assert!(relabeled(global.as_slice(), &[], &[], &[]).is_empty());
    }

    #[test]
    fn one_address_added_next_to_a_block_changes_the_blocks_around_it_only() {
        let r = |text: &str| Ipv4Range::parse(text).unwrap();
        // 10.0.0.0/24 was listed; 10.0.1.0/24 joins it, so the feed now shows one /23.
        let new = [(r("10.0.0.0").first(), r("10.0.1.255").first())];
        let change = [(r("10.0.1.0").first(), r("10.0.1.255").first())];
        let changes = block_changes(&touching(new.as_slice(), &change), &change, &[], &[]);
        assert_eq!(changes.deleted, [r("10.0.0.0/24")]);
        assert_eq!(changes.added, [r("10.0.0.0/23")]);
        // The allow list hides half of what joined.
        let allow = [(r("10.0.1.128").first(), r("10.0.1.255").first())];
        let changes = block_changes(&touching(new.as_slice(), &change), &change, &allow, &[]);
        assert_eq!(
            (changes.deleted, changes.added),
            (vec![], vec![r("10.0.1.0/25")])
        );
    }

    #[test]
    fn ipv6_moves_leave_out_the_ipv4_mapped_addresses() {
        let whole = VersionChange {
            v4: vec![],
            v6: vec![(0, u128::MAX)],
            ..VersionChange::default()
        };
        let moves = AllowMoves::of(&whole, &[], &[(0, u128::MAX)]);
        let mapped = 0xffff_u128 << 32;
        assert_eq!(
            moves.hidden6,
            [(0, mapped - 1), (mapped + (1 << 32), u128::MAX)],
            "an IPv6 move leaves out the IPv4-mapped addresses"
        );
        assert!(moves.shown6.is_empty() && moves.hidden.is_empty());
        assert_eq!(moves.len(), 2);
    }

    fn set_strategy() -> impl Strategy<Value = Intervals> {
        proptest::collection::vec((0u32..400, 0u32..40), 0..8).prop_map(|mut spans| {
            spans.sort();
            union_of_sorted(spans.into_iter().map(|(first, len)| (first, first + len)))
        })
    }

    fn all_blocks(set: &[(u32, u32)], allow: &[(u32, u32)]) -> Vec<Ipv4Range> {
        Blocks::new(combine(set, allow, Op::Minus).into_iter()).collect()
    }

    proptest! {
        #[test]
        fn the_block_changes_turn_the_old_feed_into_the_new_one(
            old in set_strategy(),
            new in set_strategy(),
            old_allow in set_strategy(),
            new_allow in set_strategy(),
        ) {
            let change = combine(&old, &new, Op::Xor);
            let allow_change = combine(&old_allow, &new_allow, Op::Xor);
            let around = touching(new.as_slice(), &combine(&change, &allow_change, Op::Union));
            let changes = block_changes(&around, &change, &new_allow, &allow_change);
            let (before, after) = (all_blocks(&old, &old_allow), all_blocks(&new, &new_allow));
            prop_assert_eq!(changes.deleted, sorted_minus(&before, &after));
            prop_assert_eq!(changes.added, sorted_minus(&after, &before));
        }

        #[test]
        fn an_allow_change_hides_what_it_now_holds_and_shows_what_it_let_go(
            old_allow in set_strategy(),
            new_allow in set_strategy(),
            addr in 0u32..450,
        ) {
            let moves = AllowMoves::of(&VersionChange::ipv4(combine(&old_allow, &new_allow, Op::Xor)), &new_allow, &[]);
            let (before, after) = (covers(&old_allow, addr), covers(&new_allow, addr));
            prop_assert_eq!(covers(&moves.hidden, addr), !before && after);
            prop_assert_eq!(covers(&moves.shown, addr), before && !after);
        }

        #[test]
        fn composed_pieces_are_the_change_between_any_two_versions(
            versions in proptest::collection::vec(set_strategy(), 2..20),
            from in 0usize..20,
            to in 0usize..20,
        ) {
            let (from, to) = (from % versions.len(), to % versions.len());
            prop_assume!(from < to);
            // Each version's pieces as the operator lists' object makes them, level by level.
            let mut pieces = std::collections::HashMap::new();
            for v in 1..versions.len() as u64 {
                for level in levels(v) {
                    let piece = if level == 0 {
                        Piece::Changed(VersionChange::ipv4(combine(&versions[v as usize - 1], &versions[v as usize], Op::Xor)))
                    } else {
                        let half = 1u64 << (level - 1);
                        Piece::join(&pieces[&(v - half, level - 1)], &pieces[&(v, level - 1)])
                    };
                    pieces.insert((v, level), piece);
                }
            }
            let mut change = Vec::new();
            for key in cover(from as u64, to as u64) {
                let Piece::Changed(set) = &pieces[&key] else { unreachable!("small sets") };
                change = combine(&change, &set.v4, Op::Xor);
            }
            prop_assert_eq!(change, combine(&versions[from], &versions[to], Op::Xor));
        }
    }
}
