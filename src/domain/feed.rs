//! The feed a firewall pulls: what it should challenge, item by item in address
//! order, whole or as the changes since a cursor.

use std::net::Ipv4Addr;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::entry::Entry;
use super::ipv4::PublicIpv4;
use super::range::Ipv4Range;
use super::snapshot::covers;
use super::time::UnixTime;

/// One line of a feed: an address or a CIDR block, with what the holder said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedItem {
    pub block: Ipv4Range,
    pub global: bool,
    pub expires_at: Option<UnixTime>,
    pub comment: Option<String>,
}

impl FeedItem {
    pub fn text(&self) -> String {
        self.block.to_string()
    }

    pub fn personal(entry: Entry) -> Self {
        let block = Ipv4Range::from_parts(entry.ip.to_u32(), 32).expect("an address is a /32");
        Self {
            block,
            global: false,
            expires_at: entry.expires_at,
            comment: entry.comment,
        }
    }
}

/// Sorted, disjoint inclusive intervals, as a snapshot holds them.
pub type Intervals = Vec<(u32, u32)>;

/// `from` without every address of `minus`; both sorted and disjoint.
pub fn subtract(from: &[(u32, u32)], minus: &[(u32, u32)]) -> Intervals {
    let mut rest = Vec::with_capacity(from.len());
    let mut passed = 0;
    for &(first, last) in from {
        let (mut start, last) = (u64::from(first), u64::from(last));
        while minus
            .get(passed)
            .is_some_and(|&(_, cut_last)| u64::from(cut_last) < start)
        {
            passed += 1;
        }
        for &(cut_first, cut_last) in minus[passed..]
            .iter()
            .take_while(|&&(cut_first, _)| u64::from(cut_first) <= last)
        {
            if u64::from(cut_first) > start {
                rest.push((start as u32, cut_first - 1));
            }
            start = start.max(u64::from(cut_last) + 1);
        }
        if start <= last {
            rest.push((start as u32, last as u32));
        }
    }
    rest
}

/// The largest CIDR block that starts at `first` and ends at or before `last`.
fn block_at(first: u32, last: u32) -> Ipv4Range {
    let mut size: u64 = if first == 0 {
        1 << 32
    } else {
        1 << first.trailing_zeros()
    };
    while u64::from(first) + size - 1 > u64::from(last) {
        size >>= 1;
    }
    Ipv4Range::from_parts(first, 32 - size.trailing_zeros() as u8)
        .expect("a block aligned to its size")
}

/// A whole feed, item by item in address order, owning what it is built from so
/// it can be streamed: the holder's live entries, and the global list's
/// intervals, both without what the allow list holds.
pub struct FeedItems {
    personal: std::iter::Peekable<std::vec::IntoIter<Entry>>,
    global: Rc<Intervals>,
    next_global: usize,
    /// Where the current global interval continues, when it is cut into several blocks.
    pending: Option<(u32, u32)>,
}

impl FeedItems {
    /// `personal` in any order; `global` the global list without what the allow
    /// list holds (`subtract`), shared by every feed of the same versions; both
    /// sorted and disjoint. A personal entry is left out when the allow list
    /// holds it, or when the global list does (its block is in the feed already).
    pub fn new(mut personal: Vec<Entry>, global: Rc<Intervals>, allow: &[(u32, u32)]) -> Self {
        personal.retain(|entry| {
            !covers(allow, entry.ip.to_u32()) && !covers(&global, entry.ip.to_u32())
        });
        personal.sort_by_key(|entry| entry.ip);
        Self {
            personal: personal.into_iter().peekable(),
            global,
            next_global: 0,
            pending: None,
        }
    }

    /// How many items the feed has, without using it up.
    pub fn total(&self) -> usize {
        let mut blocks = 0;
        for &(first, last) in &self.global[self.next_global..] {
            let mut start = u64::from(first);
            while start <= u64::from(last) {
                start = u64::from(block_at(start as u32, last).last()) + 1;
                blocks += 1;
            }
        }
        self.personal.len() + blocks
    }

    fn next_global_block(&mut self) -> Option<Ipv4Range> {
        let (first, last) = match self.pending.take() {
            Some(rest) => rest,
            None => {
                let interval = *self.global.get(self.next_global)?;
                self.next_global += 1;
                interval
            }
        };
        let block = block_at(first, last);
        if block.last() < last {
            self.pending = Some((block.last() + 1, last));
        }
        Some(block)
    }

    fn peek_global(&self) -> Option<u32> {
        self.pending
            .map(|(first, _)| first)
            .or_else(|| self.global.get(self.next_global).map(|&(first, _)| first))
    }
}

impl Iterator for FeedItems {
    type Item = FeedItem;

    fn next(&mut self) -> Option<FeedItem> {
        let personal_first = self.personal.peek().map(|entry| entry.ip.to_u32());
        match (personal_first, self.peek_global()) {
            (Some(p), Some(g)) if g < p => self.next_global_block().map(global_item),
            (Some(_), _) => self.personal.next().map(FeedItem::personal),
            (None, Some(_)) => self.next_global_block().map(global_item),
            (None, None) => None,
        }
    }
}

fn global_item(block: Ipv4Range) -> FeedItem {
    FeedItem {
        block,
        global: true,
        expires_at: None,
        comment: None,
    }
}

/// The personal part of a feed, at the holder's newest history number `changes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedAnswer {
    /// The history number the caller has is current.
    Unchanged { changes: u64 },
    /// Every live entry; `reset` when changes were asked for but the history no longer reaches back.
    Whole {
        changes: u64,
        reset: bool,
        entries: Vec<Entry>,
    },
    /// What changed after the caller's number.
    Delta { changes: u64, delta: PersonalDelta },
}

impl FeedAnswer {
    pub fn changes(&self) -> u64 {
        match self {
            Self::Unchanged { changes }
            | Self::Whole { changes, .. }
            | Self::Delta { changes, .. } => *changes,
        }
    }
}

/// The changes of the personal list since a cursor, as the holder's object
/// reports them: each address once, with its latest state, in the order of its
/// last change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalDelta {
    pub listed: Vec<Entry>,
    pub unlisted: Vec<PublicIpv4>,
}

impl PersonalDelta {
    /// What a firewall holding the feed must add and delete: entries the allow
    /// list holds, or the global list holds when it is part of the feed, are in
    /// neither (the firewall never had them as personal entries, or still has
    /// them as global blocks).
    pub fn filter(
        self,
        global: &[(u32, u32)],
        allow: &[(u32, u32)],
    ) -> (Vec<FeedItem>, Vec<FeedItem>) {
        let kept =
            |addr: Ipv4Addr| !covers(allow, u32::from(addr)) && !covers(global, u32::from(addr));
        let new = self
            .listed
            .into_iter()
            .filter(|entry| kept(entry.ip.addr()))
            .map(FeedItem::personal)
            .collect();
        let deleted = self
            .unlisted
            .into_iter()
            .filter(|ip| kept(ip.addr()))
            .map(|ip| {
                FeedItem::personal(Entry {
                    ip,
                    added_at: UnixTime(0),
                    expires_at: None,
                    comment: None,
                })
            })
            .collect();
        (new, deleted)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn entry(ip: &str) -> Entry {
        Entry {
            ip: PublicIpv4::parse(ip).unwrap(),
            added_at: UnixTime(0),
            expires_at: None,
            comment: None,
        }
    }

    fn interval(range: &str) -> (u32, u32) {
        let range = Ipv4Range::parse(range).unwrap();
        (range.first(), range.last())
    }

    fn feed_of(personal: Vec<Entry>, global: &[(u32, u32)], allow: &[(u32, u32)]) -> FeedItems {
        FeedItems::new(personal, Rc::new(subtract(global, allow)), allow)
    }

    fn texts(items: FeedItems) -> Vec<String> {
        items.map(|item| item.text()).collect()
    }

    #[test]
    fn a_feed_is_sorted_and_leaves_out_what_the_allow_list_holds() {
        let personal = vec![
            entry("9.9.9.9"),
            entry("8.8.8.8"),
            entry("104.16.0.5"),
            entry("45.1.1.7"),
        ];
        let global = [interval("45.1.1.0/24"), interval("45.2.0.0/16")];
        let allow = [interval("45.2.128.0/17"), interval("104.16.0.0/13")];
        let items = feed_of(personal, &global, &allow);
        assert_eq!(
            texts(items),
            ["8.8.8.8", "9.9.9.9", "45.1.1.0/24", "45.2.0.0/17"]
        );
        let personal_only = feed_of(vec![entry("9.9.9.9"), entry("104.16.0.5")], &[], &allow);
        assert_eq!(texts(personal_only), ["9.9.9.9"]);
    }

    #[test]
    fn a_feed_counts_its_items_before_it_is_read() {
        let items = feed_of(
            vec![entry("8.8.8.8")],
            &[
                (interval("10.0.0.1/32").0, interval("10.0.0.8/32").0),
                (0xffff_fffe, u32::MAX),
            ],
            &[],
        );
        assert_eq!(items.total(), 6);
        assert_eq!(items.total(), items.total());
        assert_eq!(items.collect::<Vec<_>>().len(), 6);
    }

    #[test]
    fn intervals_become_the_fewest_cidr_blocks() {
        let items = feed_of(
            vec![],
            &[(interval("10.0.0.1/32").0, interval("10.0.0.8/32").0)],
            &[],
        );
        assert_eq!(
            texts(items),
            ["10.0.0.1", "10.0.0.2/31", "10.0.0.4/30", "10.0.0.8"]
        );
        let everything = feed_of(vec![], &[(0, u32::MAX)], &[]);
        assert_eq!(texts(everything), ["0.0.0.0/0"]);
        let top = feed_of(vec![], &[(u32::MAX - 2, u32::MAX)], &[]);
        assert_eq!(texts(top), ["255.255.255.253", "255.255.255.254/31"]);
    }

    #[test]
    fn deltas_leave_out_what_the_allow_or_global_list_holds() {
        let delta = PersonalDelta {
            listed: vec![entry("8.8.8.8"), entry("104.16.0.5"), entry("45.1.1.9")],
            unlisted: vec![
                PublicIpv4::parse("9.9.9.9").unwrap(),
                PublicIpv4::parse("45.1.1.10").unwrap(),
            ],
        };
        let (new, deleted) = delta.filter(&[interval("45.1.1.0/24")], &[interval("104.16.0.0/13")]);
        assert_eq!(
            new.iter().map(FeedItem::text).collect::<Vec<_>>(),
            ["8.8.8.8"]
        );
        assert_eq!(
            deleted.iter().map(FeedItem::text).collect::<Vec<_>>(),
            ["9.9.9.9"]
        );
    }

    fn intervals_strategy() -> impl Strategy<Value = Intervals> {
        proptest::collection::vec((any::<u32>(), 0u32..5000), 0..12).prop_map(|mut spans| {
            spans.sort();
            let mut merged: Intervals = Vec::new();
            for (first, len) in spans {
                let last = first.saturating_add(len);
                match merged.last_mut() {
                    Some((_, end)) if first <= end.saturating_add(1) => *end = (*end).max(last),
                    _ => merged.push((first, last)),
                }
            }
            merged
        })
    }

    proptest! {
        #[test]
        fn blocks_cover_exactly_the_global_list_minus_the_allow_list(
            global in intervals_strategy(),
            allow in intervals_strategy(),
            probes in proptest::collection::vec(any::<u32>(), 0..40),
        ) {
            let blocks: Vec<Ipv4Range> = feed_of(vec![], &global, &allow).map(|item| item.block).collect();
            prop_assert!(blocks.windows(2).all(|w| w[0].last() < w[1].first()), "sorted and disjoint");
            let edges = global.iter().chain(&allow).flat_map(|&(a, b)| [a, b, a.wrapping_sub(1), b.wrapping_add(1)]);
            for addr in probes.into_iter().chain(edges) {
                let expected = covers(&global, addr) && !covers(&allow, addr);
                let found = blocks.iter().any(|block| block.first() <= addr && addr <= block.last());
                prop_assert_eq!(found, expected, "{:#x}", addr);
            }
        }
    }
}
