//! IPv4 CIDR ranges: the allow list's entries and the special-purpose table.

use std::fmt;
use std::net::Ipv4Addr;

use super::ipv4::parse_dotted;

/// An inclusive range of addresses that is exactly one CIDR block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv4Range {
    first: u32,
    last: u32,
}

impl Ipv4Range {
    /// `octets` must have no bits set past `prefix`; a const table is the only caller that may not check.
    pub const fn cidr(octets: [u8; 4], prefix: u8) -> Self {
        let first = u32::from_be_bytes(octets);
        Self {
            first,
            last: first | host_mask(prefix),
        }
    }

    /// `a.b.c.d/n` with no host bits set, or a single address `a.b.c.d` (a /32).
    pub fn parse(s: &str) -> Option<Self> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, parse_prefix(prefix)?),
            None => (s, 32),
        };
        let first = u32::from(parse_dotted(addr)?);
        (first & host_mask(prefix) == 0).then(|| Self {
            first,
            last: first | host_mask(prefix),
        })
    }

    /// A block from its first address and prefix length; `None` when host bits are set.
    pub fn from_parts(first: u32, prefix: u8) -> Option<Self> {
        (prefix <= 32 && first & host_mask(prefix) == 0).then(|| Self {
            first,
            last: first | host_mask(prefix),
        })
    }

    pub fn prefix(&self) -> u8 {
        (self.last - self.first).leading_zeros() as u8
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        (self.first..=self.last).contains(&u32::from(addr))
    }

    pub fn first(&self) -> u32 {
        self.first
    }

    pub fn last(&self) -> u32 {
        self.last
    }
}

const fn host_mask(prefix: u8) -> u32 {
    if prefix >= 32 {
        0
    } else {
        u32::MAX >> prefix
    }
}

fn parse_prefix(s: &str) -> Option<u8> {
    let canonical = !s.is_empty()
        && s.len() <= 2
        && s.bytes().all(|b| b.is_ascii_digit())
        && !(s.len() == 2 && s.starts_with('0'));
    canonical
        .then(|| s.parse().ok())
        .flatten()
        .filter(|&p| p <= 32)
}

/// Serialized as its text and checked again when read back.
impl serde::Serialize for Ipv4Range {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Ipv4Range {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a CIDR block: {text:?}")))
    }
}

impl fmt::Display for Ipv4Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = self.prefix();
        let first = Ipv4Addr::from(self.first);
        if prefix == 32 {
            write!(f, "{first}")
        } else {
            write!(f, "{first}/{prefix}")
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
            Ipv4Range::cidr([100, 64, 0, 0], 10),
            Ipv4Range::parse("100.64.0.0/10").unwrap()
        );
        assert_eq!(
            Ipv4Range::cidr([255, 255, 255, 255], 32),
            Ipv4Range::parse("255.255.255.255").unwrap()
        );
    }
}
