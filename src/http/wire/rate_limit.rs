//! The day's quota as IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers).

use crate::domain::holder::quota::Quota;
use crate::domain::time::SECONDS_PER_DAY;

/// `RateLimit-Policy` and `RateLimit`.
pub fn headers(quota: &Quota) -> [(&'static str, String); 2] {
    let (additions, removals, reset) = (quota.additions, quota.removals, quota.resets_in_seconds);
    let policy = format!(
        "\"additions\";q={};w={SECONDS_PER_DAY}, \"removals\";q={};w={SECONDS_PER_DAY}",
        additions.limit, removals.limit
    );
    let remaining = format!(
        "\"additions\";r={};t={reset}, \"removals\";r={};t={reset}",
        additions.left, removals.left
    );
    [("RateLimit-Policy", policy), ("RateLimit", remaining)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::list::{DailyUsage, Limits};
    use crate::domain::time::UnixTime;

    const NOON: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn headers_state_quota_remaining_and_reset() {
        let usage = DailyUsage {
            day: NOON.utc_day(),
            added: 10,
            removed: 1000,
            refused: 0,
            ..DailyUsage::default()
        };
        let [policy, remaining] = headers(&Quota::of(usage, Limits::default(), NOON));
        assert_eq!(
            policy,
            (
                "RateLimit-Policy",
                "\"additions\";q=6000;w=86400, \"removals\";q=1000;w=86400".to_owned()
            )
        );
        assert_eq!(
            remaining,
            (
                "RateLimit",
                "\"additions\";r=5990;t=43200, \"removals\";r=0;t=43200".to_owned()
            )
        );
    }
}
