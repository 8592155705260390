//! Where a report came from: the network of the client that carried it, the
//! /24 of an IPv4 address and the /48 of an IPv6 one. Licenses reporting from one
//! network count as one network towards the consensus, so that one actor with many
//! licenses on one machine, or one hosting customer's block, is one voice.
//!
//! Why these sizes: a /24 is the smallest IPv4 block routed between networks and
//! the usual unit of one customer's allocation, and a /48 is what RIRs assign to
//! one end site in IPv6 (a /64 is a single LAN: one actor holds thousands of them).
//! Four machines in four unrelated networks are not stopped by this: that takes
//! the canaries, the suspensions and the review (docs/api.md).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The network a report came from. Two reports from one network are one network's,
/// whatever their licenses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReporterNetwork {
    /// The /24, by its first address.
    V4(Ipv4Addr),
    /// The /48, by its first address.
    V6(Ipv6Addr),
    /// The client's address was missing or not an address (or a caller from
    /// before networks did not say): every such report is one network's, so that
    /// leaving the address out never counts more.
    #[default]
    Unknown,
}

impl ReporterNetwork {
    /// The network of a client, as `CF-Connecting-IP` gives it: an IPv4-mapped
    /// IPv6 address is the IPv4 address it maps.
    pub fn of_client(client: Option<&str>) -> Self {
        match client.and_then(|text| text.trim().parse::<IpAddr>().ok()) {
            Some(addr) => match addr.to_canonical() {
                IpAddr::V4(v4) => Self::V4(Ipv4Addr::from(u32::from(v4) & !0xff)),
                IpAddr::V6(v6) => Self::V6(Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 48))),
            },
            None => Self::Unknown,
        }
    }
}

/// `203.0.113.0/24`, `2001:db8:1::/48`, or `unknown`.
impl fmt::Display for ReporterNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(first) => write!(f, "{first}/24"),
            Self::V6(first) => write!(f, "{first}/48"),
            Self::Unknown => f.write_str("unknown"),
        }
    }
}

/// Its text, as `Display` writes it: the first address must be the network's.
impl FromStr for ReporterNetwork {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let refused = || format!("not a reporter network: {text:?}");
        if text == "unknown" {
            return Ok(Self::Unknown);
        }
        let network = match text.split_once('/') {
            Some((first, "24")) => Self::V4(first.parse().map_err(|_| refused())?),
            Some((first, "48")) => Self::V6(first.parse().map_err(|_| refused())?),
            _ => return Err(refused()),
        };
        let first = match network {
            Self::V4(first) => IpAddr::V4(first),
            Self::V6(first) => IpAddr::V6(first),
            Self::Unknown => unreachable!("handled above"),
        };
        (Self::of_client(Some(&first.to_string())) == network)
            .then_some(network)
            .ok_or_else(refused)
    }
}

impl Serialize for ReporterNetwork {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ReporterNetwork {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(client: &str) -> String {
        ReporterNetwork::of_client(Some(client)).to_string()
    }

    #[test]
    fn an_ipv4_client_is_its_24_and_an_ipv6_one_its_48() {
        assert_eq!(of("203.0.113.77"), "203.0.113.0/24");
        assert_eq!(of(" 203.0.113.1 "), "203.0.113.0/24");
        assert_eq!(of("::ffff:203.0.113.9"), "203.0.113.0/24", "mapped is IPv4");
        assert_eq!(of("2001:db8:1:2:3::4"), "2001:db8:1::/48");
        assert_eq!(of("2001:db8:1:ffff::1"), "2001:db8:1::/48");
        assert_ne!(of("2001:db8:2::1"), of("2001:db8:1::1"));
        assert_eq!(of("127.0.0.1"), "127.0.0.0/24");
        assert_eq!(ReporterNetwork::of_client(None), ReporterNetwork::Unknown);
        assert_eq!(of("not an address"), "unknown");
    }

    #[test]
    fn a_network_reads_back_from_its_text_and_only_from_a_networks_first_address() {
        for client in ["198.51.100.7", "2a00:1450:4001:81b::1", "junk"] {
            let network = ReporterNetwork::of_client(Some(client));
            assert_eq!(network.to_string().parse::<ReporterNetwork>(), Ok(network));
            let json = serde_json::to_string(&network).unwrap();
            assert_eq!(
                serde_json::from_str::<ReporterNetwork>(&json).unwrap(),
                network
            );
        }
        for text in [
            "198.51.100.7/24",
            "198.51.100.0/16",
            "2001:db8:1::1/48",
            "",
            "x/24",
        ] {
            assert!(text.parse::<ReporterNetwork>().is_err(), "{text}");
        }
    }
}
