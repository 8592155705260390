//! The items of a holder's Cloudflare IP list: what they challenge, merged into
//! the fewest CIDR blocks, and, when the list cannot hold all, the most relevant
//! part: newest first. Entries come in address order, a page at a time, so what
//! this holds is the items kept (at most the cap) and the run being merged.

use std::cmp::Reverse;

use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;

use crate::domain::feed::item::Blocks;
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::net::range::Cidr;
use crate::domain::time::UnixTime;

/// The lowest 64 bits: an IPv6 /64's hosts.
const HOSTS_64: u128 = u64::MAX as u128;

/// One item as Cloudflare takes it: an IPv4 address as itself (no `/32`), an
/// IPv4 block, or an IPv6 block of at most /64 (Cloudflare's narrowest).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ItemText(pub String);

/// An item and the newest entry it stands for, by which it ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub item: ItemText,
    pub newest: UnixTime,
}

/// The addresses an entry covers, as the family's integers: an IPv4 address, or
/// the /64 an IPv6 entry lies in (an address narrower than that goes as its /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    V4(u32),
    V6(u128, u128),
}

fn span(listed: Listed) -> Span {
    match listed {
        Listed::Ip(PublicIp::V4(ip)) => Span::V4(u32::from(ip.addr())),
        Listed::Ip(PublicIp::V6(ip)) => {
            let first = u128::from(ip.addr()) & !HOSTS_64;
            Span::V6(first, first | HOSTS_64)
        }
        Listed::Net64(net) => {
            let first = u128::from(net.addr());
            Span::V6(first, first | HOSTS_64)
        }
    }
}

/// Consecutive or overlapping entries of one family, being merged.
enum Run {
    V4 {
        last: u32,
        members: Vec<(u32, UnixTime)>,
    },
    V6 {
        last: u128,
        members: Vec<(u128, UnixTime)>,
    },
}

/// Ranks an item: newer first, then the lower address (its text, which is
/// unique) first; the heap keeps the lowest rank on top to drop it.
type Rank = (UnixTime, Reverse<ItemText>);

/// Builds the items from entries given in address order (as their keys sort),
/// keeping the `max` most relevant; counts what it leaves out.
pub struct Selection {
    max: usize,
    kept: BinaryHeap<Reverse<Rank>>,
    run: Option<Run>,
    items: u64,
}

impl Selection {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            kept: BinaryHeap::new(),
            run: None,
            items: 0,
        }
    }

    /// The next entry in address order.
    pub fn push(&mut self, listed: Listed, added_at: UnixTime) {
        match (span(listed), self.run.as_mut()) {
            (Span::V4(ip), Some(Run::V4 { last, members }))
                if u64::from(ip) <= u64::from(*last) + 1 =>
            {
                *last = (*last).max(ip);
                members.push((ip, added_at));
            }
            (Span::V6(first, end), Some(Run::V6 { last, members }))
                if first <= last.saturating_add(1) =>
            {
                *last = (*last).max(end);
                members.push((first, added_at));
            }
            (span, _) => {
                self.flush();
                self.run = Some(match span {
                    Span::V4(ip) => Run::V4 {
                        last: ip,
                        members: vec![(ip, added_at)],
                    },
                    Span::V6(first, end) => Run::V6 {
                        last: end,
                        members: vec![(first, added_at)],
                    },
                });
            }
        }
    }

    /// The run merged into the fewest blocks, each ranked as its newest entry.
    fn flush(&mut self) {
        match self.run.take() {
            None => {}
            Some(Run::V4 { last, members }) => self.blocks(members, last),
            Some(Run::V6 { last, members }) => self.blocks(members, last),
        }
    }

    fn blocks<A: crate::domain::net::family::Addr>(
        &mut self,
        members: Vec<(A, UnixTime)>,
        last: A,
    ) {
        let mut members = members.into_iter().peekable();
        let first = match members.peek() {
            Some((first, _)) => *first,
            None => return,
        };
        for block in Blocks::new(std::iter::once((first, last))) {
            let mut newest = UnixTime::default();
            while let Some((_, at)) = members.next_if(|(addr, _)| block.holds(*addr)) {
                newest = newest.max(at);
            }
            self.keep(block, newest);
        }
    }

    fn keep<A: crate::domain::net::family::Addr>(&mut self, block: Cidr<A>, newest: UnixTime) {
        self.items += 1;
        let rank = (newest, Reverse(ItemText(block.to_string())));
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
        self.flush();
        let left_out = self.items - self.kept.len() as u64;
        let items = self
            .kept
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse((newest, Reverse(item)))| Ranked { item, newest })
            .collect();
        (items, left_out)
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
            selection.push(listed, at);
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
}
