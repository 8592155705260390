//! An allow list's range: a public address or a CIDR block of them no wider than
//! its family allows, as a request gives it and as a row keeps it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::domain::net::address::{Ipv6, PublicIp};
use crate::domain::net::ipv4::{self, IpRejection};
use crate::domain::net::ipv6::{self, IPV4_MAPPED};
use crate::domain::net::range::{Ipv4Range, Ipv6Range};

/// The widest range an entry may be, each family: wider ones are invalid.
pub const WIDEST_V4: u8 = 16;
pub const WIDEST_V6: u8 = 32;

/// One entry's range: a public address, or a CIDR block of public addresses no
/// wider than `WIDEST_V4` or `WIDEST_V6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AllowRange {
    V4(Ipv4Range),
    V6(Ipv6Range),
}

/// A range as a request gave it: the range acted on and the text the messages show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmittedRange {
    pub range: AllowRange,
    shown: String,
}

impl fmt::Display for SubmittedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl AllowRange {
    /// An address (as the list operations take it) or `address/n` without host
    /// bits: invalid when malformed, wider than allowed or with host bits set;
    /// private when any address of it is not public.
    pub fn parse(raw: &str, ipv6: Ipv6) -> Result<SubmittedRange, IpRejection> {
        let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        let Some((_, _)) = trimmed.split_once('/') else {
            return PublicIp::parse(trimmed, ipv6).map(|given| SubmittedRange {
                range: Self::of_ip(given.ip),
                shown: given.to_string(),
            });
        };
        let invalid = || IpRejection::Invalid(trimmed.to_owned());
        let range = if ipv6 == Ipv6::Off || !trimmed.contains(':') {
            let range = Ipv4Range::parse(trimmed).ok_or_else(invalid)?;
            Self::V4(range)
        } else {
            let range = Ipv6Range::parse(trimmed).ok_or_else(invalid)?;
            // An IPv4 range written in IPv6 (`::ffff:a.b.c.0/120`) is that IPv4 range.
            if IPV4_MAPPED.0 <= range.first() && range.last() <= IPV4_MAPPED.1 {
                let first = (range.first() - IPV4_MAPPED.0) as u32;
                let prefix = range.prefix().checked_sub(96).ok_or_else(invalid)?;
                Self::V4(Ipv4Range::from_parts(first, prefix).ok_or_else(invalid)?)
            } else {
                Self::V6(range)
            }
        };
        let too_wide = match range {
            Self::V4(range) => range.prefix() < WIDEST_V4,
            Self::V6(range) => range.prefix() < WIDEST_V6,
        };
        if too_wide {
            return Err(invalid());
        }
        let private = match range {
            Self::V4(range) => ipv4::holds_private(range),
            Self::V6(range) => ipv6::holds_private(range),
        };
        if private {
            return Err(IpRejection::Private(trimmed.to_owned()));
        }
        Ok(SubmittedRange {
            range,
            shown: trimmed.to_owned(),
        })
    }

    /// The one-address range of `ip`.
    pub fn of_ip(ip: PublicIp) -> Self {
        match ip {
            PublicIp::V4(v4) => Self::V4(Ipv4Range::block(v4.addr().octets(), 32)),
            PublicIp::V6(v6) => {
                Self::V6(Ipv6Range::from_parts(u128::from(v6.addr()), 128).expect("an address"))
            }
        }
    }

    /// First and last address as sixteen bytes each (IPv4 mapped into IPv6): how
    /// the rows of the personal list are keyed, so a range is one index range of them.
    pub fn span(self) -> (u128, u128) {
        match self {
            Self::V4(range) => (
                IPV4_MAPPED.0 | u128::from(range.first()),
                IPV4_MAPPED.0 | u128::from(range.last()),
            ),
            Self::V6(range) => (range.first(), range.last()),
        }
    }

    /// The prefix length in sixteen bytes' terms (an IPv4 /24 is a /120).
    pub fn prefix128(self) -> u8 {
        match self {
            Self::V4(range) => range.prefix() + 96,
            Self::V6(range) => range.prefix(),
        }
    }

    /// The range of a stored first address and `prefix128`; `None` for what this
    /// code never writes.
    pub fn from_stored(first: u128, prefix: u8) -> Option<Self> {
        let mapped = IPV4_MAPPED.0 <= first && first <= IPV4_MAPPED.1 && prefix >= 96;
        if mapped {
            Ipv4Range::from_parts((first - IPV4_MAPPED.0) as u32, prefix - 96).map(Self::V4)
        } else {
            Ipv6Range::from_parts(first, prefix).map(Self::V6)
        }
    }

    pub fn holds_ip(self, ip: PublicIp) -> bool {
        match (self, ip) {
            (Self::V4(range), PublicIp::V4(v4)) => range.holds(v4.to_u32()),
            (Self::V6(range), PublicIp::V6(v6)) => range.holds(u128::from(v6.addr())),
            _ => false,
        }
    }

    /// Whether every address of `other` is in this range.
    pub fn holds(self, other: Self) -> bool {
        let ((first, last), (a, b)) = (self.span(), other.span());
        first <= a && b <= last
    }
}

/// Written as its canonical text: a single address without its prefix.
impl fmt::Display for AllowRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(range) => range.fmt(f),
            Self::V6(range) => range.fmt(f),
        }
    }
}

impl Serialize for AllowRange {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back from its canonical text, and checked again.
impl<'de> Deserialize<'de> for AllowRange {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text, Ipv6::On)
            .map(|given| given.range)
            .map_err(|_| serde::de::Error::custom(format!("not an allow-list range: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::Listed;

    fn range(text: &str) -> AllowRange {
        AllowRange::parse(text, Ipv6::On).unwrap().range
    }

    #[test]
    fn a_range_is_an_address_or_a_public_block_no_wider_than_its_family_allows() {
        let parse = |text: &str| AllowRange::parse(text, Ipv6::On).map(|g| g.range.to_string());
        let invalid = |text: &str| Err(IpRejection::Invalid(text.trim().to_owned()));
        let private = |text: &str| Err(IpRejection::Private(text.to_owned()));
        assert_eq!(parse(" 45.67.89.0/24 "), Ok("45.67.89.0/24".into()));
        assert_eq!(parse("45.67.89.7"), Ok("45.67.89.7".into()));
        assert_eq!(parse("45.67.89.7/32"), Ok("45.67.89.7".into()));
        assert_eq!(parse("45.67.0.0/16"), Ok("45.67.0.0/16".into()));
        assert_eq!(parse("45.66.0.0/15"), invalid("45.66.0.0/15"));
        assert_eq!(
            parse("45.67.89.77/24"),
            invalid("45.67.89.77/24"),
            "host bits"
        );
        assert_eq!(parse("45.67.89.0/33"), invalid("45.67.89.0/33"));
        assert_eq!(parse("45.67.89.0/024"), invalid("45.67.89.0/024"));
        assert_eq!(parse("45.67.89.0/"), invalid("45.67.89.0/"));
        assert_eq!(parse("10.1.2.3"), private("10.1.2.3"));
        // A range that holds a private block is private.
        assert_eq!(parse("203.0.0.0/16"), private("203.0.0.0/16"));
        assert_eq!(parse("2a00:1450::/32"), Ok("2a00:1450::/32".into()));
        assert_eq!(parse("2a00:1450::/31"), invalid("2a00:1450::/31"));
        assert_eq!(parse("2001:db8::/48"), private("2001:db8::/48"));
        assert_eq!(parse("::ffff:45.67.89.0/120"), Ok("45.67.89.0/24".into()));
        assert_eq!(
            AllowRange::parse("2a00:1450::/32", Ipv6::Off),
            Err(IpRejection::Invalid("2a00:1450::/32".into())),
            "IPv6 is invalid while it is off"
        );
        assert_eq!(
            AllowRange::parse(" 45.67.89.0/24", Ipv6::Off)
                .unwrap()
                .to_string(),
            "45.67.89.0/24",
            "messages show the value as given, trimmed"
        );
    }

    #[test]
    fn a_range_is_stored_as_its_first_address_and_prefix_and_read_back() {
        for text in ["45.67.89.0/24", "8.8.8.8", "2a00:1450::/32", "2a00:1450::1"] {
            let range = range(text);
            let (first, _) = range.span();
            assert_eq!(
                AllowRange::from_stored(first, range.prefix128()),
                Some(range)
            );
        }
        let v4 = range("45.67.89.0/24");
        assert!(v4.holds(range("45.67.89.7")));
        assert!(!v4.holds(range("45.67.0.0/16")));
        assert!(v4.holds_ip(
            "45.67.89.255"
                .parse::<Listed>()
                .map(|l| match l {
                    Listed::Ip(ip) => ip,
                    Listed::Net64(_) => unreachable!(),
                })
                .unwrap()
        ));
    }
}
