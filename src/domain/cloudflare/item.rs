//! The items of a holder's Cloudflare IP list: what they challenge, merged into
//! the fewest CIDR blocks, and, when the list cannot hold all, the most relevant
//! part: the holder's own entries (newest first), then the blocks the network
//! promoted, then the operator's (then by address). Entries come in address order
//! (each family's apart), a page at a time, so what this holds is the items kept
//! (at most the cap) and the run being merged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::domain::feed::item::{Blocks, FeedBlock};
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::net::family::Addr;
use crate::domain::net::ipv6::IPV4_MAPPED;
use crate::domain::net::range::Cidr;
use crate::domain::time::UnixTime;

/// The lowest 64 bits: an IPv6 /64's hosts.
const HOSTS_64: u128 = u64::MAX as u128;

/// One item as Cloudflare takes it: an IPv4 address as itself (no `/32`), an
/// IPv4 block, or an IPv6 block of at most /64 (Cloudflare's narrowest).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ItemText(pub String);

/// Whose an entry is, the least relevant first: what a list too small for all
/// keeps last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// A block of the operator's on the global list.
    #[default]
    Operator,
    /// A block of the global list the holders' reports promoted.
    Promoted,
    /// The holder's own entry.
    Own,
}

/// How relevant an entry is: its tier, then the newer (a global block, whose
/// snapshot keeps no time, ranks by its address alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Relevance {
    pub tier: Tier,
    pub newest: UnixTime,
}

impl Relevance {
    /// The holder's own entry, added at `added_at`.
    pub fn own(added_at: UnixTime) -> Self {
        Self {
            tier: Tier::Own,
            newest: added_at,
        }
    }

    /// A block of the global list.
    pub fn global(tier: Tier) -> Self {
        Self {
            tier,
            newest: UnixTime::default(),
        }
    }
}

/// An item and the most relevant entry it stands for, by which it ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub item: ItemText,
    pub relevance: Relevance,
}

/// The addresses an entry covers, as the family's integers: IPv4 ones as they
/// are, IPv6 ones widened to whole /64s (Cloudflare takes nothing narrower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    V4(u32, u32),
    V6(u128, u128),
}

impl Span {
    /// A holder's entry: an IPv6 address goes as its /64.
    pub fn of_entry(listed: Listed) -> Self {
        match listed {
            Listed::Ip(PublicIp::V4(ip)) => {
                let ip = u32::from(ip.addr());
                Self::V4(ip, ip)
            }
            Listed::Ip(PublicIp::V6(ip)) => Self::v6(u128::from(ip.addr()), u128::from(ip.addr())),
            Listed::Net64(net) => Self::v6(u128::from(net.addr()), u128::from(net.addr())),
        }
    }

    /// A block of the global list as a feed writes it.
    pub fn of_block(block: FeedBlock) -> Self {
        match block {
            FeedBlock::V4(range) => Self::V4(range.first(), range.last()),
            FeedBlock::V6(ip) | FeedBlock::V6Net64(ip) => {
                Self::v6(u128::from(ip.addr()), u128::from(ip.addr()))
            }
            FeedBlock::V6Range(range) => Self::v6(range.first(), range.last()),
        }
    }

    fn v6(first: u128, last: u128) -> Self {
        Self::V6(first & !HOSTS_64, last | HOSTS_64)
    }
}

/// One entry of a run: its first and last address, and its relevance.
type Member<A> = (A, A, Relevance);

/// Consecutive or overlapping entries of one family, being merged.
struct Run<A> {
    last: A,
    members: Vec<Member<A>>,
}

/// A block as the heap keeps it, in 48 bytes (its text is made once it is
/// kept for good): its rank, the more relevant first, then the lower address
/// first (its place: the first address, an IPv4 one IPv4-mapped, so that IPv4
/// ranks before IPv6), and its prefix. The heap keeps the lowest on top to drop it.
type Rank = (Relevance, Reverse<u128>, u8);

/// Builds the items from entries given in address order within each family
/// (as their keys sort), keeping the `max` most relevant; counts what it leaves out.
pub struct Selection {
    max: usize,
    kept: BinaryHeap<Reverse<Rank>>,
    v4: Option<Run<u32>>,
    v6: Option<Run<u128>>,
    items: u64,
}

impl Selection {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            kept: BinaryHeap::new(),
            v4: None,
            v6: None,
            items: 0,
        }
    }

    /// The next entry of its family in address order.
    pub fn push(&mut self, span: Span, relevance: Relevance) {
        match span {
            Span::V4(first, last) => {
                if let Some(run) = extend(&mut self.v4, (first, last, relevance)) {
                    self.blocks(run);
                }
            }
            Span::V6(first, last) => {
                if let Some(run) = extend(&mut self.v6, (first, last, relevance)) {
                    self.blocks(run);
                }
            }
        }
    }

    /// A run merged into the fewest blocks, each ranked as the most relevant
    /// entry that touches it.
    fn blocks<A: Addr + Into<u128>>(&mut self, run: Run<A>) {
        let Some(&(first, _, _)) = run.members.first() else {
            return;
        };
        let mut start = 0;
        for block in Blocks::new(std::iter::once((first, run.last))) {
            // Members are in order of their first address: one that ended before
            // this block touches none after it.
            while run
                .members
                .get(start)
                .is_some_and(|&(_, last, _)| last < block.first())
            {
                start += 1;
            }
            let relevance = run.members[start..]
                .iter()
                .take_while(|&&(first, _, _)| first <= block.last())
                .filter(|&&(_, last, _)| last >= block.first())
                .map(|&(_, _, relevance)| relevance)
                .max()
                .unwrap_or_default();
            self.keep(block, relevance);
        }
    }

    fn keep<A: Addr + Into<u128>>(&mut self, block: Cidr<A>, relevance: Relevance) {
        self.items += 1;
        let place = match A::BITS {
            128 => block.first().into(),
            _ => IPV4_MAPPED.0 | block.first().into(),
        };
        let rank = (relevance, Reverse(place), block.prefix());
        if self.kept.len() < self.max {
            self.kept.push(Reverse(rank));
        } else if self
            .kept
            .peek()
            .is_some_and(|Reverse(lowest)| *lowest < rank)
        {
            self.kept.pop();
            self.kept.push(Reverse(rank));
        }
    }

    /// The items kept, the most relevant first, and how many the cap left out.
    pub fn finish(mut self) -> (Vec<Ranked>, u64) {
        if let Some(run) = self.v4.take() {
            self.blocks(run);
        }
        if let Some(run) = self.v6.take() {
            self.blocks(run);
        }
        let left_out = self.items - self.kept.len() as u64;
        let items = self
            .kept
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse((relevance, Reverse(place), prefix))| Ranked {
                item: item_text(place, prefix),
                relevance,
            })
            .collect();
        (items, left_out)
    }
}

/// A kept block's text, from its place and prefix.
fn item_text(place: u128, prefix: u8) -> ItemText {
    let text = if place >> 32 == IPV4_MAPPED.0 >> 32 {
        Cidr::<u32>::from_parts(place as u32, prefix).map(|v4| v4.to_string())
    } else {
        Cidr::<u128>::from_parts(place, prefix).map(|v6| v6.to_string())
    };
    // A place and prefix `keep` took from a block: always one again.
    ItemText(text.unwrap_or_default())
}

/// `member` added to the run it touches, or a new run begun with it: answers the
/// run it ended, to be cut into blocks.
fn extend<A: Addr>(run: &mut Option<Run<A>>, member: Member<A>) -> Option<Run<A>> {
    let (first, last, _) = member;
    match run {
        Some(current) if current.last.after().is_none_or(|after| first <= after) => {
            current.last = current.last.max(last);
            current.members.push(member);
            None
        }
        _ => run.replace(Run {
            last,
            members: vec![member],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(text: &str) -> Listed {
        text.parse().unwrap()
    }

    fn select(entries: &[(&str, u64)], max: usize) -> (Vec<String>, u64) {
        let mut entries: Vec<(Listed, UnixTime)> = entries
            .iter()
            .map(|(ip, at)| (listed(ip), UnixTime(*at)))
            .collect();
        entries.sort_by_key(|(listed, _)| listed.key());
        let mut selection = Selection::new(max);
        for (listed, at) in entries {
            selection.push(Span::of_entry(listed), Relevance::own(at));
        }
        let (items, left_out) = selection.finish();
        (items.into_iter().map(|r| r.item.0).collect(), left_out)
    }

    #[test]
    fn a_single_address_goes_as_itself_and_an_ipv6_one_as_its_64() {
        let (items, left_out) = select(&[("81.2.69.7", 1), ("2a00:1450:1:2::5", 2)], 10);
        assert_eq!(items, ["2a00:1450:1:2::/64", "81.2.69.7"]);
        assert_eq!(left_out, 0);
    }

    #[test]
    fn two_hundred_fifty_six_consecutive_addresses_are_one_slash_24() {
        let entries: Vec<(String, u64)> = (0..256).map(|i| (format!("89.160.20.{i}"), i)).collect();
        let entries: Vec<(&str, u64)> = entries.iter().map(|(ip, at)| (ip.as_str(), *at)).collect();
        assert_eq!(
            select(&entries, 10),
            (vec!["89.160.20.0/24".to_owned()], 0),
            "256 consecutive addresses are one /24"
        );
    }

    #[test]
    fn a_run_is_cut_into_the_fewest_blocks_each_ranked_as_its_newest_entry() {
        let (items, _) = select(
            &[
                ("81.2.69.1", 5),
                ("81.2.69.2", 1),
                ("81.2.69.3", 2),
                ("81.2.69.4", 9),
            ],
            10,
        );
        // .1, .2/31 and .4: the last ranks newest, .1 next, the /31 by its newer member.
        assert_eq!(items, ["81.2.69.4", "81.2.69.1", "81.2.69.2/31"]);
    }

    #[test]
    fn adjacent_ipv6_64s_merge_and_overlapping_entries_count_once() {
        let (items, _) = select(
            &[
                ("2a00:1450:0:0::1", 1),
                ("2a00:1450:0:0::2", 3),
                ("2a00:1450:0:1::/64", 2),
            ],
            10,
        );
        assert_eq!(items, ["2a00:1450::/63"]);
    }

    #[test]
    fn the_cap_keeps_the_newest_and_counts_the_rest() {
        let (items, left_out) = select(
            &[
                ("81.2.69.10", 3),
                ("81.2.69.20", 1),
                ("81.2.69.30", 2),
                ("89.160.20.9", 3),
            ],
            2,
        );
        assert_eq!(
            items,
            ["81.2.69.10", "89.160.20.9"],
            "newest first, then by address"
        );
        assert_eq!(left_out, 2);
    }

    fn block(text: &str) -> FeedBlock {
        if text.contains(':') {
            FeedBlock::V6Range(Cidr::parse(text).unwrap())
        } else {
            FeedBlock::V4(Cidr::parse(text).unwrap())
        }
    }

    #[test]
    fn own_entries_go_first_newest_first_then_promoted_blocks_then_the_operators_by_address() {
        let mut selection = Selection::new(4);
        selection.push(
            Span::of_block(block("5.9.0.0/16")),
            Relevance::global(Tier::Operator),
        );
        selection.push(
            Span::of_entry(listed("81.2.69.10")),
            Relevance::own(UnixTime(1)),
        );
        selection.push(
            Span::of_entry(listed("81.2.69.20")),
            Relevance::own(UnixTime(2)),
        );
        selection.push(
            Span::of_block(block("89.160.20.9/32")),
            Relevance::global(Tier::Promoted),
        );
        selection.push(
            Span::of_block(block("100.0.0.0/24")),
            Relevance::global(Tier::Operator),
        );
        selection.push(
            Span::of_block(block("2a00:1450::/32")),
            Relevance::global(Tier::Operator),
        );
        let (items, left_out) = selection.finish();
        let items: Vec<String> = items.into_iter().map(|r| r.item.0).collect();
        assert_eq!(
            items,
            ["81.2.69.20", "81.2.69.10", "89.160.20.9", "5.9.0.0/16"],
            "own newest first, then the promoted, then the operator's lowest address"
        );
        assert_eq!(left_out, 2);
    }

    #[test]
    fn a_block_that_holds_an_own_entry_ranks_as_the_holders_own() {
        let mut selection = Selection::new(1);
        selection.push(
            Span::of_block(block("81.2.69.0/24")),
            Relevance::global(Tier::Operator),
        );
        selection.push(
            Span::of_entry(listed("81.2.69.7")),
            Relevance::own(UnixTime(5)),
        );
        selection.push(
            Span::of_block(block("89.160.20.9/32")),
            Relevance::global(Tier::Promoted),
        );
        let (items, left_out) = selection.finish();
        assert_eq!(items.len(), 1);
        assert_eq!(
            items[0].item.0, "81.2.69.0/24",
            "the own entry inside it counts once"
        );
        assert_eq!(items[0].relevance, Relevance::own(UnixTime(5)));
        assert_eq!(left_out, 1);
    }

    #[test]
    fn a_global_range_goes_as_its_fewest_blocks_and_an_ipv6_one_as_whole_64s() {
        let mut selection = Selection::new(10);
        // 81.2.69.1 to 81.2.69.6 as the global list may hold it, after its allow cuts.
        selection.push(
            Span::V4(0x5102_4501, 0x5102_4506),
            Relevance::global(Tier::Operator),
        );
        selection.push(
            Span::of_block(block("2a00:1450:0:0:8::/80")),
            Relevance::global(Tier::Operator),
        );
        let (items, _) = selection.finish();
        let mut items: Vec<String> = items.into_iter().map(|r| r.item.0).collect();
        items.sort();
        assert_eq!(
            items,
            [
                "2a00:1450::/64",
                "81.2.69.1",
                "81.2.69.2/31",
                "81.2.69.4/31",
                "81.2.69.6"
            ]
        );
    }
}
