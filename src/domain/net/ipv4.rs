//! Public IPv4 addresses: a submitted `ip` read strictly, and the "globally
//! reachable" rule from the IANA IPv4 Special-Purpose Address Registry.

use std::fmt;
use std::net::Ipv4Addr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::net::intervals::{clip, combine, union_of_sorted, Intervals, Op};
use crate::domain::net::range::Ipv4Range;
use crate::domain::net::text::parse_dotted;

/// An IPv4 address that parsed strictly and is globally reachable: what the
/// list operations act on (beside public IPv6 addresses when IPv6 is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicIpv4(Ipv4Addr);

/// Why a submitted `ip` field is not acted on. Carries the text the
/// messages show: the submitted value with surrounding whitespace trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpRejection {
    Invalid(String),
    Private(String),
}

impl PublicIpv4 {
    /// Validation in the order the specification fixes: valid first, then public.
    pub fn parse(raw: &str) -> Result<Self, IpRejection> {
        let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        let addr = parse_dotted(trimmed).ok_or_else(|| IpRejection::Invalid(trimmed.to_owned()))?;
        if is_globally_reachable(addr) {
            Ok(Self(addr))
        } else {
            Err(IpRejection::Private(trimmed.to_owned()))
        }
    }

    /// The address if it is globally reachable (for values read back from storage).
    pub fn from_addr(addr: Ipv4Addr) -> Option<Self> {
        is_globally_reachable(addr).then_some(Self(addr))
    }

    pub fn addr(self) -> Ipv4Addr {
        self.0
    }

    pub fn to_u32(self) -> u32 {
        u32::from(self.0)
    }
}

/// Serialized as its dotted form and validated again when read back, so a
/// `PublicIpv4` that crossed a wire is still a public address.
impl Serialize for PublicIpv4 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PublicIpv4 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text)
            .map_err(|_| D::Error::custom(format!("not a public IPv4 address: {text:?}")))
    }
}

impl fmt::Display for PublicIpv4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Ranges of the IANA IPv4 Special-Purpose Address Registry whose
/// "Globally Reachable" is False, plus multicast (the specification's settled decisions).
const NOT_GLOBAL: [Ipv4Range; 15] = [
    Ipv4Range::block([0, 0, 0, 0], 8),
    Ipv4Range::block([10, 0, 0, 0], 8),
    Ipv4Range::block([100, 64, 0, 0], 10),
    Ipv4Range::block([127, 0, 0, 0], 8),
    Ipv4Range::block([169, 254, 0, 0], 16),
    Ipv4Range::block([172, 16, 0, 0], 12),
    Ipv4Range::block([192, 0, 0, 0], 24),
    Ipv4Range::block([192, 0, 2, 0], 24),
    Ipv4Range::block([192, 168, 0, 0], 16),
    Ipv4Range::block([198, 18, 0, 0], 15),
    Ipv4Range::block([198, 51, 100, 0], 24),
    Ipv4Range::block([203, 0, 113, 0], 24),
    Ipv4Range::block([224, 0, 0, 0], 4),
    Ipv4Range::block([240, 0, 0, 0], 4),
    Ipv4Range::block([255, 255, 255, 255], 32),
];

/// Inside 192.0.0.0/24, the registry marks these two as globally reachable.
const GLOBAL_EXCEPTIONS: [Ipv4Addr; 2] =
    [Ipv4Addr::new(192, 0, 0, 9), Ipv4Addr::new(192, 0, 0, 10)];

pub fn is_globally_reachable(addr: Ipv4Addr) -> bool {
    GLOBAL_EXCEPTIONS.contains(&addr) || !NOT_GLOBAL.iter().any(|range| range.contains(addr))
}

/// Whether no address of `range` is globally reachable. Blocks nest or are
/// disjoint, so this holds when one not-global block holds the whole range and
/// none of the exceptions lies in it. (Two adjacent not-global blocks, 224/4 and
/// 240/4, together hold 224/3 too; no list takes a range that wide.)
pub fn is_wholly_private(range: Ipv4Range) -> bool {
    let inside = |outer: &Ipv4Range| outer.first() <= range.first() && range.last() <= outer.last();
    NOT_GLOBAL.iter().any(inside) && !GLOBAL_EXCEPTIONS.iter().any(|&addr| range.contains(addr))
}

/// Whether any address of `range` is not globally reachable: a holder's own
/// allow-list range must be public throughout, as an address must be.
pub fn holds_private(range: Ipv4Range) -> bool {
    !clip(&not_global(), range.first(), range.last()).is_empty()
}

/// Every address that is not globally reachable, as intervals: also what the
/// IPv6 forms that carry an IPv4 address hold that is not.
pub fn not_global() -> Intervals {
    let mut blocks: Vec<(u32, u32)> = NOT_GLOBAL.iter().map(|b| (b.first(), b.last())).collect();
    blocks.sort_unstable();
    let exceptions: Vec<(u32, u32)> = GLOBAL_EXCEPTIONS
        .iter()
        .map(|&addr| (u32::from(addr), u32::from(addr)))
        .collect();
    combine(&union_of_sorted(blocks), &exceptions, Op::Minus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(s: &str) -> Result<PublicIpv4, IpRejection> {
        Err(IpRejection::Invalid(s.to_owned()))
    }

    fn private(s: &str) -> Result<PublicIpv4, IpRejection> {
        Err(IpRejection::Private(s.to_owned()))
    }

    #[test]
    fn accepts_strict_dotted_decimal() {
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "1.0.0.0",
            "223.255.255.255",
            "99.199.249.255",
        ] {
            assert_eq!(PublicIpv4::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn rejects_everything_else_as_invalid_showing_the_trimmed_text() {
        let cases = [
            "",
            "1",
            "1.2.3",
            "1.2.3.4.",
            ".1.2.3.4",
            "1.2.3.4.5",
            "1..2.3",
            "256.1.1.1",
            "1.2.3.256",
            "01.2.3.4",
            "1.2.3.04",
            "1.2.3.00",
            "+1.2.3.4",
            "-1.2.3.4",
            "1.2.3.4/32",
            "0x1.2.3.4",
            "1.2.3.4a",
            "a.b.c.d",
            "1 .2.3.4",
            "1.2.3.4:80",
            "1000.2.3.4",
            "::1",
            "::ffff:1.2.3.4",
            "１.2.3.4",
            "1.2.3.٤",
            "\u{a0}1.2.3.4",
        ];
        for s in cases {
            assert_eq!(PublicIpv4::parse(s), invalid(s), "{s:?}");
        }
    }

    #[test]
    fn serializes_as_dotted_text_and_validates_when_read_back() {
        let ip = PublicIpv4::parse("8.8.8.8").unwrap();
        assert_eq!(serde_json::to_string(&ip).unwrap(), "\"8.8.8.8\"");
        assert_eq!(
            serde_json::from_str::<PublicIpv4>("\"8.8.8.8\"").unwrap(),
            ip
        );
        assert!(serde_json::from_str::<PublicIpv4>("\"10.0.0.1\"").is_err());
        assert!(serde_json::from_str::<PublicIpv4>("\"x\"").is_err());
    }

    #[test]
    fn trims_surrounding_ascii_whitespace_only() {
        assert_eq!(
            PublicIpv4::parse(" \t8.8.8.8\r\n").unwrap().to_string(),
            "8.8.8.8"
        );
        assert_eq!(PublicIpv4::parse("  "), invalid(""));
        assert_eq!(PublicIpv4::parse(" x "), invalid("x"));
        assert_eq!(PublicIpv4::parse(" 10.0.0.1 "), private("10.0.0.1"));
    }

    #[test]
    fn a_range_is_wholly_private_only_when_no_address_in_it_is_public() {
        let wholly = |s: &str| is_wholly_private(Ipv4Range::parse(s).unwrap());
        for private in [
            "10.0.0.0/8",
            "10.1.0.0/16",
            "192.168.1.0/24",
            "127.0.0.1",
            "240.0.0.0/4",
            "192.0.0.0/29",
            "192.0.0.11",
        ] {
            assert!(wholly(private), "{private}");
        }
        for public in [
            "8.0.0.0/8",
            "192.0.0.8/29",
            "192.0.0.0/24",
            "192.0.0.9",
            "9.255.255.0/24",
            "11.0.0.0/8",
            "172.0.0.0/8",
        ] {
            assert!(!wholly(public), "{public}");
        }
    }

    #[test]
    fn every_special_purpose_range_is_private_at_both_edges() {
        let edges = [
            ("0.0.0.0", "0.255.255.255"),
            ("10.0.0.0", "10.255.255.255"),
            ("100.64.0.0", "100.127.255.255"),
            ("127.0.0.0", "127.255.255.255"),
            ("169.254.0.0", "169.254.255.255"),
            ("172.16.0.0", "172.31.255.255"),
            ("192.0.0.0", "192.0.0.8"),
            ("192.0.0.11", "192.0.0.255"),
            ("192.0.2.0", "192.0.2.255"),
            ("192.168.0.0", "192.168.255.255"),
            ("198.18.0.0", "198.19.255.255"),
            ("198.51.100.0", "198.51.100.255"),
            ("203.0.113.0", "203.0.113.255"),
            ("224.0.0.0", "239.255.255.255"),
            ("240.0.0.0", "255.255.255.255"),
        ];
        for (first, last) in edges {
            assert_eq!(PublicIpv4::parse(first), private(first));
            assert_eq!(PublicIpv4::parse(last), private(last));
        }
    }

    /// The settled decisions' table, written independently of `NOT_GLOBAL` as (network, prefix) pairs.
    const REFERENCE: [(&str, u32); 15] = [
        ("0.0.0.0", 8),
        ("10.0.0.0", 8),
        ("100.64.0.0", 10),
        ("127.0.0.0", 8),
        ("169.254.0.0", 16),
        ("172.16.0.0", 12),
        ("192.0.0.0", 24),
        ("192.0.2.0", 24),
        ("192.168.0.0", 16),
        ("198.18.0.0", 15),
        ("198.51.100.0", 24),
        ("203.0.113.0", 24),
        ("224.0.0.0", 4),
        ("240.0.0.0", 4),
        ("255.255.255.255", 32),
    ];

    fn reference_is_global(addr: Ipv4Addr) -> bool {
        if addr == Ipv4Addr::new(192, 0, 0, 9) || addr == Ipv4Addr::new(192, 0, 0, 10) {
            return true;
        }
        !REFERENCE.iter().any(|(network, prefix)| {
            let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
            u32::from(addr) & mask == u32::from(network.parse::<Ipv4Addr>().unwrap())
        })
    }

    proptest::proptest! {
        #[test]
        fn classification_agrees_with_the_reference_table(n: u32) {
            let addr = Ipv4Addr::from(n);
            proptest::prop_assert_eq!(is_globally_reachable(addr), reference_is_global(addr));
        }

        #[test]
        fn classification_agrees_near_every_range_edge(edge in 0usize..15, offset in -2i64..=2, high in proptest::bool::ANY) {
            let (network, prefix) = REFERENCE[edge];
            let first = u32::from(network.parse::<Ipv4Addr>().unwrap()) as i64;
            let base = if high { first + (1i64 << (32 - prefix)) - 1 } else { first };
            let addr = Ipv4Addr::from((base + offset).clamp(0, u32::MAX as i64) as u32);
            proptest::prop_assert_eq!(is_globally_reachable(addr), reference_is_global(addr));
        }
    }

    #[test]
    fn neighbours_of_the_special_ranges_are_public() {
        let public = [
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.0.9",
            "192.0.0.10",
            "192.0.1.0",
            "192.0.1.255",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
        ];
        for s in public {
            assert!(PublicIpv4::parse(s).is_ok(), "{s} should be public");
        }
    }
}
