//! The day's quota: what `GET /api/quota` answers, and what the RateLimit headers
//! of every change say, so a client can pace itself before it meets the limit message.

use serde::Serialize;

use crate::domain::holder::list::{DailyUsage, Limits};
use crate::domain::time::UnixTime;

/// One daily limit and how much of it today has used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Allowance {
    pub limit: u32,
    pub used: u32,
    pub left: u32,
}

impl Allowance {
    fn new(limit: u32, used: u32) -> Self {
        Self {
            limit,
            used,
            left: limit.saturating_sub(used),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quota {
    pub additions: Allowance,
    pub removals: Allowance,
    /// Changes refused today because a limit was used up.
    pub refused: u32,
    /// The next 00:00 UTC, when the counters start again.
    pub resets_at: String,
    pub resets_in_seconds: u64,
}

impl Quota {
    /// `usage` as stored (of any day) seen at `now`.
    pub fn of(usage: DailyUsage, limits: Limits, now: UnixTime) -> Self {
        let today = usage.on(now.utc_day());
        let resets_in_seconds = now.seconds_to_next_utc_day();
        Self {
            additions: Allowance::new(limits.additions, today.added),
            removals: Allowance::new(limits.removals, today.removed),
            refused: today.refused,
            resets_at: now.plus(resets_in_seconds).to_rfc3339(),
            resets_in_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOON: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn usage_of_an_earlier_day_leaves_the_whole_quota() {
        let yesterday = DailyUsage {
            day: NOON.utc_day() - 1,
            added: 6000,
            removed: 1000,
            refused: 7,
            ..DailyUsage::default()
        };
        let quota = Quota::of(yesterday, Limits::default(), NOON);
        assert_eq!(
            (
                quota.additions.left,
                quota.removals.left,
                quota.resets_in_seconds
            ),
            (6000, 1000, 43_200)
        );
        assert_eq!(
            (quota.additions.used, quota.removals.used, quota.refused),
            (0, 0, 0)
        );
    }

    #[test]
    fn the_quota_says_used_left_and_when_the_day_resets() {
        let usage = DailyUsage {
            day: NOON.utc_day(),
            added: 3,
            removed: 2,
            refused: 1,
            ..DailyUsage::default()
        };
        let quota = Quota::of(
            usage,
            Limits {
                additions: 5,
                removals: 1,
                entries: 9,
                ..Limits::default()
            },
            NOON,
        );
        let json = serde_json::to_value(&quota).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "additions": { "limit": 5, "used": 3, "left": 2 },
                "removals": { "limit": 1, "used": 2, "left": 0 },
                "refused": 1,
                "resetsAt": "2026-11-22T00:00:00Z",
                "resetsInSeconds": 43200
            })
        );
    }

    #[test]
    fn one_second_before_midnight_the_reset_is_one_second_away() {
        let last = UnixTime(NOON.0 + 43_199);
        let quota = Quota::of(DailyUsage::default(), Limits::default(), last);
        assert_eq!(
            (quota.resets_in_seconds, quota.resets_at.as_str()),
            (1, "2026-11-22T00:00:00Z")
        );
    }
}
