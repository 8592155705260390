//! What a personal list holds and remembers: entries with an optional expiry
//! and comment, and the history of changes.

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::holder::allow_range::AllowRange;
use crate::domain::net::address::{Ipv6, Listed};
use crate::domain::time::UnixTime;

pub const MIN_TTL_SECONDS: u64 = 60;
pub const MAX_TTL_SECONDS: u64 = 31_536_000;
pub const MAX_COMMENT_CHARS: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub ip: Listed,
    pub added_at: UnixTime,
    pub expires_at: Option<UnixTime>,
    pub comment: Option<String>,
}

impl Entry {
    /// An entry is gone from the second its expiry is reached, for every operation alike.
    pub fn is_live(&self, now: UnixTime) -> bool {
        self.expires_at.is_none_or(|expires_at| now < expires_at)
    }
}

/// When an entry expires: a `ttl` counts from the moment the entry is added, as
/// the holder's object reads its clock, so `expiresAt - addedAt` is exactly the ttl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expiry {
    After(u64),
    At(UnixTime),
}

impl Expiry {
    pub fn at(self, added_at: UnixTime) -> UnixTime {
        match self {
            Self::After(seconds) => added_at.plus(seconds),
            Self::At(at) => at,
        }
    }
}

/// What an `add` may say about the entry beyond its address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryDetails {
    pub expiry: Option<Expiry>,
    pub comment: Option<String>,
}

impl EntryDetails {
    /// Reads the optional `ttl` (seconds), `expiresAt` (RFC 3339) and `comment` fields.
    /// Either expiry form must land 60 seconds to one year from `now`.
    pub fn parse(
        ttl: Option<&str>,
        expires_at: Option<&str>,
        comment: Option<&str>,
        now: UnixTime,
    ) -> Result<Self, String> {
        let range = format!("from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds from now");
        let expiry = match (
            ttl.filter(|t| !t.is_empty()),
            expires_at.filter(|e| !e.is_empty()),
        ) {
            (Some(_), Some(_)) => return Err("give ttl or expiresAt, not both".to_owned()),
            (Some(ttl), None) => {
                let seconds = ttl
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|s| (MIN_TTL_SECONDS..=MAX_TTL_SECONDS).contains(s));
                Some(Expiry::After(seconds.ok_or_else(|| {
                    format!("ttl must be whole seconds {range}")
                })?))
            }
            (None, Some(text)) => {
                let at = UnixTime::parse_rfc3339(text)
                    .ok_or("expiresAt must be an RFC 3339 timestamp")?;
                if !(now.plus(MIN_TTL_SECONDS)..=now.plus(MAX_TTL_SECONDS)).contains(&at) {
                    return Err(format!("expiresAt must be {range}"));
                }
                Some(Expiry::At(at))
            }
            (None, None) => None,
        };
        let comment = comment.map(str::to_owned);
        if comment
            .as_ref()
            .is_some_and(|c| c.chars().count() > MAX_COMMENT_CHARS)
        {
            return Err(format!(
                "comment must be at most {MAX_COMMENT_CHARS} characters"
            ));
        }
        Ok(Self { expiry, comment })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryKind {
    Added,
    Removed,
    Expired,
    LimitRefused,
    /// A listed entry's expiry moved later (a CrowdSec engine's alert again).
    Extended,
    /// An entry of the holder's allow list (the event's subject is its range).
    AllowAdded,
    AllowRemoved,
}

impl Coded for HistoryKind {
    const ALL: &'static [Self] = &[
        Self::Added,
        Self::Removed,
        Self::Expired,
        Self::LimitRefused,
        Self::Extended,
        Self::AllowAdded,
        Self::AllowRemoved,
    ];

    fn code(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Expired => "expired",
            Self::LimitRefused => "limit_refused",
            Self::Extended => "extended",
            Self::AllowAdded => "allow_added",
            Self::AllowRemoved => "allow_removed",
        }
    }
}

serde_by_code!(HistoryKind);

/// One line of a holder's history: what changed, when, and from which client address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEvent {
    pub at: UnixTime,
    pub change: HistoryKind,
    pub ip: Subject,
    pub client: Option<String>,
}

/// What a change of the history is about: an entry of the challenge list, or a
/// range of the allow list. Written as its text either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Subject {
    Entry(Listed),
    Allow(AllowRange),
}

/// Read back from its text, an entry's before a range's: serde's untagged
/// reading would ask a self-describing format to say which.
impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse()
            .map(Self::Entry)
            .or_else(|_| AllowRange::parse(&text, Ipv6::On).map(|given| Self::Allow(given.range)))
            .map_err(|_| serde::de::Error::custom(format!("not an entry or a range: {text:?}")))
    }
}

impl From<Listed> for Subject {
    fn from(ip: Listed) -> Self {
        Self::Entry(ip)
    }
}

impl From<AllowRange> for Subject {
    fn from(range: AllowRange) -> Self {
        Self::Allow(range)
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Entry(ip) => ip.fmt(f),
            Self::Allow(range) => range.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn parse(
        ttl: Option<&str>,
        expires_at: Option<&str>,
        comment: Option<&str>,
    ) -> Result<EntryDetails, String> {
        EntryDetails::parse(ttl, expires_at, comment, NOW)
    }

    #[test]
    fn no_details_means_a_permanent_entry_without_comment() {
        assert_eq!(parse(None, None, None), Ok(EntryDetails::default()));
        assert_eq!(parse(Some(""), Some(""), None), Ok(EntryDetails::default()));
    }

    #[test]
    fn ttl_is_bounded_to_a_minute_through_a_year() {
        assert_eq!(
            parse(Some("60"), None, None).unwrap().expiry,
            Some(Expiry::After(60))
        );
        assert_eq!(
            parse(Some("31536000"), None, None).unwrap().expiry,
            Some(Expiry::After(31_536_000))
        );
        assert_eq!(
            Expiry::After(60).at(NOW.plus(1)),
            NOW.plus(61),
            "counted from the moment of adding"
        );
        for bad in ["59", "31536001", "-60", "1.5", "soon", "0"] {
            assert!(
                parse(Some(bad), None, None).unwrap_err().contains("ttl"),
                "{bad}"
            );
        }
    }

    #[test]
    fn expires_at_is_rfc3339_within_the_same_bounds() {
        assert_eq!(
            parse(None, Some("2026-11-21T13:00:00Z"), None)
                .unwrap()
                .expiry,
            Some(Expiry::At(NOW.plus(3600)))
        );
        assert_eq!(Expiry::At(NOW.plus(3600)).at(NOW.plus(1)), NOW.plus(3600));
        assert!(
            parse(None, Some("2026-11-21T12:00:59Z"), None).is_err(),
            "under a minute away"
        );
        assert!(
            parse(None, Some("2026-11-21T11:00:00Z"), None).is_err(),
            "in the past"
        );
        assert!(
            parse(None, Some("2028-01-01T00:00:00Z"), None).is_err(),
            "over a year away"
        );
        assert!(parse(None, Some("next week"), None)
            .unwrap_err()
            .contains("RFC 3339"));
        assert!(parse(Some("60"), Some("2026-11-21T13:00:00Z"), None)
            .unwrap_err()
            .contains("not both"));
    }

    #[test]
    fn comments_are_kept_as_given_up_to_255_characters() {
        let longest = "é".repeat(255);
        assert_eq!(
            parse(None, None, Some(&longest)).unwrap().comment,
            Some(longest.clone())
        );
        assert_eq!(
            parse(None, None, Some(" scanner, see ticket #42 "))
                .unwrap()
                .comment
                .as_deref(),
            Some(" scanner, see ticket #42 ")
        );
        assert!(parse(None, None, Some(&format!("{longest}x")))
            .unwrap_err()
            .contains("255"));
    }

    #[test]
    fn an_entry_is_gone_at_its_expiry_second() {
        let entry = Entry {
            ip: "8.8.8.8".parse::<Listed>().unwrap(),
            added_at: NOW,
            expires_at: Some(NOW.plus(60)),
            comment: None,
        };
        assert!(entry.is_live(NOW.plus(59)));
        assert!(!entry.is_live(NOW.plus(60)));
        assert!(Entry {
            expires_at: None,
            ..entry
        }
        .is_live(UnixTime(u64::MAX)));
    }

    #[test]
    fn a_change_is_its_code_in_storage_and_in_json_and_nothing_else_parses() {
        for &change in HistoryKind::ALL {
            assert_eq!(HistoryKind::from_code(change.code()), Some(change));
            assert_eq!(serde_json::to_value(change).unwrap(), change.code());
            assert_eq!(
                serde_json::from_value::<HistoryKind>(change.code().into()).unwrap(),
                change
            );
        }
        assert_eq!(
            serde_json::to_value(HistoryKind::LimitRefused).unwrap(),
            "limit_refused"
        );
        assert!(serde_json::from_value::<HistoryKind>("LimitRefused".into()).is_err());
        assert_eq!(HistoryKind::from_code("refused"), None);
        assert_eq!(
            serde_json::to_value(crate::domain::holder::list::Operation::Remove).unwrap(),
            "remove"
        );
    }
}
