//! Paging through a holder's list and history: a page size, an opaque cursor
//! that continues after the last row shown, and the list's address prefix filter.

use serde::{Deserialize, Serialize};

pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;

/// Where the next page starts: after the row with this sort key (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub time: u64,
    pub tie: u64,
}

impl Cursor {
    pub fn encode(self) -> String {
        format!("{:x}.{:x}", self.time, self.tie)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (time, tie) = text.split_once('.')?;
        let hex = |s: &str| (!s.is_empty() && s.len() <= 16).then(|| u64::from_str_radix(s, 16).ok()).flatten();
        Some(Self { time: hex(time)?, tie: hex(tie)? })
    }
}

/// A validated page request, sent to the holder's object as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageQuery {
    pub after: Option<Cursor>,
    pub limit: u32,
    /// Only addresses whose dotted form starts with this text (list only).
    pub prefix: Option<String>,
}

impl PageQuery {
    pub fn parse(cursor: Option<&str>, limit: Option<&str>, prefix: Option<&str>) -> Result<Self, String> {
        let after = match cursor.map(str::trim).filter(|c| !c.is_empty()) {
            Some(text) => Some(Cursor::decode(text).ok_or("cursor is not one this service gave out")?),
            None => None,
        };
        let limit = page_size(limit)?;
        let prefix = prefix.map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned);
        if prefix.as_ref().is_some_and(|p| p.len() > 15 || !p.bytes().all(|b| b.is_ascii_digit() || b == b'.')) {
            return Err("prefix must be the start of a dotted address, such as 203.0.".to_owned());
        }
        Ok(Self { after, limit, prefix })
    }
}

/// A page size a client asked for: 1 to 1 000, 100 when not given.
pub fn page_size(limit: Option<&str>) -> Result<u32, String> {
    match limit.map(str::trim).filter(|l| !l.is_empty()) {
        Some(text) => text.parse().ok().filter(|l| (1..=MAX_PAGE).contains(l)).ok_or(format!("limit must be 1 to {MAX_PAGE}")),
        None => Ok(DEFAULT_PAGE),
    }
}

/// One page of rows and the cursor of the next page, if there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    pub total: u64,
    pub rows: Vec<T>,
    pub next: Option<Cursor>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let cursor = Cursor { time: 1_795_262_400, tie: 0x0808_0808 };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        for bad in ["", ".", "1.", ".1", "x.1", "1.2.3", "11111111111111111.1"] {
            assert_eq!(Cursor::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn page_size_defaults_to_100_and_is_at_most_1000() {
        assert_eq!(PageQuery::parse(None, None, None).unwrap().limit, 100);
        assert_eq!(PageQuery::parse(None, Some("1000"), None).unwrap().limit, 1000);
        for bad in ["0", "1001", "-1", "ten"] {
            assert!(PageQuery::parse(None, Some(bad), None).unwrap_err().contains("limit"), "{bad}");
        }
    }

    #[test]
    fn prefix_is_digits_and_dots() {
        assert_eq!(PageQuery::parse(None, None, Some("203.0.")).unwrap().prefix.as_deref(), Some("203.0."));
        assert_eq!(PageQuery::parse(None, None, Some("")).unwrap().prefix, None);
        for bad in ["203.0.%", "a", "1.2.3.4.5.6.7.8.9"] {
            assert!(PageQuery::parse(None, None, Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_cursors_are_refused() {
        assert!(PageQuery::parse(Some("not-a-cursor"), None, None).unwrap_err().contains("cursor"));
        let cursor = Cursor { time: 5, tie: 6 };
        assert_eq!(PageQuery::parse(Some(&cursor.encode()), None, None).unwrap().after, Some(cursor));
    }
}
