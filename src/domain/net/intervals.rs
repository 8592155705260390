//! Sets of addresses of one family as sorted, disjoint, never adjacent inclusive
//! intervals, and the operations the lists' snapshots and deltas need: a union of
//! ranges, and the combination of two sets (union, difference, symmetric
//! difference), each one pass over both.

use std::rc::Rc;

use crate::domain::net::family::Addr;

/// Sorted, disjoint, never adjacent inclusive intervals.
pub type Intervals<A = u32> = Vec<(A, A)>;

/// A set read in order from any address on: intervals held in one slice, or a
/// list held as its shards (`snapshot::Shards`), never flattened for a lookup.
pub trait Seek<A: Addr = u32> {
    /// The set's intervals in order, from the first that ends at or after `low`.
    fn from(&self, low: A) -> impl Iterator<Item = (A, A)> + '_;

    /// The maximal interval that holds `addr`.
    fn interval_of(&self, addr: A) -> Option<(A, A)> {
        self.from(addr).next().filter(|&(first, _)| first <= addr)
    }
}

impl<A: Addr> Seek<A> for [(A, A)] {
    fn from(&self, low: A) -> impl Iterator<Item = (A, A)> + '_ {
        self[self.partition_point(|&(_, last)| last < low)..]
            .iter()
            .copied()
    }
}

/// Sets to cut another by, each held whole and never united with the others: a
/// union would copy them all, the operator's lists among them, for every request
/// that weighs one holder's list against them.
pub type Cuts<A = u32> = Rc<[Rc<Intervals<A>>]>;

/// `set` without what any of `cuts` holds, read lazily: `set` may be a list of
/// millions read in order. An interval no cut touches (most of them) passes as
/// it is; each cut is looked up by its boundaries, once an interval.
pub fn without<A: Addr>(
    set: impl Iterator<Item = (A, A)>,
    cuts: Cuts<A>,
) -> impl Iterator<Item = (A, A)> {
    set.flat_map(move |(first, last)| {
        let here = cuts
            .iter()
            .map(|cut| clip(cut, first, last))
            .filter(|part| !part.is_empty())
            .reduce(|a, b| combine(&a, &b, Op::Union))
            .unwrap_or_default();
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
pub fn union_of_sorted<A: Addr>(ranges: impl IntoIterator<Item = (A, A)>) -> Intervals<A> {
    merged(ranges).collect()
}

/// Whether an interval beginning at `next` overlaps or touches one ending at `last`.
fn touches<A: Addr>(last: A, next: A) -> bool {
    last.after().is_none_or(|after| next <= after)
}

/// `union_of_sorted`, read lazily.
pub fn merged<A: Addr>(ranges: impl IntoIterator<Item = (A, A)>) -> impl Iterator<Item = (A, A)> {
    let mut ranges = ranges.into_iter().peekable();
    std::iter::from_fn(move || {
        let (first, mut last) = ranges.next()?;
        while let Some((_, next_last)) = ranges.next_if(|&(next, _)| touches(last, next)) {
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
pub fn combine<A: Addr>(a: &[(A, A)], b: &[(A, A)], op: Op) -> Intervals<A> {
    combine_iter(a.iter().copied(), b.iter().copied(), op)
}

/// From the least first to the greatest last of `a` and `b`, each sorted; `None`
/// when both are empty.
pub fn hull<A: Addr>(a: &[(A, A)], b: &[(A, A)]) -> Option<(A, A)> {
    match (a, b) {
        ([], []) => None,
        ([], one) | (one, []) => Some((one[0].0, one[one.len() - 1].1)),
        (a, b) => Some((a[0].0.min(b[0].0), a[a.len() - 1].1.max(b[b.len() - 1].1))),
    }
}

/// The intervals of `set` (sorted, apart) that overlap `span`, found by two
/// binary searches: all that a combination limited to `span` reads of it.
pub fn overlapping<A: Addr>(set: &[(A, A)], (first, last): (A, A)) -> &[(A, A)] {
    let start = set.partition_point(|&(_, end)| end < first);
    let stop = set.partition_point(|&(begin, _)| begin <= last);
    &set[start..stop.max(start)]
}

/// Where a set starts or stops holding: `(x, false)` just before `x`, `(x, true)`
/// just after it. Points sort in address order without ever naming the address
/// past the top of the family (`last + 1`), which no integer of its width holds.
type Point<A> = (A, bool);

/// `combine` of two sets read in order, never held whole: what the operator lists' object uses
/// on lists of millions of entries.
pub fn combine_iter<A: Addr>(
    a: impl IntoIterator<Item = (A, A)>,
    b: impl IntoIterator<Item = (A, A)>,
    op: Op,
) -> Intervals<A> {
    let points = |set: (A, A)| -> [Point<A>; 2] { [(set.0, false), (set.1, true)] };
    let mut pa = a.into_iter().flat_map(points).peekable();
    let mut pb = b.into_iter().flat_map(points).peekable();
    let (mut inside_a, mut inside_b) = (false, false);
    let mut out: Intervals<A> = Vec::new();
    let mut start: Option<A> = None;
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
        match (start, holds, at) {
            // A set that goes on holding past a point after `x` holds `x + 1`.
            (None, true, (x, after)) => start = Some(if after { next(x) } else { x }),
            // A set that stops holding before `x` held `x - 1`.
            (Some(from), false, (x, after)) => {
                push_merged(&mut out, from, if after { x } else { previous(x) });
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The address after `x`, which a set still holding past `x` proves exists.
fn next<A: Addr>(x: A) -> A {
    x.after().unwrap_or(x)
}

/// The address before `x`, which a set that held something before `x` proves exists.
fn previous<A: Addr>(x: A) -> A {
    x.before().unwrap_or(x)
}

fn push_merged<A: Addr>(out: &mut Intervals<A>, first: A, last: A) {
    match out.last_mut() {
        Some((_, end)) if touches(*end, first) => *end = (*end).max(last),
        _ => out.push((first, last)),
    }
}

/// The part of `set` within `[low, high]`.
pub fn clip<A: Addr>(set: &[(A, A)], low: A, high: A) -> Intervals<A> {
    overlapping(set, (low, high))
        .iter()
        .map(|&(first, last)| (first.max(low), last.min(high)))
        .collect()
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

    fn ipv6_set_strategy() -> impl Strategy<Value = Intervals<u128>> {
        let addr = prop_oneof![any::<u128>(), 0u128..200, (u128::MAX - 200)..=u128::MAX];
        proptest::collection::vec((addr, 0u128..100), 0..10).prop_map(|mut spans| {
            spans.sort();
            union_of_sorted(
                spans
                    .into_iter()
                    .map(|(first, len)| (first, first.saturating_add(len))),
            )
        })
    }

    fn holds<A: Addr>(set: &[(A, A)], addr: A) -> bool {
        set.iter().any(|&(a, b)| a <= addr && addr <= b)
    }

    #[test]
    fn ranges_merge_into_the_set_they_cover() {
        assert_eq!(
            union_of_sorted([(1, 5), (2, 3), (6, 9), (11, 12), (u32::MAX, u32::MAX)]),
            [(1, 9), (11, 12), (u32::MAX, u32::MAX)]
        );
        assert_eq!(
            combine(&[(0u32, 9)], &[(3, 4)], Op::Xor),
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
        assert_eq!(clip(&[(0u32, 4), (8, 20)], 3, 9), [(3, 4), (8, 9)]);
        assert_eq!(
            combine(
                &[(0, u128::MAX)],
                &[(0, 0), (u128::MAX, u128::MAX)],
                Op::Minus
            ),
            [(1, u128::MAX - 1)],
            "IPv6's whole space without its two ends"
        );
        assert_eq!(
            combine(&[(0, 4)], &[(5, u128::MAX)], Op::Union),
            [(0, u128::MAX)]
        );
        assert_eq!(
            union_of_sorted([(0u128, u128::MAX), (u128::MAX, u128::MAX)]),
            [(0, u128::MAX)]
        );
    }

    #[test]
    fn the_hull_spans_both_sets_and_none_when_both_are_empty() {
        assert_eq!(hull::<u32>(&[], &[]), None);
        assert_eq!(hull(&[(5u32, 6), (9, 9)], &[(2, 3)]), Some((2, 9)));
        assert_eq!(hull(&[], &[(2u32, 3), (7, 8)]), Some((2, 8)));
    }

    #[test]
    fn an_interval_that_meets_the_span_at_either_end_overlaps_it() {
        let set = [(5u32, 10), (20, 30)];
        assert_eq!(
            overlapping(&set, (10, 19)),
            &[(5, 10)],
            "an interval ending where the span begins meets it"
        );
        assert_eq!(overlapping(&set, (0, 5)), &[(5, 10)]);
        assert_eq!(overlapping(&set, (11, 19)), &[] as &[(u32, u32)]);
        assert_eq!(overlapping(&set, (10, 20)), &set);
        assert_eq!(overlapping(&set, (31, u32::MAX)), &[] as &[(u32, u32)]);
    }

    proptest! {
        #[test]
        fn overlapping_is_every_interval_that_meets_the_span_and_no_other(
            set in set_strategy(),
            a in prop_oneof![any::<u32>(), 0u32..300, (u32::MAX - 300)..=u32::MAX],
            b in prop_oneof![any::<u32>(), 0u32..300, (u32::MAX - 300)..=u32::MAX],
        ) {
            let span = (a.min(b), a.max(b));
            let meets: Vec<_> = set
                .iter()
                .copied()
                .filter(|&(first, last)| first <= span.1 && last >= span.0)
                .collect();
            prop_assert_eq!(overlapping(&set, span), meets.as_slice());
        }

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
        fn a_set_read_lazily_without_others_is_their_difference(
            a in set_strategy(),
            b in set_strategy(),
            c in set_strategy(),
            probes in proptest::collection::vec(any::<u32>(), 0..30),
        ) {
            let lazy: Intervals = without(a.iter().copied(), Rc::from([Rc::new(b.clone())])).collect();
            prop_assert_eq!(&lazy, &combine(&a, &b, Op::Minus));
            let both: Cuts = Rc::from([Rc::new(b.clone()), Rc::new(c.clone())]);
            let lazy: Intervals = without(a.iter().copied(), both).collect();
            prop_assert_eq!(&lazy, &combine(&a, &combine(&b, &c, Op::Union), Op::Minus), "read lazily without two lists, a set is cut by each of them");
            let none: Intervals = without(a.iter().copied(), Rc::from([])).collect();
            prop_assert_eq!(&none, &a);
            for addr in probes.into_iter().chain(a.iter().map(|&(first, _)| first)) {
                let expected = a.iter().copied().find(|&(x, y)| x <= addr && addr <= y);
                prop_assert_eq!(a.interval_of(addr), expected, "{:#x}", addr);
            }
        }

        #[test]
        fn ipv6_sets_combine_as_ipv4_ones_do_up_to_the_top_of_the_space(
            a in ipv6_set_strategy(),
            b in ipv6_set_strategy(),
            probes in proptest::collection::vec(any::<u128>(), 0..30),
        ) {
            let edges = a.iter().chain(&b).flat_map(|&(x, y)| [x, y, x.wrapping_sub(1), y.wrapping_add(1)]);
            let probes: Vec<u128> = probes.into_iter().chain(edges).collect();
            for op in [Op::Union, Op::Both, Op::Minus, Op::Xor] {
                let out = combine(&a, &b, op);
                prop_assert!(out.windows(2).all(|w| w[0].1 < w[1].0 && !touches(w[0].1, w[1].0)), "sorted, disjoint, not adjacent");
                for &addr in &probes {
                    prop_assert_eq!(holds(&out, addr), op.holds(holds(&a, addr), holds(&b, addr)), "{:?} at {:#x}", op, addr);
                }
            }
            let there_and_back = combine(&combine(&a, &b, Op::Xor), &b, Op::Xor);
            prop_assert_eq!(there_and_back, a, "a change applied twice is undone");
        }
    }
}
