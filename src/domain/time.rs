//! Time as the rules see it: whole seconds since the Unix epoch, read by the
//! caller and passed in, so every rule can be tested at any moment.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

pub const SECONDS_PER_DAY: u64 = 86_400;

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct UnixTime(pub u64);

/// One reading of the clock in milliseconds since the epoch: what caches compare
/// ages with. The rules take its whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Millis(pub u64);

impl Millis {
    pub fn unix(self) -> UnixTime {
        UnixTime(self.0 / 1000)
    }

    /// Milliseconds from `earlier` to this reading; none when the clock went back.
    pub fn since(self, earlier: Millis) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl UnixTime {
    /// Days since the epoch: a new UTC calendar day starts at 00:00 UTC.
    pub fn utc_day(self) -> u64 {
        self.0 / SECONDS_PER_DAY
    }

    /// Seconds until the next 00:00 UTC, when the daily counters reset.
    pub fn seconds_to_next_utc_day(self) -> u64 {
        SECONDS_PER_DAY - self.0 % SECONDS_PER_DAY
    }

    pub fn plus(self, seconds: u64) -> Self {
        Self(self.0.saturating_add(seconds))
    }

    pub fn minus(self, seconds: u64) -> Self {
        Self(self.0.saturating_sub(seconds))
    }

    pub fn to_rfc3339(self) -> String {
        let at = i64::try_from(self.0)
            .ok()
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        at.to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// An RFC 3339 timestamp at or after the epoch, rounded down to the second.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let at = DateTime::parse_from_rfc3339(text.trim()).ok()?;
        u64::try_from(at.timestamp()).ok().map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOON: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn days_turn_at_midnight_utc() {
        assert_eq!(NOON.seconds_to_next_utc_day(), 43_200);
        let midnight = NOON.plus(43_200);
        assert_eq!(midnight.utc_day(), NOON.utc_day() + 1);
        assert_eq!(midnight.minus(1).utc_day(), NOON.utc_day());
        assert_eq!(midnight.seconds_to_next_utc_day(), SECONDS_PER_DAY);
    }

    #[test]
    fn rfc3339_round_trips_and_honours_offsets() {
        assert_eq!(NOON.to_rfc3339(), "2026-11-21T12:00:00Z");
        assert_eq!(UnixTime::parse_rfc3339("2026-11-21T12:00:00Z"), Some(NOON));
        assert_eq!(
            UnixTime::parse_rfc3339("2026-11-21T13:00:00+01:00"),
            Some(NOON)
        );
        assert_eq!(
            UnixTime::parse_rfc3339("2026-11-21T12:00:00.999Z"),
            Some(NOON)
        );
        for bad in [
            "",
            "2026-11-21",
            "2026-11-21 12:00:00",
            "tomorrow",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(UnixTime::parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}
