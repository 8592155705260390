//! What a push to the holder's Cloudflare list sends, and when: only the
//! difference between the items wanted and the items put there, removals first
//! (they make room), one bulk operation at a time; changes gathered so that a
//! burst is one push; a refused or failed call tried again later.

use std::collections::HashSet;

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
/// `ITEMS_PER_OPERATION` at a time.
pub fn next_step(wanted: &HashSet<ItemText>, put: &[PutItem]) -> Step {
    let put_items: HashSet<&ItemText> = put.iter().map(|p| &p.item).collect();
    let unwanted: Vec<&PutItem> = put.iter().filter(|p| !wanted.contains(&p.item)).collect();
    if !unwanted.is_empty() {
        if unwanted.iter().any(|p| p.id.is_none()) {
            return Step::LearnIds;
        }
        return Step::Remove(
            unwanted
                .into_iter()
                .take(ITEMS_PER_OPERATION)
                .cloned()
                .collect(),
        );
    }
    let mut additions: Vec<ItemText> = wanted
        .iter()
        .filter(|item| !put_items.contains(item))
        .cloned()
        .collect();
    if additions.is_empty() {
        return Step::Done;
    }
    additions.sort();
    additions.truncate(ITEMS_PER_OPERATION);
    Step::Add(additions)
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

    #[test]
    fn removals_go_first_then_additions_then_nothing() {
        let wanted: HashSet<ItemText> = [item("1.1.1.1"), item("2.2.2.2")].into();
        let stale = put("3.3.3.3", Some("id3"));
        let kept = put("1.1.1.1", Some("id1"));
        assert_eq!(
            next_step(&wanted, &[kept.clone(), stale.clone()]),
            Step::Remove(vec![stale])
        );
        assert_eq!(
            next_step(&wanted, std::slice::from_ref(&kept)),
            Step::Add(vec![item("2.2.2.2")])
        );
        assert_eq!(
            next_step(&wanted, &[kept, put("2.2.2.2", None)]),
            Step::Done
        );
    }

    #[test]
    fn an_unwanted_item_without_an_id_is_looked_up_first() {
        let wanted = HashSet::new();
        assert_eq!(next_step(&wanted, &[put("1.1.1.1", None)]), Step::LearnIds);
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
