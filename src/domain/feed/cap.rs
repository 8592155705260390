//! A feed cut to what a device holds (`maxItems`): when the feed has more
//! items, it keeps the most relevant, the holder's own entries first (the
//! newest first), then the global blocks the network promoted, then the
//! operator's; items that rank alike are kept in address order. A feed is read
//! in address order, so where it is cut is counted first, in one read of its
//! items (a second one when the cut falls among own entries listed within one
//! span of hours), and kept as the items are read once more to be written.
//! What the counting holds grows with the hours the own entries span, never
//! with how many items there are.
//!
//! The last item a cut keeps is its bound (`Bound`), which a cut feed's cursor
//! carries: a delta from it to the bound now (`Shift`) deletes what a newer
//! item pushed out and adds what room let in again, so that an agent that
//! applies every delta holds what a whole pull would give it.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::domain::feed::item::{FeedItem, FeedVersion, Source};
use crate::domain::time::UnixTime;

/// The most items a feed may be asked to keep.
pub const MAX_ITEMS: u64 = 10_000_000;

/// How many items a feed is asked to keep, as a query or a token's setting
/// says it, or why not.
pub fn max_items(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .ok()
        .filter(|max| (1..=MAX_ITEMS).contains(max))
        .ok_or_else(|| format!("maxItems is a whole number from 1 to {MAX_ITEMS}, not {text:?}"))
}

/// How relevant an item is: a smaller rank is kept first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// The holder's own entry (or a merged block holding one), the newest first.
    Own(Reverse<UnixTime>),
    Promoted,
    Operator,
}

impl Rank {
    /// An item's rank: a merged block's is its most relevant item's.
    pub fn of(item: &FeedItem) -> Self {
        match item.source {
            Source::Personal => Self::Own(Reverse(item.added_at.unwrap_or_default())),
            Source::Promoted => Self::Promoted,
            Source::Operator => Self::Operator,
        }
    }
}

/// Where an item stands in a cut: its rank, then its place in address order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub rank: Rank,
    pub place: (u128, u8),
}

impl Key {
    pub fn of(item: &FeedItem) -> Self {
        Self {
            rank: Rank::of(item),
            place: item.block.place(),
        }
    }
}

/// How far a cut reaches: every item, or those up to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    Upto(Key),
    Everything,
}

impl Bound {
    pub fn holds(self, key: Key) -> bool {
        match self {
            Self::Upto(bound) => key <= bound,
            Self::Everything => true,
        }
    }

    /// The bound as a cursor writes it: `a` for every item; else the tier
    /// (`o`wn, `p`romoted, ope`r`ator), the own entry's time, then the place's
    /// first address and prefix, in hexadecimal: only characters a query
    /// string and an `ETag` carry as they are.
    pub fn parse(text: &str) -> Option<Self> {
        if text == "a" {
            return Some(Self::Everything);
        }
        let mut chars = text.chars();
        let tier = chars.next()?;
        let mut parts = chars.as_str().split('x');
        let number = |part: Option<&str>, radix| {
            let part = part.filter(|p| !p.is_empty() && p.chars().all(|c| c.is_digit(radix)))?;
            u128::from_str_radix(part, radix).ok()
        };
        let at = u64::try_from(number(parts.next(), 10)?).ok()?;
        let first = number(parts.next(), 16)?;
        let prefix = u8::try_from(number(parts.next(), 16)?).ok()?;
        if parts.next().is_some() || prefix > 128 {
            return None;
        }
        let rank = match (tier, at) {
            ('o', at) => Rank::Own(Reverse(UnixTime(at))),
            ('p', 0) => Rank::Promoted,
            ('r', 0) => Rank::Operator,
            _ => return None,
        };
        Some(Self::Upto(Key {
            rank,
            place: (first, prefix),
        }))
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self::Upto(Key {
            rank,
            place: (first, prefix),
        }) = self
        else {
            return f.write_str("a");
        };
        let (tier, at) = match rank {
            Rank::Own(Reverse(at)) => ('o', at.0),
            Rank::Promoted => ('p', 0),
            Rank::Operator => ('r', 0),
        };
        write!(f, "{tier}{at}x{first:x}x{prefix:x}")
    }
}

/// What a cursor says of the cut of the feed that gave it: none (a whole
/// feed's), how far it reached, or (a cut that changed as it was written) not
/// known. Written after the version: `7.3.2`, `7.3.2.o1765000000x…`, `7.3.2.u`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum CursorCut {
    #[default]
    Whole,
    Bound(Bound),
    Unknown,
}

impl CursorCut {
    /// A cursor's version and what it says of its cut.
    pub fn parse(cursor: &str) -> Option<(FeedVersion, Self)> {
        let mut parts = cursor.splitn(4, '.');
        let version = [parts.next()?, parts.next()?, parts.next()?].join(".");
        let cut = match parts.next() {
            None => Self::Whole,
            Some("u") => Self::Unknown,
            Some(bound) => Self::Bound(Bound::parse(bound)?),
        };
        Some((FeedVersion::parse(&version)?, cut))
    }

    /// The cursor a cut feed gives: how far its cut reached, if that is known.
    pub fn of(bound: Option<Bound>) -> Self {
        bound.map_or(Self::Unknown, Self::Bound)
    }
}

/// As a call between objects carries it: as a cursor writes it after its version.
impl From<CursorCut> for String {
    fn from(cut: CursorCut) -> Self {
        cut.to_string()
    }
}

impl TryFrom<String> for CursorCut {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&format!("0.0.0{text}"))
            .map(|(_, cut)| cut)
            .ok_or_else(|| format!("a cut {text:?}"))
    }
}

/// The cursor's part after its version, with its dot: nothing for a whole feed's.
impl std::fmt::Display for CursorCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Whole => Ok(()),
            Self::Bound(bound) => write!(f, ".{bound}"),
            Self::Unknown => f.write_str(".u"),
        }
    }
}

/// How a cut moved from the bound a cursor carries (`from`) to the bound now
/// (`to`): what a delta deletes and adds beside what changed in the lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    pub from: Bound,
    pub to: Bound,
}

impl Shift {
    /// An item that changed since the cursor (new, or named again) that the
    /// delta's new items carry. Those room let in come with them
    /// (`lets_in`), each once.
    pub fn sends_new(self, key: Key) -> bool {
        self.from.min(self.to).holds(key)
    }

    /// An item the cut held at the cursor and no longer holds.
    pub fn pushes_out(self, key: Key) -> bool {
        self.from.holds(key) && !self.to.holds(key)
    }

    /// An item the cut holds now and did not hold at the cursor.
    pub fn lets_in(self, key: Key) -> bool {
        self.to.holds(key) && !self.from.holds(key)
    }
}

/// Own entries are counted first by the span of 2^14 seconds (about four and a
/// half hours) they were listed in, then, in the one span the cut falls in, by
/// second.
const SPAN_BITS: u32 = 14;

/// A count of a feed's items by rank, towards where it is cut to `keep`.
#[derive(Debug)]
pub struct Tally {
    keep: u64,
    stage: Stage,
    own: u64,
    promoted: u64,
    operator: u64,
    /// Own entries by span, or (the second count) by second within the span.
    times: BTreeMap<u64, u64>,
}

#[derive(Debug, Clone, Copy)]
enum Stage {
    Spans,
    /// The seconds of one span, where the `need` items still to keep are.
    Seconds {
        span: u64,
        need: u64,
    },
}

/// What a count found.
#[derive(Debug)]
pub enum Counted {
    Cut(Cut),
    /// The cut falls among own entries of one span: count its seconds, in
    /// another read of the feed.
    Again(Tally),
}

impl Tally {
    pub fn new(keep: u64) -> Self {
        Self {
            keep,
            stage: Stage::Spans,
            own: 0,
            promoted: 0,
            operator: 0,
            times: BTreeMap::new(),
        }
    }

    /// Counts the next item read.
    pub fn add(&mut self, rank: Rank) {
        match (rank, self.stage) {
            (Rank::Own(Reverse(at)), Stage::Spans) => {
                self.own += 1;
                *self.times.entry(at.0 >> SPAN_BITS).or_default() += 1;
            }
            (Rank::Own(Reverse(at)), Stage::Seconds { span, .. }) => {
                if at.0 >> SPAN_BITS == span {
                    *self.times.entry(at.0).or_default() += 1;
                }
            }
            (Rank::Promoted, Stage::Spans) => self.promoted += 1,
            (Rank::Operator, Stage::Spans) => self.operator += 1,
            (_, Stage::Seconds { .. }) => {}
        }
    }

    /// Where the feed is cut, once every item has been counted.
    pub fn finish(mut self) -> Counted {
        let total = self.own + self.promoted + self.operator;
        let left_out = total.saturating_sub(self.keep);
        let cut = |boundary| {
            Counted::Cut(Cut {
                keep: self.keep,
                kept: 0,
                boundary,
                last: None,
                short: false,
                within: None,
                left_out,
            })
        };
        match self.stage {
            _ if left_out == 0 => cut(None),
            Stage::Spans if self.own >= self.keep => {
                let (span, need) = newest(&self.times, self.keep);
                self.stage = Stage::Seconds { span, need };
                self.times.clear();
                Counted::Again(self)
            }
            Stage::Spans if self.own + self.promoted >= self.keep => {
                cut(Some((Rank::Promoted, self.keep - self.own)))
            }
            Stage::Spans => cut(Some((Rank::Operator, self.keep - self.own - self.promoted))),
            Stage::Seconds { need, .. } => {
                let (second, need) = newest(&self.times, need);
                cut(Some((Rank::Own(Reverse(UnixTime(second))), need)))
            }
        }
    }
}

/// The newest key of `counts` at which `need` items, counted from the newest,
/// are reached, and how many of those at that key are needed.
fn newest(counts: &BTreeMap<u64, u64>, need: u64) -> (u64, u64) {
    let mut before = 0;
    for (&key, &count) in counts.iter().rev() {
        if before + count >= need {
            return (key, need - before);
        }
        before += count;
    }
    // Counted as fewer than needed: a count that did not see what the first saw
    // (the list changed between the reads). The cut keeps everything counted.
    (0, u64::MAX)
}

/// Where a feed is cut, as its items are written in address order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    keep: u64,
    kept: u64,
    /// Every item ranked before this is kept, and the first so many of those
    /// ranked at it; `None` when the feed fits.
    boundary: Option<(Rank, u64)>,
    /// The greatest key kept so far.
    last: Option<Key>,
    /// Whether an item the cut would keep was left out, the most kept already.
    short: bool,
    /// A cut whose bound is known already (`upto`): what it holds is kept.
    within: Option<Bound>,
    left_out: u64,
}

impl Cut {
    /// Whether the next item, in address order, is kept. Never more than
    /// `keep`, should the list have grown since it was counted.
    pub fn keeps(&mut self, key: Key) -> bool {
        if let Some(within) = self.within {
            return within.holds(key);
        }
        let ranked = match &mut self.boundary {
            None => true,
            Some((boundary, _)) if key.rank < *boundary => true,
            Some((boundary, room)) if key.rank == *boundary && *room > 0 => {
                *room -= 1;
                true
            }
            Some(_) => false,
        };
        if ranked && self.kept == self.keep {
            self.short = true;
            return false;
        }
        if ranked {
            self.kept += 1;
            self.last = self.last.max(Some(key));
        }
        ranked
    }

    /// How far the cut reached, once every item has been weighed: the bound a
    /// cursor carries. `None` when what it kept is not every item up to a
    /// bound (the list changed after it was counted): that cursor's next
    /// delta is the whole feed.
    pub fn bound(&self) -> Option<Bound> {
        if self.within.is_some() {
            return self.within;
        }
        match (self.boundary, self.last) {
            _ if self.short => None,
            (None, _) => Some(Bound::Everything),
            (Some(_), last) => last.map(Bound::Upto),
        }
    }

    /// The cut up to a bound found before (a token's pull counts it first, so
    /// that its position keeps it), which left out `left_out` items.
    pub fn upto(bound: Bound, left_out: u64) -> Self {
        Self {
            keep: u64::MAX,
            kept: 0,
            boundary: None,
            last: None,
            short: false,
            within: Some(bound),
            left_out,
        }
    }

    /// How many items the feed keeps at most: `maxItems`.
    pub fn keep(&self) -> u64 {
        self.keep
    }

    /// How many items the feed had beyond what it keeps, when counted.
    pub fn left_out(&self) -> u64 {
        self.left_out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn own(at: u64) -> Rank {
        Rank::Own(Reverse(UnixTime(at)))
    }

    /// Items in address order: the `i`th at place `i`.
    fn keys(ranks: &[Rank]) -> Vec<Key> {
        (0..ranks.len())
            .map(|i| Key {
                rank: ranks[i],
                place: (i as u128, 128),
            })
            .collect()
    }

    /// The cut of `keys` (in address order) to `keep`, counted as a feed
    /// counts it, reading the items again as often as the count asks.
    fn cut_of(keys: &[Key], keep: u64) -> (Cut, usize) {
        let mut tally = Tally::new(keep);
        let mut reads = 0;
        loop {
            reads += 1;
            for key in keys {
                tally.add(key.rank);
            }
            match tally.finish() {
                Counted::Cut(cut) => return (cut, reads),
                Counted::Again(again) => tally = again,
            }
        }
    }

    /// Which items a cut to `keep` keeps, by their place; what it left out;
    /// how many reads it took.
    fn kept(ranks: &[Rank], keep: u64) -> (Vec<usize>, u64, usize) {
        let keys = keys(ranks);
        let (mut cut, reads) = cut_of(&keys, keep);
        let kept = (0..keys.len()).filter(|&i| cut.keeps(keys[i])).collect();
        (kept, cut.left_out(), reads)
    }

    /// The items a feed keeps, worked out the plain way: sorted by rank, then
    /// place, the first `keep`, in address order.
    fn expected(ranks: &[Rank], keep: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..ranks.len()).collect();
        order.sort_by_key(|&i| (ranks[i], i));
        order.truncate(keep as usize);
        order.sort_unstable();
        order
    }

    #[test]
    fn a_cut_keeps_own_entries_newest_first_then_promoted_then_operator() {
        let ranks = [
            Rank::Operator,
            own(100),
            Rank::Promoted,
            own(300),
            Rank::Operator,
            own(200),
            Rank::Promoted,
            own(400),
        ];
        assert_eq!(kept(&ranks, 2), (vec![3, 7], 6, 2), "the two newest own");
        assert_eq!(kept(&ranks, 4), (vec![1, 3, 5, 7], 4, 2), "every own");
        assert_eq!(
            kept(&ranks, 5),
            (vec![1, 2, 3, 5, 7], 3, 1),
            "then promoted"
        );
        assert_eq!(
            kept(&ranks, 7),
            (vec![0, 1, 2, 3, 5, 6, 7], 1, 1),
            "then the operator's, in address order"
        );
        assert_eq!(kept(&ranks, 8).1, 0, "it fits");
        assert_eq!(kept(&ranks, 100), ((0..8).collect(), 0, 1));
    }

    #[test]
    fn entries_listed_in_one_second_are_kept_in_address_order() {
        let ranks = [own(50), own(70), own(50), own(50), own(10)];
        assert_eq!(kept(&ranks, 3).0, vec![0, 1, 2]);
    }

    /// A small random number generator, the same every run.
    fn numbers() -> impl FnMut(u64) -> u64 {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below.max(1)
        }
    }

    /// A random rank: own entries across several spans or within one.
    fn any_rank(next: &mut impl FnMut(u64) -> u64, spans: bool) -> Rank {
        match next(4) {
            0 => Rank::Promoted,
            1 => Rank::Operator,
            _ if spans => own(1_000_000 + next(5) * 20_000 + next(3)),
            _ => own(1_000_000 + next(40)),
        }
    }

    #[test]
    fn any_list_is_cut_as_sorting_by_rank_would_cut_it() {
        let mut next = numbers();
        for round in 0..300 {
            let len = next(60) as usize;
            let ranks: Vec<Rank> = (0..len)
                .map(|_| any_rank(&mut next, round % 2 == 1))
                .collect();
            let keep = 1 + next(len as u64 + 2);
            let (got, left_out, _) = kept(&ranks, keep);
            assert_eq!(got, expected(&ranks, keep), "{ranks:?} cut to {keep}");
            assert_eq!(left_out, (len as u64).saturating_sub(keep));
        }
    }

    #[test]
    fn a_cut_never_keeps_more_than_asked_if_the_list_grew_since_it_was_counted() {
        let (mut cut, _) = cut_of(&keys(&[Rank::Operator, Rank::Operator]), 2);
        let kept = keys(&[own(1), own(2), Rank::Operator])
            .into_iter()
            .filter(|&key| cut.keeps(key))
            .count();
        assert_eq!(kept, 2, "a cut kept more items than it was asked to keep");
        assert_eq!(
            cut.bound(),
            None,
            "a cut that left out what its bound holds gave a bound for a delta"
        );
    }

    #[test]
    fn a_bound_reads_back_as_written_and_refuses_what_it_never_writes() {
        let bounds = [
            Bound::Everything,
            Bound::Upto(Key {
                rank: own(1_765_000_000),
                place: (0xffff_1f0d_4601, 128),
            }),
            Bound::Upto(Key {
                rank: Rank::Promoted,
                place: (0x2001_0db8 << 96, 32),
            }),
            Bound::Upto(Key {
                rank: Rank::Operator,
                place: (0, 0),
            }),
        ];
        for bound in bounds {
            let text = bound.to_string();
            assert!(
                text.chars().all(|c| c.is_ascii_alphanumeric()),
                "{text}: a cursor carries it in a query and an ETag"
            );
            assert_eq!(Bound::parse(&text), Some(bound), "{text}");
        }
        for bad in [
            "", "b", "o", "o1x", "o1x1", "o1x1x", "p1x1x80", "o1x1x81", "r0x1x1x1", "o+1x1x1",
            "ox1x1",
        ] {
            assert_eq!(Bound::parse(bad), None, "{bad:?}");
        }
    }

    /// The feed at one moment: each item's key by its place.
    type Items = BTreeMap<(u128, u8), Rank>;

    /// What a whole pull cut to `keep` gives, and the bound its cursor carries.
    fn whole(items: &Items, keep: u64) -> (Vec<(u128, u8)>, Bound) {
        let keys: Vec<Key> = items
            .iter()
            .map(|(&place, &rank)| Key { rank, place })
            .collect();
        let (mut cut, _) = cut_of(&keys, keep);
        let held = keys
            .iter()
            .filter(|&&key| cut.keeps(key))
            .map(|key| key.place)
            .collect();
        (
            held,
            cut.bound()
                .expect("a list that did not change between reads"),
        )
    }

    #[test]
    fn an_agent_that_applies_every_cut_delta_holds_what_a_whole_pull_gives() {
        let mut next = numbers();
        for round in 0..200 {
            let keep = 1 + next(12);
            let mut items = Items::new();
            let (mut held, mut bound): (std::collections::BTreeSet<_>, _) = {
                let (held, bound) = whole(&items, keep);
                (held.into_iter().collect(), bound)
            };
            for step in 0..25 {
                // Random adds, removes and changes (a removal then an add, an
                // expiry moved), as the lists' own delta names them: every
                // address that changed is deleted, every one listed now that
                // changed is new.
                let mut changed = Vec::new();
                for _ in 0..1 + next(4) {
                    let place = (u128::from(next(30)), 128);
                    changed.push(place);
                    if next(3) == 0 {
                        items.remove(&place);
                    } else {
                        items.insert(place, any_rank(&mut next, round % 2 == 1));
                    }
                }
                let (now, to) = whole(&items, keep);
                let shift = Shift { from: bound, to };
                // The delta: what changed is deleted; the changed ones listed
                // now that the cut holds and were held before are new; what
                // the cut pushed out is deleted and what room let in is new.
                for place in &changed {
                    held.remove(place);
                }
                for (&place, &rank) in &items {
                    let key = Key { rank, place };
                    if changed.contains(&place) && shift.sends_new(key) {
                        held.insert(place);
                    }
                    if shift.pushes_out(key) {
                        held.remove(&place);
                    }
                    if shift.lets_in(key) {
                        held.insert(place);
                    }
                }
                assert_eq!(
                    held.iter().copied().collect::<Vec<_>>(),
                    now,
                    "round {round}, step {step}: an agent that applied every delta does not hold what a whole pull gives"
                );
                bound = to;
            }
        }
    }
}
