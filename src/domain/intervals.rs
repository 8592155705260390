//! Sets of addresses as sorted, disjoint, never adjacent inclusive intervals, and
//! the operations the lists' snapshots and deltas need: a union of ranges, and the
//! combination of two sets (union, difference, symmetric difference), each one
//! pass over both.

use std::rc::Rc;

/// Sorted, disjoint, never adjacent inclusive intervals.
pub type Intervals = Vec<(u32, u32)>;

/// A set read in order from any address on: intervals held in one slice, or a
/// list held as its shards (`snapshot::Shards`), never flattened for a lookup.
pub trait Seek {
    /// The set's intervals in order, from the first that ends at or after `low`.
    fn from(&self, low: u32) -> impl Iterator<Item = (u32, u32)> + '_;

    /// The maximal interval that holds `addr`.
    fn interval_of(&self, addr: u32) -> Option<(u32, u32)> {
        self.from(addr).next().filter(|&(first, _)| first <= addr)
    }
}

impl Seek for [(u32, u32)] {
    fn from(&self, low: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        self[self.partition_point(|&(_, last)| last < low)..]
            .iter()
            .copied()
    }
}

/// `set` without what `cut` holds, read lazily: `set` may be a list of millions
/// read in order, `cut` is held whole. An interval `cut` does not touch (most of
/// them) passes as it is.
pub fn without(
    set: impl Iterator<Item = (u32, u32)>,
    cut: Rc<Intervals>,
) -> impl Iterator<Item = (u32, u32)> {
    set.flat_map(move |(first, last)| {
        let here = clip(&cut, first, last);
        let whole = here.is_empty().then_some((first, last));
        let rest = if here.is_empty() {
            Vec::new()
        } else {
            combine(&[(first, last)], &here, Op::Minus)
        };
        whole.into_iter().chain(rest)
    })
}

/// Ranges sorted by their first address (overlapping, nested or adjacent ones
/// allowed) as the set they cover.
pub fn union_of_sorted(ranges: impl IntoIterator<Item = (u32, u32)>) -> Intervals {
    merged(ranges).collect()
}

/// `union_of_sorted`, read lazily.
pub fn merged(ranges: impl IntoIterator<Item = (u32, u32)>) -> impl Iterator<Item = (u32, u32)> {
    let mut ranges = ranges.into_iter().peekable();
    std::iter::from_fn(move || {
        let (first, mut last) = ranges.next()?;
        while let Some((_, next_last)) =
            ranges.next_if(|&(next, _)| u64::from(next) <= u64::from(last) + 1)
        {
            last = last.max(next_last);
        }
        Some((first, last))
    })
}

/// How two sets combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Union,
    /// What both hold.
    Both,
    /// What the first holds and the second does not.
    Minus,
    /// What exactly one of them holds: the change from one to the other.
    Xor,
}

impl Op {
    fn holds(self, a: bool, b: bool) -> bool {
        match self {
            Self::Union => a || b,
            Self::Both => a && b,
            Self::Minus => a && !b,
            Self::Xor => a != b,
        }
    }
}

/// `a` and `b` combined by `op`, in one pass over the boundaries of both.
pub fn combine(a: &[(u32, u32)], b: &[(u32, u32)], op: Op) -> Intervals {
    combine_iter(a.iter().copied(), b.iter().copied(), op)
}

/// `combine` of two sets read in order, never held whole: what the writer uses
/// on lists of millions of entries.
pub fn combine_iter(
    a: impl IntoIterator<Item = (u32, u32)>,
    b: impl IntoIterator<Item = (u32, u32)>,
    op: Op,
) -> Intervals {
    // Each set as the sorted points where it starts or stops holding (`last + 1`,
    // which may be 2^32, so the points are u64).
    let mut pa = a
        .into_iter()
        .flat_map(|(first, last)| [u64::from(first), u64::from(last) + 1])
        .peekable();
    let mut pb = b
        .into_iter()
        .flat_map(|(first, last)| [u64::from(first), u64::from(last) + 1])
        .peekable();
    let (mut inside_a, mut inside_b) = (false, false);
    let mut out: Intervals = Vec::new();
    let mut start: Option<u64> = None;
    loop {
        let at = match (pa.peek(), pb.peek()) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        while pa.next_if_eq(&at).is_some() {
            inside_a = !inside_a;
        }
        while pb.next_if_eq(&at).is_some() {
            inside_b = !inside_b;
        }
        let holds = op.holds(inside_a, inside_b);
        match (start, holds) {
            (None, true) => start = Some(at),
            (Some(from), false) => {
                push_merged(&mut out, from as u32, (at - 1) as u32);
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn push_merged(out: &mut Intervals, first: u32, last: u32) {
    match out.last_mut() {
        Some((_, end)) if u64::from(first) <= u64::from(*end) + 1 => *end = (*end).max(last),
        _ => out.push((first, last)),
    }
}

/// The part of `set` within `[low, high]`.
pub fn clip(set: &[(u32, u32)], low: u32, high: u32) -> Intervals {
    let from = set.partition_point(|&(_, last)| last < low);
    set[from..]
        .iter()
        .take_while(|&&(first, _)| first <= high)
        .map(|&(first, last)| (first.max(low), last.min(high)))
        .collect()
}

/// How many addresses a set holds.
pub fn size(set: &[(u32, u32)]) -> u64 {
    set.iter()
        .map(|&(first, last)| u64::from(last) - u64::from(first) + 1)
        .sum()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn set_strategy() -> impl Strategy<Value = Intervals> {
        let addr = prop_oneof![any::<u32>(), 0u32..200, (u32::MAX - 200)..=u32::MAX];
        proptest::collection::vec((addr, 0u32..100), 0..10).prop_map(|mut spans| {
            spans.sort();
            union_of_sorted(
                spans
                    .into_iter()
                    .map(|(first, len)| (first, first.saturating_add(len))),
            )
        })
    }

    fn holds(set: &[(u32, u32)], addr: u32) -> bool {
        set.iter().any(|&(a, b)| a <= addr && addr <= b)
    }

    #[test]
    fn ranges_merge_into_the_set_they_cover() {
        assert_eq!(
            union_of_sorted([(1, 5), (2, 3), (6, 9), (11, 12), (u32::MAX, u32::MAX)]),
            [(1, 9), (11, 12), (u32::MAX, u32::MAX)]
        );
        assert_eq!(
            combine(&[(0, 9)], &[(3, 4)], Op::Xor),
            [(0, 2), (5, 9)],
            "a change in the middle of a range"
        );
        assert_eq!(
            combine(&[(0, u32::MAX)], &[(0, u32::MAX)], Op::Xor),
            [],
            "the whole space against itself"
        );
        assert_eq!(
            combine(&[(0, 4)], &[(5, u32::MAX)], Op::Union),
            [(0, u32::MAX)]
        );
        assert_eq!(clip(&[(0, 4), (8, 20)], 3, 9), [(3, 4), (8, 9)]);
        assert_eq!(size(&[(0, u32::MAX)]), 1 << 32);
    }

    proptest! {
        #[test]
        fn every_combination_holds_exactly_what_its_operation_says(
            a in set_strategy(),
            b in set_strategy(),
            probes in proptest::collection::vec(any::<u32>(), 0..30),
        ) {
            let edges = a.iter().chain(&b).flat_map(|&(x, y)| [x, y, x.wrapping_sub(1), y.wrapping_add(1)]);
            let probes: Vec<u32> = probes.into_iter().chain(edges).collect();
            for op in [Op::Union, Op::Minus, Op::Xor] {
                let out = combine(&a, &b, op);
                prop_assert!(out.windows(2).all(|w| u64::from(w[0].1) + 1 < u64::from(w[1].0)), "sorted, disjoint, not adjacent");
                for &addr in &probes {
                    prop_assert_eq!(holds(&out, addr), op.holds(holds(&a, addr), holds(&b, addr)), "{:?} at {:#x}", op, addr);
                }
            }
            let there_and_back = combine(&combine(&a, &b, Op::Xor), &b, Op::Xor);
            prop_assert_eq!(there_and_back, a, "a change applied twice is undone");
        }

        #[test]
        fn a_set_read_lazily_without_another_is_their_difference(
            a in set_strategy(),
            b in set_strategy(),
            probes in proptest::collection::vec(any::<u32>(), 0..30),
        ) {
            let lazy: Intervals = without(a.iter().copied(), Rc::new(b.clone())).collect();
            prop_assert_eq!(&lazy, &combine(&a, &b, Op::Minus));
            for addr in probes.into_iter().chain(a.iter().map(|&(first, _)| first)) {
                let expected = a.iter().copied().find(|&(x, y)| x <= addr && addr <= y);
                prop_assert_eq!(a.interval_of(addr), expected, "{:#x}", addr);
            }
        }
    }
}
