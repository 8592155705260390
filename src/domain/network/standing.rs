//! A license's standing in the network: whether its reports count towards the
//! consensus. The operator suspends and reinstates a license by hand; a report of
//! a canary suspends it by itself. A suspended license's reports, those made
//! before and after, count for nothing until it is reinstated, and then count
//! again as they are. A license younger than the probation (`Consensus::probation`)
//! is shown on probation: its reports count once it is old enough.

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::net::address::PublicIp;
use crate::domain::time::UnixTime;

/// What the holder's object keeps of its license's standing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    pub suspended: bool,
    /// Since when it stands as it does; `None` for a license never suspended.
    pub since: Option<UnixTime>,
    /// The canary whose report suspended it; `None` when the operator did, or it counts.
    pub canary: Option<PublicIp>,
}

impl Kept {
    /// Suspended by a report of `canary` at `at`; one already suspended keeps its
    /// first reason and time.
    pub fn caught(self, canary: PublicIp, at: UnixTime) -> Self {
        if self.suspended {
            return self;
        }
        Self {
            suspended: true,
            since: Some(at),
            canary: Some(canary),
        }
    }

    /// Set by the operator at `at`: suspended, or counting again.
    pub fn set(self, suspended: bool, at: UnixTime) -> Self {
        if self.suspended == suspended {
            return self;
        }
        Self {
            suspended,
            since: Some(at),
            canary: None,
        }
    }
}

impl Kept {
    /// What its audit row says of it.
    pub fn described(self) -> String {
        match (self.suspended, self.canary) {
            (true, Some(canary)) => format!("network: suspended, reported the canary {canary}"),
            (true, None) => "network: suspended".to_owned(),
            (false, _) => "network: counting".to_owned(),
        }
    }
}

/// A standing as the operator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Counting,
    /// Counting once the license is old enough.
    Probation,
    Suspended,
}

impl Coded for Standing {
    const ALL: &'static [Self] = &[Self::Counting, Self::Probation, Self::Suspended];

    fn code(self) -> &'static str {
        match self {
            Self::Counting => "counting",
            Self::Probation => "probation",
            Self::Suspended => "suspended",
        }
    }
}

serde_by_code!(Standing);

impl Standing {
    /// A license's standing at `now`: suspended, or on probation until
    /// `counts_from` (`Consensus::counts_from`), or counting.
    pub fn at(suspended: bool, counts_from: UnixTime, now: UnixTime) -> Self {
        if suspended {
            Self::Suspended
        } else if counts_from > now {
            Self::Probation
        } else {
            Self::Counting
        }
    }
}

/// A license's standing as the operator's picture of it shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    pub standing: Standing,
    /// Since when: the suspension or reinstatement, or the license's issue for
    /// one on probation; `None` for a license counting since it was issued.
    pub since: Option<UnixTime>,
    /// When a license on probation starts to count.
    pub until: Option<UnixTime>,
    pub canary: Option<PublicIp>,
}

impl Kept {
    /// As shown at `now`, for a license issued at `licensed_at` whose reports
    /// count from `counts_from` (`Consensus::counts_from`).
    pub fn shown(self, (licensed_at, counts_from): (UnixTime, UnixTime), now: UnixTime) -> Shown {
        let standing = Standing::at(self.suspended, counts_from, now);
        Shown {
            standing,
            since: match standing {
                Standing::Probation => Some(self.since.unwrap_or(licensed_at)),
                _ => self.since,
            },
            until: (standing == Standing::Probation).then_some(counts_from),
            canary: self.canary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn a_canary_suspends_once_and_the_operator_reinstates() {
        let canary: PublicIp = "45.67.89.9".parse().unwrap();
        let other: PublicIp = "45.67.89.10".parse().unwrap();
        let caught = Kept::default().caught(canary, NOW);
        assert_eq!(
            caught,
            Kept {
                suspended: true,
                since: Some(NOW),
                canary: Some(canary)
            }
        );
        assert_eq!(
            caught.caught(other, NOW.plus(5)),
            caught,
            "the first reason stays"
        );
        assert_eq!(caught.set(true, NOW.plus(9)), caught, "already suspended");
        let back = caught.set(false, NOW.plus(60));
        assert_eq!(
            back,
            Kept {
                suspended: false,
                since: Some(NOW.plus(60)),
                canary: None
            }
        );
        let by_hand = back.set(true, NOW.plus(90));
        assert_eq!((by_hand.suspended, by_hand.canary), (true, None));
    }

    #[test]
    fn a_young_license_is_shown_on_probation_until_it_counts() {
        let issued = NOW.minus(600);
        let of_age = issued.plus(3_600);
        let young = Kept::default().shown((issued, of_age), NOW);
        assert_eq!(
            (young.standing, young.since, young.until),
            (Standing::Probation, Some(issued), Some(of_age))
        );
        let grown = Kept::default().shown((issued, of_age), of_age);
        assert_eq!(
            (grown.standing, grown.since, grown.until),
            (Standing::Counting, None, None)
        );
        let suspended = Kept::default().set(true, NOW).shown((issued, of_age), NOW);
        assert_eq!(suspended.standing, Standing::Suspended);
        assert_eq!(Standing::at(true, of_age, NOW), Standing::Suspended);
        assert_eq!(Standing::at(false, of_age, NOW), Standing::Probation);
        assert_eq!(Standing::at(false, NOW, NOW), Standing::Counting);
        assert_eq!(
            serde_json::to_value(Standing::Probation).unwrap(),
            "probation"
        );
    }
}
