//! A holder's activity a day: what it added and removed, what expired, and what
//! the limits refused, kept for the dashboard's chart.

use serde::{Deserialize, Serialize};

use crate::domain::time::{UnixTime, SECONDS_PER_DAY};

/// Days the chart shows, today included; older days are dropped.
pub const ACTIVITY_DAYS: u64 = 30;

/// One UTC day's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityDay {
    pub day: u64,
    pub added: u32,
    pub removed: u32,
    pub expired: u32,
    pub refused: u32,
}

impl ActivityDay {
    /// The day's date, `YYYY-MM-DD`.
    pub fn date(&self) -> String {
        UnixTime(self.day * SECONDS_PER_DAY).to_rfc3339()[..10].to_owned()
    }
}

/// The last `ACTIVITY_DAYS` days up to `today`, oldest first: a day without a
/// row counts nothing, and a row outside the window is left out.
pub fn last_days(rows: &[ActivityDay], today: u64) -> Vec<ActivityDay> {
    let first = today.saturating_sub(ACTIVITY_DAYS - 1);
    (first..=today)
        .map(|day| {
            rows.iter()
                .find(|row| row.day == day)
                .copied()
                .unwrap_or(ActivityDay {
                    day,
                    ..ActivityDay::default()
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_thirty_days_oldest_first_with_quiet_days_as_zeros() {
        let today = 20_415;
        let busy = ActivityDay {
            day: today - 2,
            added: 5,
            removed: 1,
            expired: 2,
            refused: 3,
        };
        let old = ActivityDay {
            day: today - 30,
            added: 9,
            ..ActivityDay::default()
        };
        let days = last_days(&[old, busy], today);
        assert_eq!(days.len(), 30);
        assert_eq!((days[0].day, days[29].day), (today - 29, today));
        assert_eq!(days[27], busy);
        assert!(days.iter().all(|d| d.day != old.day), "outside the window");
        assert_eq!(days.iter().map(|d| d.added).sum::<u32>(), 5);
        assert_eq!(
            ActivityDay {
                day: 20_415,
                ..ActivityDay::default()
            }
            .date(),
            "2025-11-23"
        );
    }
}
