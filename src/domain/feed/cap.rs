//! A whole feed cut to what a device holds (`maxItems`): when the feed has
//! more items, it keeps the most relevant, the holder's own entries first
//! (the newest first), then the global blocks the network promoted, then the
//! operator's; items that rank alike are kept in address order. A feed is read
//! in address order, so where it is cut is counted first, in one read of its
//! items (a second one when the cut falls among own entries listed within one
//! span of hours), and kept as the items are read once more to be written.
//! What the counting holds grows with the hours the own entries span, never
//! with how many items there are.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::domain::feed::item::{FeedItem, Source};
use crate::domain::time::UnixTime;

/// The most items a feed may be asked to keep.
pub const MAX_ITEMS: u64 = 10_000_000;

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
    left_out: u64,
}

impl Cut {
    /// Whether the next item, in address order, is kept. Never more than
    /// `keep`, should the list have grown since it was counted.
    pub fn keeps(&mut self, rank: Rank) -> bool {
        if self.kept == self.keep {
            return false;
        }
        let kept = match &mut self.boundary {
            None => true,
            Some((boundary, _)) if rank < *boundary => true,
            Some((boundary, room)) if rank == *boundary && *room > 0 => {
                *room -= 1;
                true
            }
            Some(_) => false,
        };
        self.kept += u64::from(kept);
        kept
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
    use super::*;

    fn own(at: u64) -> Rank {
        Rank::Own(Reverse(UnixTime(at)))
    }

    /// The cut of `ranks` (in address order) to `keep`, counted as a feed
    /// counts it, reading the items again as often as the count asks; then
    /// which items it keeps, by their place.
    fn kept(ranks: &[Rank], keep: u64) -> (Vec<usize>, u64, usize) {
        let mut tally = Tally::new(keep);
        let mut reads = 0;
        let mut cut = loop {
            reads += 1;
            for &rank in ranks {
                tally.add(rank);
            }
            match tally.finish() {
                Counted::Cut(cut) => break cut,
                Counted::Again(again) => tally = again,
            }
        };
        let kept = (0..ranks.len()).filter(|&i| cut.keeps(ranks[i])).collect();
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

    #[test]
    fn any_list_is_cut_as_sorting_by_rank_would_cut_it() {
        // Times across several spans and within one, ranks of every kind.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for round in 0..300 {
            let len = next(60) as usize;
            let ranks: Vec<Rank> = (0..len)
                .map(|_| match next(4) {
                    0 => Rank::Promoted,
                    1 => Rank::Operator,
                    _ if round % 2 == 0 => own(1_000_000 + next(40)),
                    _ => own(1_000_000 + next(5) * 20_000 + next(3)),
                })
                .collect();
            let keep = 1 + next(len as u64 + 2);
            let (got, left_out, _) = kept(&ranks, keep);
            assert_eq!(got, expected(&ranks, keep), "{ranks:?} cut to {keep}");
            assert_eq!(left_out, (len as u64).saturating_sub(keep));
        }
    }

    #[test]
    fn a_cut_never_keeps_more_than_asked_if_the_list_grew_since_it_was_counted() {
        let mut tally = Tally::new(2);
        for rank in [Rank::Operator, Rank::Operator] {
            tally.add(rank);
        }
        let Counted::Cut(mut cut) = tally.finish() else {
            panic!("two operator blocks are counted in one read");
        };
        let kept = [own(1), own(2), Rank::Operator]
            .into_iter()
            .filter(|&rank| cut.keeps(rank))
            .count();
        assert_eq!(kept, 2, "a cut kept more items than it was asked to keep");
    }
}
