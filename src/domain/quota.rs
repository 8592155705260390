//! The day's quota as IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers),
//! so a client can pace itself before it meets the limit message.

use super::holder::{DailyUsage, Limits};
use super::time::{UnixTime, SECONDS_PER_DAY};

/// `RateLimit-Policy` and `RateLimit` for the day's additions and removals.
/// `usage` is the day's usage after the operation; `t` is the time to 00:00 UTC.
pub fn rate_limit_headers(usage: DailyUsage, limits: Limits, now: UnixTime) -> [(&'static str, String); 2] {
    let usage = usage.on(now.utc_day());
    let policy = format!(
        "\"additions\";q={};w={SECONDS_PER_DAY}, \"removals\";q={};w={SECONDS_PER_DAY}",
        limits.additions, limits.removals
    );
    let reset = now.seconds_to_next_utc_day();
    let remaining = format!(
        "\"additions\";r={};t={reset}, \"removals\";r={};t={reset}",
        limits.additions.saturating_sub(usage.added),
        limits.removals.saturating_sub(usage.removed)
    );
    [("RateLimit-Policy", policy), ("RateLimit", remaining)]
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOON: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn headers_state_quota_remaining_and_reset() {
        let usage = DailyUsage { day: NOON.utc_day(), added: 10, removed: 1000, refused: 0 };
        let [policy, remaining] = rate_limit_headers(usage, Limits::default(), NOON);
        assert_eq!(policy, ("RateLimit-Policy", "\"additions\";q=6000;w=86400, \"removals\";q=1000;w=86400".to_owned()));
        assert_eq!(remaining, ("RateLimit", "\"additions\";r=5990;t=43200, \"removals\";r=0;t=43200".to_owned()));
    }

    #[test]
    fn usage_of_an_earlier_day_leaves_the_whole_quota() {
        let yesterday = DailyUsage { day: NOON.utc_day() - 1, added: 6000, removed: 1000, refused: 0 };
        let [_, remaining] = rate_limit_headers(yesterday, Limits::default(), NOON);
        assert_eq!(remaining.1, "\"additions\";r=6000;t=43200, \"removals\";r=1000;t=43200");
    }
}
