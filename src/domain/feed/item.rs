//! The feed a firewall pulls: what it should challenge, item by item in address
//! order, whole or as the changes since a cursor.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::domain::holder::entry::Entry;
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::net::family::Addr;
use crate::domain::net::ipv6::{PublicIpv6, IPV4_MAPPED};
use crate::domain::net::range::{Cidr, Ipv4Range, Ipv6Range};
use crate::domain::operator_lists::snapshot::Shard;
use crate::domain::time::UnixTime;

/// One line of a feed: an address or a CIDR block, whose it is, and what the
/// holder said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedItem {
    pub block: FeedBlock,
    pub source: Source,
    pub expires_at: Option<UnixTime>,
    pub comment: Option<String>,
    /// When the holder listed it, for the holder's own entries: what ranks
    /// them when a feed is cut to what a device holds (`cap::Rank`).
    pub added_at: Option<UnixTime>,
}

impl FeedItem {
    pub fn text(&self) -> String {
        self.block.to_string()
    }

    pub fn personal(entry: Entry) -> Self {
        Self {
            block: personal_block(entry.ip),
            source: Source::Personal,
            expires_at: entry.expires_at,
            comment: entry.comment,
            added_at: Some(entry.added_at),
        }
    }
}

/// Whose a feed item is: the holder's own entry, or a block of the global list,
/// the operator's or one the holders' reports promoted. Only a global block is
/// ever promoted. In the order a feed cut to what a device holds keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Personal,
    Promoted,
    Operator,
}

impl Source {
    /// Whether the item is a block of the global list.
    pub fn is_global(self) -> bool {
        self != Self::Personal
    }

    /// Whose a global block is: the network's when every address of it lies in
    /// the promoted intervals of the shard it lies in (`promoted`, `None` when
    /// that shard has none), else the operator's. So a promoted address inside a
    /// wider block of the operator's is that block, the operator's; and the
    /// promoted intervals leave out what the operator lists too, which is the
    /// operator's (`OperatorListTables::build_shards`).
    pub fn of_global<A: Addr>(block: Cidr<A>, promoted: Option<&Shard<A>>) -> Self {
        match promoted {
            Some(part) if part.holds_all(block.first(), block.last()) => Self::Promoted,
            _ => Self::Operator,
        }
    }
}

/// What a feed line names: an IPv4 address or CIDR block, a personal IPv6
/// address, a personal IPv6 /64 (by its network address), or a global IPv6 block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedBlock {
    V4(Ipv4Range),
    V6(PublicIpv6),
    V6Net64(PublicIpv6),
    V6Range(Ipv6Range),
}

impl fmt::Display for FeedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(range) => range.fmt(f),
            Self::V6(ip) => ip.fmt(f),
            Self::V6Net64(net) => write!(f, "{net}/64"),
            Self::V6Range(range) => range.fmt(f),
        }
    }
}

impl FeedBlock {
    /// The block as the global list names it: a holder's IPv6 address or /64
    /// as the IPv6 block of the same addresses.
    pub fn as_global(self) -> Self {
        match self {
            Self::V6(ip) => Self::V6Range(
                Ipv6Range::from_parts(u128::from(ip.addr()), 128).expect("an address"),
            ),
            Self::V6Net64(net) => {
                Self::V6Range(Ipv6Range::from_parts(u128::from(net.addr()), 64).expect("a /64"))
            }
            Self::V4(_) | Self::V6Range(_) => self,
        }
    }

    /// Where the block stands in a feed's order: its first address in sixteen
    /// bytes (an IPv4 one as IPv4-mapped, as the holder's rows keep it), then its
    /// prefix in those 128 bits, a wider block first. Two values in one place
    /// are one and the same block.
    pub fn place(self) -> (u128, u8) {
        match self {
            Self::V4(range) => (
                IPV4_MAPPED.0 | u128::from(range.first()),
                96 + range.prefix(),
            ),
            Self::V6(ip) => (u128::from(ip.addr()), 128),
            Self::V6Net64(net) => (u128::from(net.addr()), 64),
            Self::V6Range(range) => (range.first(), range.prefix()),
        }
    }
}

/// The largest CIDR block that starts at `first` and ends at or before `last`.
fn block_at<A: Addr>(first: A, last: A) -> Cidr<A> {
    let mut prefix = A::BITS - first.trailing_zeros().min(A::BITS);
    loop {
        let block = Cidr::from_parts(first, prefix).expect("a block aligned to its size");
        if block.last() <= last {
            return block;
        }
        prefix += 1;
    }
}

/// The CIDR blocks of sorted, disjoint intervals of one family, in address
/// order: each interval as the fewest blocks, so a feed is the same whatever
/// shards its list came in.
pub struct Blocks<I, A = u32> {
    intervals: I,
    /// Where the current interval continues, when it is cut into several blocks.
    pending: Option<(A, A)>,
}

impl<A: Addr, I: Iterator<Item = (A, A)>> Blocks<I, A> {
    pub fn new(intervals: I) -> Self {
        Self {
            intervals,
            pending: None,
        }
    }
}

impl<A: Addr, I: Iterator<Item = (A, A)>> Iterator for Blocks<I, A> {
    type Item = Cidr<A>;

    fn next(&mut self) -> Option<Cidr<A>> {
        let (first, last) = self.pending.take().or_else(|| self.intervals.next())?;
        let block = block_at(first, last);
        if block.last() < last {
            let after = block
                .last()
                .after()
                .expect("a block that ends before `last`");
            self.pending = Some((after, last));
        }
        Some(block)
    }
}

/// What a whole feed needs next to go on in address order.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Item(FeedItem),
    /// The next page of the holder's entries, or `finish_personal`.
    NeedPersonal,
    /// The next part of the global blocks, or `finish_global`.
    NeedGlobal,
    Done,
}

/// A whole feed, merged a page at a time: the holder's entries (in address
/// order, what the allow list holds already left out) and the global blocks (in
/// address order, without what the allow list holds). Holds one page of each.
/// An address that is both a personal entry and a global block of its own is
/// one item, the personal one without its expiry (the global list holds it
/// for as long as it lists it), so that a set loaded from the feed takes every line.
#[derive(Debug, Default)]
pub struct Merge {
    personal: VecDeque<Entry>,
    global: VecDeque<FeedBlock>,
    personal_done: bool,
    global_done: bool,
}

impl Merge {
    pub fn push_personal(&mut self, entries: Vec<Entry>) {
        self.personal.extend(entries);
    }

    pub fn finish_personal(&mut self) {
        self.personal_done = true;
    }

    pub fn push_global(&mut self, blocks: impl IntoIterator<Item = FeedBlock>) {
        self.global.extend(blocks);
    }

    pub fn finish_global(&mut self) {
        self.global_done = true;
    }

    pub fn step(&mut self) -> Next {
        loop {
            if self.personal.is_empty() && !self.personal_done {
                return Next::NeedPersonal;
            }
            if self.global.is_empty() && !self.global_done {
                return Next::NeedGlobal;
            }
            // The holder's rows keep a /64 after its first address; the feed puts
            // the /64 first, as a block comes before what it holds.
            if let Some(Listed::Ip(PublicIp::V6(ip))) = self.personal.front().map(|e| e.ip) {
                if ip.is_net64() {
                    if self.personal.len() < 2 && !self.personal_done {
                        return Next::NeedPersonal;
                    }
                    if self
                        .personal
                        .get(1)
                        .is_some_and(|next| next.ip == Listed::Net64(ip))
                    {
                        self.personal.swap(0, 1);
                    }
                }
            }
            let personal = self
                .personal
                .front()
                .map(|entry| personal_block(entry.ip).place());
            let global = self.global.front().map(|block| block.place());
            return match (personal, global) {
                (Some(p), Some(g)) if g < p => {
                    Next::Item(global_item(self.global.pop_front().expect("a block")))
                }
                // The global list holds it too: the one item stands as long as that does.
                (Some(p), Some(g)) if g == p => {
                    self.global.pop_front();
                    if let Some(entry) = self.personal.front_mut() {
                        entry.expires_at = None;
                    }
                    continue;
                }
                (Some(_), _) => {
                    let mut item = FeedItem::personal(self.personal.pop_front().expect("an entry"));
                    // A global block inside the holder's /64 is left out of
                    // appliance files, which the /64 holds: it stands as long as that.
                    if let (FeedBlock::V6Net64(net), Some(FeedBlock::V6Range(block))) =
                        (item.block, self.global.front())
                    {
                        if block.first() <= u128::from(net.addr()) | u128::from(u64::MAX) {
                            item.expires_at = None;
                        }
                    }
                    Next::Item(item)
                }
                (None, Some(_)) => {
                    Next::Item(global_item(self.global.pop_front().expect("a block")))
                }
                (None, None) => Next::Done,
            };
        }
    }
}

/// What a personal entry is as a feed names it.
pub fn personal_block(listed: Listed) -> FeedBlock {
    match listed {
        Listed::Ip(PublicIp::V4(ip)) => {
            FeedBlock::V4(Ipv4Range::from_parts(ip.to_u32(), 32).expect("an address is a /32"))
        }
        Listed::Ip(PublicIp::V6(ip)) => FeedBlock::V6(ip),
        Listed::Net64(net) => FeedBlock::V6Net64(net),
    }
}

/// A block of the global list as a feed writes it: the operator's, until the
/// promoted parts, which only some feeds read, say otherwise (`Source::of_global`).
pub fn global_item(block: FeedBlock) -> FeedItem {
    FeedItem {
        block,
        source: Source::Operator,
        expires_at: None,
        comment: None,
        added_at: None,
    }
}

/// What the holder's object answers a feed with, before its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedHead {
    /// The history number the caller has is current; no records follow.
    Unchanged { changes: u64 },
    /// Every live entry follows, in address order; `reset` when changes were asked
    /// for but the history no longer reaches back.
    Whole { changes: u64, reset: bool },
    /// What changed after the caller's number follows: every `Gone` record, then
    /// every `Listed` one, each address once.
    Delta { changes: u64 },
    /// A pull that re-announces everything: the `Gone` records after the token's
    /// position, then every live entry in address order.
    Renewal { changes: u64 },
    /// The operator's lists changed since the token's position: nothing follows;
    /// the caller works out their changes from `position` and asks again.
    Moved { changes: u64, position: FeedVersion },
    /// The list changed since the caller counted its cut: nothing follows; the
    /// caller counts again.
    Recount { changes: u64 },
}

impl FeedHead {
    /// The holder's newest history number, the personal part of the feed's version.
    pub fn changes(self) -> u64 {
        match self {
            Self::Unchanged { changes }
            | Self::Whole { changes, .. }
            | Self::Delta { changes }
            | Self::Renewal { changes }
            | Self::Moved { changes, .. }
            | Self::Recount { changes } => changes,
        }
    }
}

/// One record of the personal part of a feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedRecord {
    /// An entry a firewall should hold (unless the allow list holds it).
    Listed(Entry),
    /// An address a firewall should no longer hold as a personal entry.
    Gone(Listed),
}

/// A personal address as a delta deletes it: the address alone.
pub fn gone_item(ip: Listed) -> FeedItem {
    FeedItem::personal(Entry {
        ip,
        added_at: UnixTime(0),
        expires_at: None,
        comment: None,
    })
}

/// Where a feed stands: the last change of the personal list it holds (the
/// history's sequence number), and the global and allow lists' versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedVersion {
    pub changes: u64,
    pub global: u64,
    pub allow: u64,
}

impl fmt::Display for FeedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.changes, self.global, self.allow)
    }
}

impl FeedVersion {
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text
            .split('.')
            .map(|part| part.parse::<u64>().ok().filter(|_| !part.starts_with('+')));
        let version = Self {
            changes: parts.next()??,
            global: parts.next()??,
            allow: parts.next()??,
        };
        parts.next().is_none().then_some(version)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::net::intervals::{combine, Intervals, Op, Seek};
    use crate::domain::operator_lists::snapshot::covers;

    fn entry(ip: &str) -> Entry {
        Entry {
            ip: ip.parse::<Listed>().unwrap(),
            added_at: UnixTime(0),
            expires_at: None,
            comment: None,
        }
    }

    fn interval(range: &str) -> (u32, u32) {
        let range = Ipv4Range::parse(range).unwrap();
        (range.first(), range.last())
    }

    /// A whole feed merged in pages of `page` from both sides, as the Worker drives it.
    fn merged(personal: Vec<Entry>, global: &[(u32, u32)], page: usize) -> Vec<String> {
        let blocks = Blocks::new(global.iter().copied()).map(FeedBlock::V4);
        merged_with(personal, blocks.collect(), page)
    }

    fn merged_with(personal: Vec<Entry>, global: Vec<FeedBlock>, page: usize) -> Vec<String> {
        let mut personal = personal.into_iter();
        let mut blocks = global.into_iter();
        let mut merge = Merge::default();
        let mut items = Vec::new();
        loop {
            match merge.step() {
                Next::Item(item) => items.push(format!(
                    "{}{}",
                    item.text(),
                    if item.source.is_global() { "" } else { " p" }
                )),
                Next::NeedPersonal => {
                    let part: Vec<Entry> = personal.by_ref().take(page).collect();
                    if part.is_empty() {
                        merge.finish_personal();
                    }
                    merge.push_personal(part);
                }
                Next::NeedGlobal => {
                    let part: Vec<FeedBlock> = blocks.by_ref().take(page).collect();
                    if part.is_empty() {
                        merge.finish_global();
                    }
                    merge.push_global(part);
                }
                Next::Done => return items,
            }
        }
    }

    #[test]
    fn a_whole_feed_is_in_address_order_and_an_address_in_both_parts_is_one_item() {
        let personal = vec![
            entry("8.8.8.8"),
            entry("9.9.9.9"),
            entry("45.1.1.7"),
            entry("45.3.0.1"),
        ];
        let global = [
            interval("45.1.1.0/24"),
            interval("45.2.0.0/16"),
            interval("45.3.0.1/32"),
        ];
        for page in [1, 2, 100] {
            assert_eq!(
                merged(personal.clone(), &global, page),
                [
                    "8.8.8.8 p",
                    "9.9.9.9 p",
                    "45.1.1.0/24",
                    "45.1.1.7 p",
                    "45.2.0.0/16",
                    "45.3.0.1 p"
                ],
                "pages of {page}"
            );
        }
        assert_eq!(merged(vec![], &[], 3), Vec::<String>::new());
    }

    #[test]
    fn ipv6_entries_take_their_place_by_their_sixteen_bytes_around_the_ipv4_blocks() {
        let personal = vec![
            entry("::1:0:2"),
            entry("8.8.8.8"),
            entry("45.1.1.7"),
            entry("2a00:1450:4001:80b::200e"),
            entry("2a00:1450:4001:80b::200f"),
        ];
        let global = [interval("45.1.1.0/24"), interval("46.0.0.0/8")];
        for page in [1, 2, 100] {
            assert_eq!(
                merged(personal.clone(), &global, page),
                [
                    "::1:0:2 p",
                    "8.8.8.8 p",
                    "45.1.1.0/24",
                    "45.1.1.7 p",
                    "46.0.0.0/8",
                    "2a00:1450:4001:80b::200e p",
                    "2a00:1450:4001:80b::200f p"
                ],
                "pages of {page}"
            );
        }
    }

    #[test]
    fn an_entry_the_global_list_holds_as_a_block_of_its_own_stands_as_long_as_that() {
        let mut merge = Merge::default();
        let mut expiring = entry("45.3.0.1");
        expiring.expires_at = Some(UnixTime(99));
        let mut other = entry("45.3.0.2");
        other.expires_at = Some(UnixTime(99));
        merge.push_personal(vec![expiring, other]);
        merge.finish_personal();
        merge.push_global([FeedBlock::V4(Ipv4Range::parse("45.3.0.1").unwrap())]);
        merge.finish_global();
        let Next::Item(first) = merge.step() else {
            panic!("an item")
        };
        assert_eq!(
            (first.text(), first.source, first.expires_at),
            ("45.3.0.1".into(), Source::Personal, None),
            "an entry the global list also holds goes out without its expiry"
        );
        let Next::Item(second) = merge.step() else {
            panic!("an item")
        };
        assert_eq!(
            second.expires_at,
            Some(UnixTime(99)),
            "an entry of its own keeps its expiry"
        );
        assert_eq!(merge.step(), Next::Done);
    }

    /// The global list's blocks, as a feed writes them, each with its label: the
    /// operator's entries and the promoted ones, the promoted part being what the
    /// operator does not list (as `OperatorListTables::build_shards` builds it).
    fn labelled(operator: &[(u32, u32)], promoted: &[(u32, u32)]) -> Vec<(String, Source)> {
        let part = Shard::of_intervals(combine(promoted, operator, Op::Minus));
        let global = combine(operator, promoted, Op::Union);
        Blocks::new(global.into_iter())
            .map(|block| (block.to_string(), Source::of_global(block, Some(&part))))
            .collect()
    }

    #[test]
    fn a_global_block_is_promoted_only_when_every_address_of_it_is() {
        let operator = [interval("45.1.1.0/24"), interval("45.3.0.6")];
        let promoted = [
            interval("45.1.1.7"),
            interval("45.2.0.0/16"),
            interval("45.3.0.4/31"),
            interval("45.3.0.6"),
        ];
        let label = |text: &str, source| (text.to_owned(), source);
        assert_eq!(
            labelled(&operator, &promoted),
            [
                // A promoted address inside the operator's /24 is the /24, the operator's.
                label("45.1.1.0/24", Source::Operator),
                label("45.2.0.0/16", Source::Promoted),
                label("45.3.0.4/31", Source::Promoted),
                // Listed by the operator and promoted: the operator's.
                label("45.3.0.6", Source::Operator),
            ],
            "the blocks wholly promoted are labelled promoted, the rest the operator's"
        );
        assert_eq!(
            labelled(&[interval("45.3.0.5")], &[interval("45.3.0.4")]),
            [label("45.3.0.4/31", Source::Operator)],
            "a block joined with the operator's neighbour is the operator's"
        );
        let block = Ipv4Range::parse("45.2.0.0/16").unwrap();
        assert_eq!(
            Source::of_global(block, None),
            Source::Operator,
            "a shard without a promoted part"
        );
        let net = Ipv6Range::parse("2a00:1450:4001:81b::/64").unwrap();
        let part = Shard::of_intervals(vec![(net.first(), net.last())]);
        assert_eq!(Source::of_global(net, Some(&part)), Source::Promoted);
        assert!(Source::Promoted.is_global() && !Source::Personal.is_global());
    }

    fn small_intervals() -> impl Strategy<Value = Intervals> {
        proptest::collection::vec((0u32..2000, 0u32..64), 0..12).prop_map(|mut spans| {
            spans.sort();
            crate::domain::net::intervals::union_of_sorted(
                spans.into_iter().map(|(first, len)| (first, first + len)),
            )
        })
    }

    proptest! {
        #[test]
        fn a_block_is_promoted_exactly_when_the_reports_alone_hold_each_of_its_addresses(
            operator in small_intervals(),
            promoted in small_intervals(),
        ) {
            let only = combine(&promoted, &operator, Op::Minus);
            for (text, source) in labelled(&operator, &promoted) {
                let block = Ipv4Range::parse(&text).unwrap();
                let expected = (block.first()..=block.last()).all(|addr| covers(&only, addr));
                prop_assert_eq!(
                    source == Source::Promoted,
                    expected,
                    "{}: its label disagrees with what the reports alone hold",
                    text
                );
            }
        }
    }

    #[test]
    fn intervals_become_the_fewest_cidr_blocks() {
        let texts = |intervals: &[(u32, u32)]| {
            Blocks::new(intervals.iter().copied())
                .map(|block| block.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            texts(&[(interval("10.0.0.1/32").0, interval("10.0.0.8/32").0)]),
            ["10.0.0.1", "10.0.0.2/31", "10.0.0.4/30", "10.0.0.8"]
        );
        assert_eq!(texts(&[(0, u32::MAX)]), ["0.0.0.0/0"]);
        assert_eq!(
            texts(&[(u32::MAX - 2, u32::MAX)]),
            ["255.255.255.253", "255.255.255.254/31"]
        );
    }

    #[test]
    fn a_holders_64_comes_before_its_first_address_and_meets_the_same_global_64_once() {
        let v6 = |text: &str| FeedBlock::V6Range(Ipv6Range::parse(text).unwrap());
        let personal = vec![
            entry("2a00:1:2:3::"),
            entry("2a00:1:2:3::/64"),
            entry("2a00:1:2:3::5"),
            entry("2a00:1:2:4::"),
        ];
        for page in [1, 2, 100] {
            assert_eq!(
                merged_with(personal.clone(), vec![v6("2a00:1:2:3::/64")], page),
                [
                    "2a00:1:2:3::/64 p",
                    "2a00:1:2:3:: p",
                    "2a00:1:2:3::5 p",
                    "2a00:1:2:4:: p"
                ],
                "pages of {page}: a holder's /64 comes before its first address"
            );
            assert_eq!(
                merged_with(personal[1..].to_vec(), vec![v6("2a00:1:2:3::1")], page),
                [
                    "2a00:1:2:3::/64 p",
                    "2a00:1:2:3::1",
                    "2a00:1:2:3::5 p",
                    "2a00:1:2:4:: p"
                ],
                "pages of {page}: a global address inside the holder's /64 comes after it"
            );
        }
    }

    #[test]
    fn a_holders_64_that_holds_a_global_block_stands_as_long_as_the_block() {
        let v6 = |text: &str| FeedBlock::V6Range(Ipv6Range::parse(text).unwrap());
        let expiring = |text: &str| Entry {
            expires_at: Some(UnixTime(99)),
            ..entry(text)
        };
        let mut merge = Merge::default();
        merge.push_personal(vec![
            expiring("2a00:1:2:3::/64"),
            expiring("2a00:1:2:4::/64"),
        ]);
        merge.finish_personal();
        merge.push_global([v6("2a00:1:2:3:4::/80"), v6("2a00:1:2:5::1")]);
        merge.finish_global();
        let mut items = Vec::new();
        while let Next::Item(item) = merge.step() {
            items.push((item.text(), item.expires_at));
        }
        assert_eq!(
            items,
            [
                ("2a00:1:2:3::/64".to_owned(), None),
                ("2a00:1:2:3:4::/80".to_owned(), None),
                ("2a00:1:2:4::/64".to_owned(), Some(UnixTime(99))),
                ("2a00:1:2:5::1".to_owned(), None),
            ],
            "a holder's /64 that holds a global block stands as long as the block"
        );
    }

    #[test]
    fn global_ipv6_blocks_take_their_place_around_ipv4_ones_and_the_holders_own() {
        let v6 = |text: &str| FeedBlock::V6Range(Ipv6Range::parse(text).unwrap());
        let global = vec![
            v6("::1:100:0/120"),
            FeedBlock::V4(Ipv4Range::parse("45.1.1.0/24").unwrap()),
            v6("2a00:1450::/32"),
            v6("2a00:1451::/64"),
            v6("2a00:1452::1"),
        ];
        let mut net64 = entry("2a00:1451::/64");
        net64.expires_at = Some(UnixTime(9));
        let personal = vec![
            entry("::1:0:2"),
            entry("::1:100:5"),
            entry("45.1.1.7"),
            entry("2a00:1450::"),
            entry("2a00:1450:4001:80b::200e"),
            net64,
            entry("2a00:1452::1"),
            entry("2a00:1453::1"),
        ];
        for page in [1, 2, 100] {
            assert_eq!(
                merged_with(personal.clone(), global.clone(), page),
                [
                    "::1:0:2 p",
                    "::1:100:0/120",
                    "::1:100:5 p",
                    "45.1.1.0/24",
                    "45.1.1.7 p",
                    "2a00:1450::/32",
                    "2a00:1450:: p",
                    "2a00:1450:4001:80b::200e p",
                    "2a00:1451::/64 p",
                    "2a00:1452::1 p",
                    "2a00:1453::1 p"
                ],
                "pages of {page}: a block before what it holds, one item for one value"
            );
        }
        let whole: Vec<String> = Blocks::new(std::iter::once((0u128, u128::MAX)))
            .map(|block| block.to_string())
            .collect();
        assert_eq!(whole, ["::/0"]);
        let top: Vec<String> = Blocks::new(std::iter::once((u128::MAX - 2, u128::MAX)))
            .map(|block| block.to_string())
            .collect();
        assert_eq!(
            top,
            [
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffd",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127"
            ]
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
            let challenged = combine(&global, &allow, Op::Minus);
            let blocks: Vec<Ipv4Range> = Blocks::new(challenged.iter().copied()).collect();
            prop_assert!(blocks.windows(2).all(|w| w[0].last() < w[1].first()), "sorted and disjoint");
            let edges = global.iter().chain(&allow).flat_map(|&(a, b)| [a, b, a.wrapping_sub(1), b.wrapping_add(1)]);
            for addr in probes.into_iter().chain(edges) {
                let expected = covers(&global, addr) && !covers(&allow, addr);
                let found = blocks.iter().any(|block| block.first() <= addr && addr <= block.last());
                prop_assert_eq!(found, expected, "{:#x}", addr);
                if let Some(span) = challenged.interval_of(addr) {
                    let block = blocks.iter().find(|b| b.first() <= addr && addr <= b.last()).unwrap();
                    let from_span = Blocks::new(std::iter::once(span)).find(|b| b.last() >= addr);
                    prop_assert_eq!(from_span, Some(*block), "one interval cut alone as in the whole");
                }
            }
        }
    }
}
