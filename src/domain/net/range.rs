//! CIDR blocks of either family: the operator's lists' entries and the IPv4
//! special-purpose table.

use std::fmt;
use std::net::Ipv4Addr;

use crate::domain::net::family::Addr;

/// An inclusive range of addresses that is exactly one CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr<A> {
    first: A,
    last: A,
}

pub type Ipv4Range = Cidr<u32>;
pub type Ipv6Range = Cidr<u128>;

impl Ipv4Range {
    /// `octets` must have no bits set past `prefix`; a const table is the only caller that may not check.
    pub const fn block(octets: [u8; 4], prefix: u8) -> Self {
        let first = u32::from_be_bytes(octets);
        let host = if prefix >= 32 { 0 } else { u32::MAX >> prefix };
        Self {
            first,
            last: first | host,
        }
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        self.holds(u32::from(addr))
    }
}

impl<A: Addr> Cidr<A> {
    /// `address/n` with no host bits set, or a single address (a /32 or /128),
    /// in the family's strict text form.
    pub fn parse(s: &str) -> Option<Self> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, parse_prefix::<A>(prefix)?),
            None => (s, A::BITS),
        };
        Self::from_parts(A::parse(addr)?, prefix)
    }

    /// A block from its first address and prefix length; `None` when host bits are set.
    pub fn from_parts(first: A, prefix: u8) -> Option<Self> {
        let host = A::host_mask(prefix);
        (prefix <= A::BITS && first.and(host) == A::default()).then(|| Self {
            first,
            last: first.or(host),
        })
    }

    pub fn prefix(&self) -> u8 {
        self.first.common_prefix(self.last)
    }

    pub fn holds(&self, addr: A) -> bool {
        (self.first..=self.last).contains(&addr)
    }

    pub fn first(&self) -> A {
        self.first
    }

    pub fn last(&self) -> A {
        self.last
    }
}

/// A prefix length as written: decimal digits without a leading zero, at most the family's bits.
fn parse_prefix<A: Addr>(s: &str) -> Option<u8> {
    let canonical = !s.is_empty()
        && s.len() <= 3
        && s.bytes().all(|b| b.is_ascii_digit())
        && !(s.len() > 1 && s.starts_with('0'));
    canonical
        .then(|| s.parse().ok())
        .flatten()
        .filter(|&p| p <= A::BITS)
}

/// Serialized as its text and checked again when read back.
impl<A: Addr> serde::Serialize for Cidr<A> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, A: Addr> serde::Deserialize<'de> for Cidr<A> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a CIDR block: {text:?}")))
    }
}

/// A single address is written without its prefix.
impl<A: Addr> fmt::Display for Cidr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.first.show(f)?;
        match self.prefix() {
            prefix if prefix == A::BITS => Ok(()),
            prefix => write!(f, "/{prefix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_and_single_addresses() {
        let block = Ipv4Range::parse("203.0.113.0/24").unwrap();
        assert!(block.contains(Ipv4Addr::new(203, 0, 113, 0)));
        assert!(block.contains(Ipv4Addr::new(203, 0, 113, 255)));
        assert!(!block.contains(Ipv4Addr::new(203, 0, 114, 0)));
        assert!(!block.contains(Ipv4Addr::new(203, 0, 112, 255)));
        assert_eq!(block.to_string(), "203.0.113.0/24");

        let single = Ipv4Range::parse("8.8.8.8").unwrap();
        assert_eq!(single, Ipv4Range::parse("8.8.8.8/32").unwrap());
        assert_eq!(single.to_string(), "8.8.8.8");
        assert_eq!(
            Ipv4Range::parse("0.0.0.0/0").unwrap().to_string(),
            "0.0.0.0/0"
        );
    }

    #[test]
    fn refuses_host_bits_bad_prefixes_and_bad_addresses() {
        for s in [
            "203.0.113.5/24",
            "1.2.3.4/33",
            "1.2.3.0/",
            "1.2.3.0/024",
            "1.2.3.0/+8",
            "1.2.3/24",
            "x",
            "",
            "1.2.3.4/8/8",
        ] {
            assert_eq!(Ipv4Range::parse(s), None, "{s:?}");
        }
    }

    #[test]
    fn blocks_are_made_from_their_parts_and_name_their_prefix() {
        assert_eq!(
            Ipv4Range::from_parts(0xc633_6300, 24),
            Ipv4Range::parse("198.51.99.0/24")
        );
        assert_eq!(Ipv4Range::from_parts(0xc633_6301, 24), None, "host bits");
        assert_eq!(Ipv4Range::from_parts(0, 33), None);
        for (text, prefix) in [
            ("0.0.0.0/0", 0),
            ("8.0.0.0/8", 8),
            ("1.2.3.4", 32),
            ("255.255.255.254/31", 31),
        ] {
            assert_eq!(Ipv4Range::parse(text).unwrap().prefix(), prefix, "{text}");
        }
    }

    #[test]
    fn const_table_form_matches_parsed_form() {
        assert_eq!(
            Ipv4Range::block([100, 64, 0, 0], 10),
            Ipv4Range::parse("100.64.0.0/10").unwrap()
        );
        assert_eq!(
            Ipv4Range::block([255, 255, 255, 255], 32),
            Ipv4Range::parse("255.255.255.255").unwrap()
        );
    }

    #[test]
    fn ipv6_blocks_parse_in_their_own_width() {
        let block = Ipv6Range::parse("2001:db8::/32").unwrap();
        assert_eq!(block.prefix(), 32);
        assert!(block.holds(0x2001_0db8_ffff_ffff_ffff_ffff_ffff_ffff));
        assert!(!block.holds(0x2001_0db9 << 96));
        assert_eq!(block.to_string(), "2001:db8::/32");
        assert_eq!(Ipv6Range::parse("::/0").unwrap().last(), u128::MAX);
        let top = Ipv6Range::parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff").unwrap();
        assert_eq!((top.first(), top.prefix()), (u128::MAX, 128));
        assert_eq!(top.to_string(), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
        assert_eq!(
            Ipv6Range::parse("2001:DB8:0::/48").unwrap().to_string(),
            "2001:db8::/48",
            "shown in RFC 5952's form"
        );
        for s in [
            "2001:db8::1/64",
            "2001:db8::/129",
            "2001:db8::/032",
            "2001:db8::/",
            "[2001:db8::]/32",
            "fe80::1%eth0",
            "203.0.113.0/24",
        ] {
            assert_eq!(Ipv6Range::parse(s), None, "{s:?}");
        }
        assert_eq!(Ipv4Range::parse("2001:db8::/32"), None);
        assert_eq!(Ipv4Range::parse("1.2.3.0/100"), None);
    }
}
