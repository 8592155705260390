//! The addresses a personal list holds: public IPv4 addresses, and public IPv6
//! addresses when the operator turns IPv6 on.

use std::cmp::Ordering;
use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ipv4::{IpRejection, PublicIpv4};
use super::ipv6::{parse_colon_hex, PublicIpv6};

/// Whether new IPv6 input is taken (`IPV6`). Off, IPv6 text is invalid, exactly
/// as the specification's IPv4-only rules have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ipv6 {
    #[default]
    Off,
    On,
}

/// A public address of either family. An IPv4-mapped IPv6 address is the IPv4
/// address it maps, so the same address never lives twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PublicIp {
    V4(PublicIpv4),
    V6(PublicIpv6),
}

/// An address as a request gave it: the value acted on and the text the
/// messages show (the trimmed input; the IPv4 address for an IPv4-mapped one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub ip: PublicIp,
    shown: String,
}

impl PublicIp {
    /// Validation in the order the specification fixes: valid first, then public.
    pub fn parse(raw: &str, ipv6: Ipv6) -> Result<Given, IpRejection> {
        let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        if ipv6 == Ipv6::Off || !trimmed.contains(':') {
            return PublicIpv4::parse(trimmed).map(|ip| Self::V4(ip).into());
        }
        let addr = parse_colon_hex(trimmed).ok_or_else(|| IpRejection::Invalid(trimmed.into()))?;
        if let Some(v4) = addr.to_ipv4_mapped() {
            return PublicIpv4::from_addr(v4)
                .map(|ip| Self::V4(ip).into())
                .ok_or_else(|| IpRejection::Private(v4.to_string()));
        }
        PublicIpv6::from_addr(addr)
            .map(|ip| Given {
                ip: Self::V6(ip),
                shown: trimmed.to_owned(),
            })
            .ok_or_else(|| IpRejection::Private(trimmed.to_owned()))
    }

    /// Sixteen bytes, an IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`): how
    /// rows keep an address, and the order lists sort in.
    pub fn octets(self) -> [u8; 16] {
        match self {
            Self::V4(ip) => ip.addr().to_ipv6_mapped().octets(),
            Self::V6(ip) => ip.addr().octets(),
        }
    }

    /// An address read back from its sixteen bytes; `None` when it is not public.
    pub fn from_octets(octets: [u8; 16]) -> Option<Self> {
        let addr = Ipv6Addr::from(octets);
        match addr.to_ipv4_mapped() {
            Some(v4) => PublicIpv4::from_addr(v4).map(Self::V4),
            None => PublicIpv6::from_addr(addr).map(Self::V6),
        }
    }

    /// The IPv4 address, for what only IPv4 has (the operator's lists).
    pub fn v4(self) -> Option<PublicIpv4> {
        match self {
            Self::V4(ip) => Some(ip),
            Self::V6(_) => None,
        }
    }
}

impl From<PublicIpv4> for PublicIp {
    fn from(ip: PublicIpv4) -> Self {
        Self::V4(ip)
    }
}

/// An address given in its canonical form.
impl From<PublicIp> for Given {
    fn from(ip: PublicIp) -> Self {
        Self {
            ip,
            shown: ip.to_string(),
        }
    }
}

impl fmt::Display for Given {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// In the order of their sixteen bytes, as the rows sort.
impl Ord for PublicIp {
    fn cmp(&self, other: &Self) -> Ordering {
        self.octets().cmp(&other.octets())
    }
}

impl PartialOrd for PublicIp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Dotted IPv4, or RFC 5952's canonical IPv6 text.
impl fmt::Display for PublicIp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(ip) => ip.fmt(f),
            Self::V6(ip) => ip.fmt(f),
        }
    }
}

/// Serialized as its text and validated again when read back, so a `PublicIp`
/// that crossed a wire is still a public address. Either family is read back:
/// what is stored stays served when `IPV6` is turned off again.
impl Serialize for PublicIp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PublicIp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse()
            .map_err(|_| D::Error::custom(format!("not a public address: {text:?}")))
    }
}

/// A public address of either family, as stored values and wires carry them.
impl FromStr for PublicIp {
    type Err = IpRejection;

    fn from_str(text: &str) -> Result<Self, IpRejection> {
        Self::parse(text, Ipv6::On).map(|given| given.ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(text: &str) -> Result<(PublicIp, String), IpRejection> {
        PublicIp::parse(text, Ipv6::On).map(|given| (given.ip, given.to_string()))
    }

    #[test]
    fn off_every_ipv6_form_is_invalid_as_the_ipv4_rules_have_it() {
        for text in [
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "::1",
            " 2001:db8::1 ",
        ] {
            assert_eq!(
                PublicIp::parse(text, Ipv6::Off),
                Err(IpRejection::Invalid(text.trim().to_owned()))
            );
        }
    }

    #[test]
    fn on_ipv6_is_validated_and_shown_as_given() {
        let (ip, shown) = on(" 2A00:1450:4001:080B:0:0:0:200E\t").unwrap();
        assert_eq!(ip.to_string(), "2a00:1450:4001:80b::200e");
        assert_eq!(shown, "2A00:1450:4001:080B:0:0:0:200E");
        assert_eq!(
            on("2001:db8::1"),
            Err(IpRejection::Private("2001:db8::1".into()))
        );
        assert_eq!(
            on("fe80::1%eth0"),
            Err(IpRejection::Invalid("fe80::1%eth0".into()))
        );
        assert_eq!(
            on("[2001:4860::1]"),
            Err(IpRejection::Invalid("[2001:4860::1]".into()))
        );
        assert_eq!(on("8.8.8.8").unwrap().1, "8.8.8.8");
        assert_eq!(on("10.0.0.1"), Err(IpRejection::Private("10.0.0.1".into())));
    }

    #[test]
    fn an_ipv4_mapped_address_is_the_ipv4_address_it_maps() {
        let (ip, shown) = on("::ffff:8.8.8.8").unwrap();
        assert_eq!(ip, on("8.8.8.8").unwrap().0);
        assert_eq!(shown, "8.8.8.8");
        assert_eq!(on("::FFFF:808:808").unwrap().0, ip);
        assert_eq!(
            on("::ffff:10.0.0.1"),
            Err(IpRejection::Private("10.0.0.1".into()))
        );
    }

    #[test]
    fn sixteen_bytes_round_trip_and_sort_as_the_rows_do() {
        let ips =
            ["::2", "8.8.8.8", "9.9.9.9", "2a00:1450:4001:80b::200e"].map(|t| on(t).unwrap().0);
        for ip in ips {
            assert_eq!(PublicIp::from_octets(ip.octets()), Some(ip));
        }
        assert!(ips.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(
            PublicIp::from_octets(on("fc00::1").err().map(|_| [0xfc; 16]).unwrap()),
            None
        );
        assert_eq!(
            serde_json::to_string(&ips[3]).unwrap(),
            "\"2a00:1450:4001:80b::200e\""
        );
        assert_eq!(
            serde_json::from_str::<PublicIp>("\"2A00:1450:4001:80B::200E\"").unwrap(),
            ips[3]
        );
        assert!(serde_json::from_str::<PublicIp>("\"2001:db8::1\"").is_err());
    }
}
