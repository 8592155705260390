//! What a push to the holder's Cloudflare list sends, and when: only the
//! difference between the items wanted and the items put there, removals first
//! (they make room), one bulk operation at a time; changes gathered so that a
//! burst is one push; a refused or failed call tried again later.

use serde::{Deserialize, Serialize};

use super::item::ItemText;
use crate::domain::time::UnixTime;

/// A holder's change waits this long, so that the rest of its burst goes with it.
pub const GATHER_SECONDS: u64 = 5;
/// At most one push every this many seconds per holder.
pub const PUSH_SPACING_SECONDS: u64 = 10;
/// A bulk operation is asked after again this soon while Cloudflare runs it.
pub const POLL_SECONDS: u64 = 1;
/// The list is compared whole with what Cloudflare holds at least this often, so
/// that an item changed by hand is put right.
pub const FULL_COMPARISON_SECONDS: u64 = 3_600;
/// The operator's lists' versions are looked at this often by each connected
/// holder's object: with the isolate's hold on a snapshot (`CACHE_SECONDS`, at
/// most 60) and a push's gathering, a change of the global list or the allow
/// list reaches the holder's Cloudflare list within 5 minutes.
pub const OPERATOR_LOOK_SECONDS: u64 = 180;
/// Items Cloudflare gives in one page of a list (its most).
pub const ITEMS_PAGE: usize = 500;
/// Items one bulk operation adds or removes at most; the rest go in the next.
pub const ITEMS_PER_OPERATION: usize = 10_000;

/// An item as put in the list: its Cloudflare id, once a page of the list told it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutItem {
    pub item: ItemText,
    pub id: Option<String>,
}

/// The next bulk operation a push sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Items to delete, by their ids.
    Remove(Vec<PutItem>),
    /// Items to delete whose ids are not known yet: the list's pages are read first.
    LearnIds,
    Add(Vec<ItemText>),
    /// The list holds exactly what is wanted.
    Done,
}

/// The next step from what is wanted and what was put: removals first, at most
/// `ITEMS_PER_OPERATION` at a time. The items put are read a page at a time,
/// both they and the items wanted in their text's order (SQLite's `ORDER BY`
/// on a text column is bytewise, as `str`'s order is), so that what this holds
/// is the items wanted and one operation's items, never the list put besides.
pub struct Difference<'a> {
    wanted: &'a [ItemText],
    /// The first item wanted not yet met among the items put.
    next: usize,
    removals: Vec<PutItem>,
    /// An unwanted item put whose id is not known yet.
    unknown_id: bool,
    additions: Vec<ItemText>,
}

impl<'a> Difference<'a> {
    /// `wanted`: sorted, each once.
    pub fn new(wanted: &'a [ItemText]) -> Self {
        Self {
            wanted,
            next: 0,
            removals: Vec::new(),
            unknown_id: false,
            additions: Vec::new(),
        }
    }

    /// The next page of the items put, in order, after the pages before it.
    pub fn put(&mut self, page: impl IntoIterator<Item = PutItem>) {
        for put in page {
            self.wanted_before(Some(&put.item));
            if self.wanted.get(self.next) == Some(&put.item) {
                self.next += 1;
            } else if put.id.is_none() {
                self.unknown_id = true;
            } else if self.removals.len() < ITEMS_PER_OPERATION {
                self.removals.push(put);
            }
        }
    }

    /// The items wanted before `item` (all that are left, for `None`): not put.
    fn wanted_before(&mut self, item: Option<&ItemText>) {
        while let Some(wanted) = self
            .wanted
            .get(self.next)
            .filter(|wanted| item.is_none_or(|item| *wanted < item))
        {
            if self.additions.len() < ITEMS_PER_OPERATION {
                self.additions.push(wanted.clone());
            }
            self.next += 1;
        }
    }

    /// The step, once every page was read.
    pub fn finish(mut self) -> Step {
        self.wanted_before(None);
        if self.unknown_id {
            Step::LearnIds
        } else if !self.removals.is_empty() {
            Step::Remove(self.removals)
        } else if !self.additions.is_empty() {
            Step::Add(self.additions)
        } else {
            Step::Done
        }
    }
}

/// Cloudflare's words when an addition passes the account's cap.
pub const AT_CAPACITY: &str = "maximum number of items";

/// How many items the list may hold: `max`, and, once Cloudflare refused a
/// total (`refused_at`) for the account's cap, halfway from the `put` items
/// towards it, so that the list fills what the account takes in a few pushes.
pub fn room(max: u64, put: u64, refused_at: Option<u64>) -> u64 {
    match refused_at {
        None => max,
        Some(refused) if refused <= put + 1 => max.min(put),
        Some(refused) => max.min(put + (refused - put) / 2),
    }
}

/// When a push may go after a change at `now`: after the burst's gathering, and
/// no sooner than `PUSH_SPACING_SECONDS` after the last one was sent.
pub fn push_due(now: UnixTime, last_sent: Option<UnixTime>) -> UnixTime {
    let gathered = now.plus(GATHER_SECONDS);
    last_sent.map_or(gathered, |sent| {
        gathered.max(sent.plus(PUSH_SPACING_SECONDS))
    })
}

/// How long to wait after the `attempt`th refusal in a row (a 429 or a 5xx): 10
/// seconds, doubling, at most 60; or what Cloudflare's `Retry-After` says, up to an hour.
pub fn retry_seconds(attempt: u32, retry_after: Option<u64>) -> u64 {
    match retry_after {
        Some(seconds) => seconds.clamp(1, 3_600),
        None => 10u64
            .saturating_mul(1 << attempt.saturating_sub(1).min(6))
            .min(60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str) -> ItemText {
        ItemText(text.to_owned())
    }

    fn put(text: &str, id: Option<&str>) -> PutItem {
        PutItem {
            item: item(text),
            id: id.map(str::to_owned),
        }
    }

    /// The step for `wanted` and `put`, the items put read in pages of `page`.
    fn step(wanted: &[&str], mut put: Vec<PutItem>, page: usize) -> Step {
        let mut wanted: Vec<ItemText> = wanted.iter().map(|text| item(text)).collect();
        wanted.sort();
        put.sort_by(|a, b| a.item.cmp(&b.item));
        let mut difference = Difference::new(&wanted);
        for chunk in put.chunks(page) {
            difference.put(chunk.to_vec());
        }
        difference.finish()
    }

    #[test]
    fn removals_go_first_then_additions_then_nothing() {
        let wanted = ["1.1.1.1", "2.2.2.2"];
        let stale = put("3.3.3.3", Some("id3"));
        let kept = put("1.1.1.1", Some("id1"));
        for page in [1, 2, 10] {
            assert_eq!(
                step(&wanted, vec![kept.clone(), stale.clone()], page),
                Step::Remove(vec![stale.clone()])
            );
            assert_eq!(
                step(&wanted, vec![kept.clone()], page),
                Step::Add(vec![item("2.2.2.2")])
            );
            assert_eq!(
                step(&wanted, vec![kept.clone(), put("2.2.2.2", None)], page),
                Step::Done
            );
        }
    }

    #[test]
    fn an_unwanted_item_without_an_id_is_looked_up_first() {
        assert_eq!(
            step(
                &[],
                vec![put("1.1.1.1", None), put("2.2.2.2", Some("id2"))],
                1
            ),
            Step::LearnIds
        );
    }

    #[test]
    fn whatever_the_pages_an_operation_takes_at_most_its_share_in_order() {
        let wanted: Vec<String> = (0..2 * ITEMS_PER_OPERATION + 10)
            .map(|n| format!("10.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255))
            .collect();
        let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
        // Every other item wanted is put already: the rest go, the first in order.
        let put: Vec<PutItem> = wanted
            .iter()
            .step_by(2)
            .map(|text| PutItem {
                item: item(text),
                id: Some(format!("id-{text}")),
            })
            .collect();
        let Step::Add(additions) = step(&wanted, put.clone(), 333) else {
            panic!("additions")
        };
        let mut missing: Vec<ItemText> =
            wanted.iter().skip(1).step_by(2).map(|t| item(t)).collect();
        missing.sort();
        missing.truncate(ITEMS_PER_OPERATION);
        assert_eq!(
            additions, missing,
            "the first items not put, in order, an operation's worth"
        );
        assert_eq!(step(&wanted, put, 7), Step::Add(additions));
    }

    #[test]
    fn a_refused_total_is_approached_by_halves_and_never_reached() {
        assert_eq!(room(10, 0, None), 10);
        assert_eq!(room(10, 0, Some(3)), 1, "three refused: one goes");
        assert_eq!(room(10, 1, Some(3)), 2);
        assert_eq!(
            room(10, 2, Some(3)),
            2,
            "one short of what was refused: full"
        );
        assert_eq!(room(4, 0, Some(100)), 4, "the holder's own cap still holds");
    }

    #[test]
    fn a_burst_is_gathered_and_pushes_are_spaced() {
        assert_eq!(push_due(UnixTime(100), None), UnixTime(105));
        assert_eq!(push_due(UnixTime(100), Some(UnixTime(99))), UnixTime(109));
        assert_eq!(push_due(UnixTime(100), Some(UnixTime(50))), UnixTime(105));
    }

    #[test]
    fn retries_start_within_ten_seconds_and_double_to_a_minute() {
        let waits: Vec<u64> = (1..=6).map(|n| retry_seconds(n, None)).collect();
        assert_eq!(waits, [10, 20, 40, 60, 60, 60]);
        assert_eq!(retry_seconds(1, Some(120)), 120, "Retry-After wins");
        assert_eq!(retry_seconds(40, None), 60);
    }
}
