//! A whole feed merged into the fewest CIDR blocks (`aggregate=1`): items come
//! in address order, and those of one family that touch or overlap (and, where
//! the format carries an origin and an expiry, that share both) become one run,
//! written as the blocks that cover it exactly. 256 consecutive addresses are
//! one /24. Holds one run at a time, whatever the list's size.

use std::collections::VecDeque;

use crate::domain::feed::item::{Blocks, FeedBlock, FeedItem};
use crate::domain::time::UnixTime;

/// Which items may merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merging {
    /// The text list and the appliance files: any items that touch. A merged
    /// block lasts as long as its longest-lived item (forever if one is), so
    /// that nothing leaves the firewall before it leaves the list; an earlier
    /// expiry shows in the next pull.
    Anything,
    /// The JSON feed, which says of each item whose it is and until when: only
    /// items with the same origin and the same expiry.
    SameOriginAndExpiry,
}

/// An item's addresses as a closed interval in 128 bits, and its family.
fn interval(block: FeedBlock) -> (bool, u128, u128) {
    match block {
        FeedBlock::V4(range) => (true, range.first().into(), range.last().into()),
        FeedBlock::V6(ip) => (false, ip.addr().into(), ip.addr().into()),
        FeedBlock::V6Net64(net) => {
            let first = u128::from(net.addr());
            (false, first, first | u128::from(u64::MAX))
        }
        FeedBlock::V6Range(range) => (false, range.first(), range.last()),
    }
}

/// Consecutive items being merged.
struct Run {
    /// The first item, written as it came when nothing joined it.
    item: FeedItem,
    v4: bool,
    first: u128,
    last: u128,
    items: u64,
}

pub struct Aggregate {
    merging: Merging,
    run: Option<Run>,
    ready: VecDeque<FeedItem>,
}

impl Aggregate {
    pub fn new(merging: Merging) -> Self {
        Self {
            merging,
            run: None,
            ready: VecDeque::new(),
        }
    }

    /// Takes the next item in address order: it joins the run, or ends it.
    pub fn push(&mut self, item: FeedItem) {
        let (v4, first, last) = interval(item.block);
        if let Some(run) = &mut self.run {
            let joins = run.v4 == v4
                && first <= run.last.saturating_add(1)
                && match self.merging {
                    Merging::Anything => true,
                    Merging::SameOriginAndExpiry => {
                        run.item.source == item.source && run.item.expires_at == item.expires_at
                    }
                };
            if joins {
                run.last = run.last.max(last);
                run.items += 1;
                let merged = &mut run.item;
                merged.expires_at = longest(merged.expires_at, item.expires_at);
                if merged.comment != item.comment {
                    merged.comment = None;
                }
                // A merged block ranks as its most relevant item, the newest
                // own entry first, when a feed is cut (`cap::Rank`). JSON merges
                // one source only, and text and the files write no source.
                merged.source = merged.source.min(item.source);
                merged.added_at = merged.added_at.max(item.added_at);
                return;
            }
        }
        self.finish();
        self.run = Some(Run {
            item,
            v4,
            first,
            last,
            items: 1,
        });
    }

    /// Ends the run: its blocks are ready. After the last item.
    pub fn finish(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        if run.items == 1 {
            self.ready.push_back(run.item);
            return;
        }
        let block = |block| FeedItem {
            block,
            ..run.item.clone()
        };
        if run.v4 {
            // Both ends came from IPv4 blocks, so they fit in 32 bits.
            let (first, last) = (run.first as u32, run.last as u32);
            let blocks = Blocks::new(std::iter::once((first, last)));
            self.ready
                .extend(blocks.map(|range| block(FeedBlock::V4(range))));
        } else {
            let blocks = Blocks::<_, u128>::new(std::iter::once((run.first, run.last)));
            self.ready
                .extend(blocks.map(|range| block(FeedBlock::V6Range(range))));
        }
    }

    /// The next merged item, once its run has ended.
    pub fn pop(&mut self) -> Option<FeedItem> {
        self.ready.pop_front()
    }
}

/// The later of two expiries, where `None` is never.
fn longest(a: Option<UnixTime>, b: Option<UnixTime>) -> Option<UnixTime> {
    a.zip(b).map(|(a, b)| a.max(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::item::Source;
    use crate::domain::net::ipv6::PublicIpv6;
    use crate::domain::net::range::{Ipv4Range, Ipv6Range};

    fn v4(text: &str, source: Source, expires_at: Option<u64>) -> FeedItem {
        FeedItem {
            added_at: None,
            block: FeedBlock::V4(Ipv4Range::parse(text).unwrap()),
            source,
            expires_at: expires_at.map(UnixTime),
            comment: None,
        }
    }

    fn run(merging: Merging, items: Vec<FeedItem>) -> Vec<FeedItem> {
        let mut aggregate = Aggregate::new(merging);
        let mut out = Vec::new();
        for item in items {
            aggregate.push(item);
            out.extend(std::iter::from_fn(|| aggregate.pop()));
        }
        aggregate.finish();
        out.extend(std::iter::from_fn(|| aggregate.pop()));
        out
    }

    fn texts(items: &[FeedItem]) -> Vec<String> {
        items.iter().map(FeedItem::text).collect()
    }

    #[test]
    fn two_hundred_fifty_six_consecutive_addresses_are_one_slash_24() {
        let items = (0..=255)
            .map(|i| v4(&format!("198.51.100.{i}"), Source::Personal, None))
            .collect();
        assert_eq!(texts(&run(Merging::Anything, items)), ["198.51.100.0/24"]);
    }

    #[test]
    fn a_run_is_the_fewest_blocks_that_cover_it_exactly_and_gaps_stay() {
        let items = [
            "8.8.8.1",
            "8.8.8.2",
            "8.8.8.3",
            "8.8.8.4",
            "8.8.8.9",
            "9.0.0.0/8",
        ]
        .iter()
        .map(|text| v4(text, Source::Personal, None))
        .collect();
        assert_eq!(
            texts(&run(Merging::Anything, items)),
            ["8.8.8.1", "8.8.8.2/31", "8.8.8.4", "8.8.8.9", "9.0.0.0/8"]
        );
    }

    #[test]
    fn what_a_block_holds_merges_into_it_and_an_item_alone_comes_out_as_it_came() {
        let mut alone = v4("203.0.113.7", Source::Personal, Some(50));
        alone.comment = Some("scanner".into());
        let items = vec![
            v4("45.0.0.0/8", Source::Operator, None),
            v4("45.1.2.3", Source::Personal, Some(100)),
            v4("47.0.0.0", Source::Personal, Some(100)),
            alone.clone(),
        ];
        let merged = run(Merging::Anything, items);
        assert_eq!(texts(&merged), ["45.0.0.0/8", "47.0.0.0", "203.0.113.7"]);
        assert_eq!(
            merged[0].expires_at, None,
            "as long as its longest-lived item: forever"
        );
        assert_eq!(merged[2], alone);
        // A holder's /64 alone stays the /64 it was (appliance files write it so).
        let net = FeedItem {
            added_at: None,
            block: FeedBlock::V6Net64(
                PublicIpv6::from_addr("2a00:1450:4001:80a::".parse().unwrap()).unwrap(),
            ),
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        assert_eq!(run(Merging::Anything, vec![net.clone()]), [net]);
    }

    #[test]
    fn a_merged_item_keeps_a_comment_all_its_items_said_and_no_other() {
        let said = |text: &str, comment: &str| FeedItem {
            comment: Some(comment.into()),
            ..v4(text, Source::Personal, None)
        };
        let merged = run(
            Merging::Anything,
            vec![
                said("8.8.8.0", "scan"),
                said("8.8.8.1", "scan"),
                said("8.8.8.4", "scan"),
                said("8.8.8.5", "brute force"),
            ],
        );
        assert_eq!(texts(&merged), ["8.8.8.0/31", "8.8.8.4/31"]);
        assert_eq!(merged[0].comment.as_deref(), Some("scan"));
        assert_eq!(merged[1].comment, None, "they said different things");
    }

    #[test]
    fn a_merged_block_ranks_as_its_newest_own_entry() {
        let own = |text: &str, at: u64| FeedItem {
            added_at: Some(UnixTime(at)),
            ..v4(text, Source::Personal, None)
        };
        let merged = run(
            Merging::Anything,
            vec![
                v4("198.51.100.0/31", Source::Operator, None),
                own("198.51.100.2", 500),
                own("198.51.100.3", 900),
                v4("198.51.100.4/30", Source::Promoted, None),
            ],
        );
        assert_eq!(texts(&merged), ["198.51.100.0/29"]);
        assert_eq!(
            (merged[0].source, merged[0].added_at),
            (Source::Personal, Some(UnixTime(900))),
            "a merged block does not rank as its most relevant item, the newest own entry"
        );
    }

    #[test]
    fn a_merged_block_lasts_as_long_as_its_longest_lived_item() {
        let items = vec![
            v4("8.8.8.0", Source::Personal, Some(100)),
            v4("8.8.8.1", Source::Personal, Some(300)),
        ];
        let merged = run(Merging::Anything, items);
        assert_eq!(texts(&merged), ["8.8.8.0/31"]);
        assert_eq!(
            merged[0].expires_at,
            Some(UnixTime(300)),
            "a merged block lasts as long as its longest-lived item"
        );
    }

    #[test]
    fn with_an_origin_and_an_expiry_only_items_sharing_both_merge() {
        let items = vec![
            v4("8.8.8.0", Source::Personal, Some(100)),
            v4("8.8.8.1", Source::Personal, Some(100)),
            v4("8.8.8.2", Source::Personal, Some(200)),
            v4("8.8.8.3", Source::Operator, Some(200)),
            v4("8.8.8.4", Source::Operator, None),
            v4("8.8.8.5", Source::Operator, None),
        ];
        assert_eq!(
            texts(&run(Merging::SameOriginAndExpiry, items.clone())),
            ["8.8.8.0/31", "8.8.8.2", "8.8.8.3", "8.8.8.4/31"]
        );
        assert_eq!(
            texts(&run(Merging::Anything, items)),
            ["8.8.8.0/30", "8.8.8.4/31"]
        );
    }

    #[test]
    fn ipv6_runs_become_the_blocks_that_cover_them() {
        let v6 = |text: &str| PublicIpv6::from_addr(text.parse().unwrap()).unwrap();
        let personal = |block| FeedItem {
            added_at: None,
            block,
            source: Source::Personal,
            expires_at: None,
            comment: None,
        };
        let items = vec![
            // The IPv4 part ends before the IPv6 one begins.
            v4("255.255.255.255", Source::Operator, None),
            personal(FeedBlock::V6(v6("2001:200::"))),
            // Two /64s that touch: a /63; then, past a gap, a /62 of the
            // operator's and an address that touches its end: one run, two blocks.
            personal(FeedBlock::V6Net64(v6("2a00:1450:4001:80a::"))),
            personal(FeedBlock::V6Net64(v6("2a00:1450:4001:80b::"))),
            FeedItem {
                added_at: None,
                block: FeedBlock::V6Range(Ipv6Range::parse("2a00:1450:4001:820::/62").unwrap()),
                source: Source::Operator,
                expires_at: None,
                comment: None,
            },
            personal(FeedBlock::V6(v6("2a00:1450:4001:824::"))),
        ];
        assert_eq!(
            texts(&run(Merging::Anything, items)),
            [
                "255.255.255.255",
                "2001:200::",
                "2a00:1450:4001:80a::/63",
                "2a00:1450:4001:820::/62",
                "2a00:1450:4001:824::"
            ]
        );
    }
}
