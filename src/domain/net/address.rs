//! The addresses a personal list holds: public IPv4 addresses, and public IPv6
//! addresses when the operator turns IPv6 on.

use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::net::ipv4::{IpRejection, PublicIpv4};
use crate::domain::net::ipv6::PublicIpv6;
use crate::domain::net::text::parse_colon_hex;

/// Whether new IPv6 input is taken (`IPV6`). Off, IPv6 text is invalid, exactly
/// as the specification's IPv4-only rules have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Ipv6 {
    #[default]
    Off,
    On,
}

/// How an IPv6 address is listed (`IPV6_PREFIX`): as itself, or as the /64
/// around it, since one who holds one address of a /64 usually holds them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Ipv6Prefix {
    #[default]
    Whole,
    Net64,
}

/// What a personal entry lists: one address, or the /64 around an IPv6 address
/// (by its network address; every address in it is public).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listed {
    Ip(PublicIp),
    Net64(PublicIpv6),
}

/// A row's key: sixteen bytes, and a seventeenth (64) for a /64, so that a /64
/// sorts right after its first address and before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "Vec<u8>", into = "Vec<u8>")]
pub struct Key {
    bytes: [u8; 17],
    len: usize,
}

/// A key crosses a wire as its bytes, and is checked again when read back.
impl TryFrom<Vec<u8>> for Key {
    type Error = String;

    fn try_from(bytes: Vec<u8>) -> Result<Self, String> {
        Self::from_bytes(&bytes).ok_or_else(|| format!("not a row's key: {bytes:?}"))
    }
}

impl From<Key> for Vec<u8> {
    fn from(key: Key) -> Self {
        key.as_bytes().to_vec()
    }
}

impl Key {
    /// Sixteen bytes, or seventeen ending in 64.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut key = Self {
            bytes: [0; 17],
            len: bytes.len(),
        };
        match bytes.len() {
            16 => key.bytes[..16].copy_from_slice(bytes),
            17 if bytes[16] == 64 => key.bytes.copy_from_slice(bytes),
            _ => return None,
        }
        Some(key)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Whether this keys a /64.
    pub fn is_net64(&self) -> bool {
        self.len == 17
    }

    /// The address part.
    pub fn octets(&self) -> [u8; 16] {
        self.bytes[..16].try_into().expect("sixteen bytes")
    }
}

impl Listed {
    /// The keys `ip` may be listed under, the one an add under `prefix` lists it
    /// under first: the address, or its /64 where every address in that is public.
    /// A check or remove looks for both, so that a change of `IPV6_PREFIX` hides
    /// nothing listed before it.
    pub fn keys(ip: PublicIp, prefix: Ipv6Prefix) -> (Self, Option<Self>) {
        let host = Self::Ip(ip);
        let net = match ip {
            PublicIp::V6(v6) => v6.net64().map(Self::Net64),
            PublicIp::V4(_) => None,
        };
        match (prefix, net) {
            (_, None) => (host, None),
            (Ipv6Prefix::Whole, Some(net)) => (host, Some(net)),
            (Ipv6Prefix::Net64, Some(net)) => (net, Some(host)),
        }
    }

    /// `keys`, in the order to look under them.
    pub fn candidates(ip: PublicIp, prefix: Ipv6Prefix) -> impl Iterator<Item = Self> {
        let (first, other) = Self::keys(ip, prefix);
        std::iter::once(first).chain(other)
    }

    pub fn key(self) -> Key {
        let mut bytes = [0; 17];
        let len = match self {
            Self::Ip(ip) => {
                bytes[..16].copy_from_slice(&ip.octets());
                16
            }
            Self::Net64(net) => {
                bytes[..16].copy_from_slice(&net.addr().octets());
                bytes[16] = 64;
                17
            }
        };
        Key { bytes, len }
    }

    /// What a row's key lists; `None` for a key this code never writes or an
    /// address that is not public.
    pub fn from_key(bytes: &[u8]) -> Option<Self> {
        let key = Key::from_bytes(bytes)?;
        if key.is_net64() {
            PublicIpv6::from_addr(Ipv6Addr::from(key.octets()))
                .filter(|net| net.is_net64())
                .map(Self::Net64)
        } else {
            PublicIp::from_octets(key.octets()).map(Self::Ip)
        }
    }
}

impl From<PublicIp> for Listed {
    fn from(ip: PublicIp) -> Self {
        Self::Ip(ip)
    }
}

/// In the order of their keys, as the rows sort.
impl Ord for Listed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Listed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The address, or the /64's network address and `/64`.
impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(ip) => ip.fmt(f),
            Self::Net64(net) => write!(f, "{net}/64"),
        }
    }
}

/// Its text: an address, or a /64 (`2a00:1450:4001:80b::/64`, no host bits).
impl FromStr for Listed {
    type Err = IpRejection;

    fn from_str(text: &str) -> Result<Self, IpRejection> {
        let Some(network) = text.strip_suffix("/64") else {
            return text.parse().map(Self::Ip);
        };
        let invalid = || IpRejection::Invalid(text.to_owned());
        match network.parse::<PublicIp>() {
            // A public first address of a /64 makes the whole /64 public (`net64`).
            Ok(PublicIp::V6(net)) if net.is_net64() => Ok(Self::Net64(net)),
            _ => Err(invalid()),
        }
    }
}

impl Serialize for Listed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Listed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse()
            .map_err(|_| D::Error::custom(format!("not a public address or /64: {text:?}")))
    }
}

/// A client's address (`CF-Connecting-IP`) as the rate limits and the tally of
/// refused operator calls count it: an IPv6 address by its /64, since one who
/// holds an address of a /64 usually holds all 2^64 of them and could rotate
/// through them; an IPv4 address, or any other text, as it is.
pub fn client_bucket(client: &str) -> String {
    match client.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let net = Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX));
            format!("{net}/64")
        }
        _ => client.to_owned(),
    }
}

/// A public address of either family. An IPv4-mapped IPv6 address is the IPv4
/// address it maps, so the same address never lives twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PublicIp {
    V4(PublicIpv4),
    V6(PublicIpv6),
}

/// An address as a request gave it: the value acted on and the text the
/// messages show, the trimmed input (for an IPv4-mapped one too, which every
/// step takes as the IPv4 address it maps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmittedIp {
    pub ip: PublicIp,
    shown: String,
}

impl PublicIp {
    /// Validation in the order the specification fixes: valid first, then public.
    pub fn parse(raw: &str, ipv6: Ipv6) -> Result<SubmittedIp, IpRejection> {
        let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        if ipv6 == Ipv6::Off || !trimmed.contains(':') {
            return PublicIpv4::parse(trimmed).map(|ip| Self::V4(ip).into());
        }
        let addr = parse_colon_hex(trimmed).ok_or_else(|| IpRejection::Invalid(trimmed.into()))?;
        let ip = match addr.to_ipv4_mapped() {
            Some(v4) => PublicIpv4::from_addr(v4).map(Self::V4),
            None => PublicIpv6::from_addr(addr).map(Self::V6),
        };
        ip.map(|ip| SubmittedIp {
            ip,
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
        Self::from_ip(IpAddr::V6(Ipv6Addr::from(octets)))
    }

    /// The public address `addr` is, an IPv4-mapped one as its IPv4 address.
    pub fn from_ip(addr: IpAddr) -> Option<Self> {
        match addr {
            IpAddr::V4(v4) => PublicIpv4::from_addr(v4).map(Self::V4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PublicIpv4::from_addr(v4).map(Self::V4),
                None => PublicIpv6::from_addr(v6).map(Self::V6),
            },
        }
    }

    pub fn addr(self) -> IpAddr {
        match self {
            Self::V4(ip) => IpAddr::V4(ip.addr()),
            Self::V6(ip) => IpAddr::V6(ip.addr()),
        }
    }

    /// The IPv4 address, if it is one.
    pub fn v4(self) -> Option<PublicIpv4> {
        match self {
            Self::V4(ip) => Some(ip),
            Self::V6(_) => None,
        }
    }

    /// The IPv4 address an IPv6 form carries (`64:ff9b::a.b.c.d` and its kin),
    /// which is allowed, and a canary, wherever that IPv4 address is.
    pub fn carried_ipv4(self) -> Option<PublicIpv4> {
        match self {
            Self::V4(_) => None,
            Self::V6(ip) => ip.carried_ipv4(),
        }
    }
}

impl From<PublicIpv4> for PublicIp {
    fn from(ip: PublicIpv4) -> Self {
        Self::V4(ip)
    }
}

/// An address given in its canonical form.
impl From<PublicIp> for SubmittedIp {
    fn from(ip: PublicIp) -> Self {
        Self {
            ip,
            shown: ip.to_string(),
        }
    }
}

impl fmt::Display for SubmittedIp {
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
                Err(IpRejection::Invalid(text.trim().to_owned())),
                "with IPv6 off, every IPv6 form is invalid as the IPv4 rules have it"
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
    fn an_ipv6_form_that_carries_an_ipv4_address_names_it() {
        let carried = |text: &str| on(text).unwrap().0.carried_ipv4().map(|v4| v4.to_string());
        for text in [
            "64:ff9b::6810:101",
            "64:ff9b::104.16.1.1",
            "::104.16.1.1",
            "::ffff:0:6810:101",
        ] {
            assert_eq!(carried(text).as_deref(), Some("104.16.1.1"), "{text}");
        }
        assert_eq!(carried("2a00:1450::1"), None);
        assert_eq!(carried("104.16.1.1"), None, "an IPv4 address carries none");
        assert_eq!(carried("64:ff9b::1:0:6810:101"), None, "outside the /96");
    }

    #[test]
    fn an_ipv4_mapped_address_is_the_ipv4_address_it_maps_shown_as_given() {
        let (ip, shown) =
            on(" ::ffff:8.8.8.8\t").expect("an IPv4-mapped address is taken as the IPv4 it maps");
        assert_eq!(
            ip,
            on("8.8.8.8").unwrap().0,
            "an IPv4-mapped address is taken as the IPv4 it maps"
        );
        assert_eq!(shown, "::ffff:8.8.8.8", "the caller's text");
        assert_eq!(on("::FFFF:808:808").unwrap(), (ip, "::FFFF:808:808".into()));
        assert_eq!(
            on("::ffff:10.0.0.1"),
            Err(IpRejection::Private("::ffff:10.0.0.1".into()))
        );
    }

    #[test]
    fn a_form_carrying_an_ipv4_address_is_public_as_that_address_and_stays_ipv6() {
        let (ip, shown) = on("64:ff9b::8.8.8.8").unwrap();
        assert_eq!(ip.to_string(), "64:ff9b::808:808", "IPv6 still");
        assert_eq!(
            shown, "64:ff9b::8.8.8.8",
            "the address is shown as it was given"
        );
        for private in [
            "64:ff9b::10.0.0.1",
            "::10.0.0.1",
            "::ffff:0:10.0.0.1",
            "fec0::1",
        ] {
            assert_eq!(
                on(private),
                Err(IpRejection::Private(private.into())),
                "{private} is private, by the IPv4 address it carries or its block"
            );
        }
    }

    #[test]
    fn sixteen_bytes_round_trip_and_sort_as_the_rows_do() {
        let ips = [
            "::808:808",
            "8.8.8.8",
            "9.9.9.9",
            "2a00:1450:4001:80b::200e",
        ]
        .map(|t| on(t).unwrap().0);
        for ip in ips {
            assert_eq!(PublicIp::from_octets(ip.octets()), Some(ip));
        }
        assert!(ips.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(
            PublicIp::from_octets([0xfc; 16]),
            None,
            "fc00::/7 is not public"
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

    #[test]
    fn with_ipv6_prefix_64_an_ipv6_address_lists_its_64_where_all_of_it_is_public() {
        let listed = |text: &str, prefix| Listed::keys(on(text).unwrap().0, prefix).0.to_string();
        use Ipv6Prefix::{Net64, Whole};
        assert_eq!(listed(A6, Whole), A6);
        assert_eq!(listed(A6, Net64), "2a00:1450:4001:80b::/64");
        assert_eq!(
            listed("2a00:1450:4001:80b:ffff::1", Net64),
            "2a00:1450:4001:80b::/64"
        );
        assert_eq!(
            listed("8.8.8.8", Net64),
            "8.8.8.8",
            "IPv4 is listed as itself"
        );
        // A /64 whose first address is not public holds addresses that are not.
        assert_eq!(listed("2001:1::1", Net64), "2001:1::1");
        assert_eq!(listed("::808:808", Net64), "::808:808");
        let ip = on(A6).unwrap().0;
        assert_eq!(
            Listed::keys(ip, Whole),
            (
                Listed::Ip(ip),
                Some("2a00:1450:4001:80b::/64".parse().unwrap())
            ),
            "a /64 listed before is still found"
        );
        assert_eq!(Listed::keys(ip, Net64).1, Some(Listed::Ip(ip)));
        assert_eq!(Listed::keys(on("8.8.8.8").unwrap().0, Net64).1, None);
    }

    const A6: &str = "2a00:1450:4001:80b::200e";

    #[test]
    fn a_client_is_counted_by_its_ipv4_address_or_its_ipv6_64() {
        for (client, bucket) in [
            ("203.0.113.7", "203.0.113.7"),
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
            ("2001:DB8:1:2::FFFF", "2001:db8:1:2::/64"),
            ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
            ("::ffff:203.0.113.7", "::ffff:203.0.113.7"),
            ("", ""),
            ("<b>x</b>", "<b>x</b>"),
        ] {
            assert_eq!(client_bucket(client), bucket, "{client:?}");
        }
    }

    #[test]
    fn keys_round_trip_and_a_64_sorts_between_its_first_address_and_the_next() {
        let parse = |text: &str| text.parse::<Listed>().unwrap();
        let sorted = [
            parse("8.8.8.8"),
            parse("2a00:1450:4001:80b::"),
            parse("2a00:1450:4001:80b::/64"),
            parse("2a00:1450:4001:80b::1"),
            parse("2a00:1450:4001:80c::/64"),
        ];
        for listed in sorted {
            assert_eq!(Listed::from_key(listed.key().as_bytes()), Some(listed));
            assert_eq!(listed.to_string().parse::<Listed>(), Ok(listed));
        }
        assert!(sorted.windows(2).all(|pair| pair[0] < pair[1]));
        let keys: Vec<Key> = sorted.iter().map(|listed| listed.key()).collect();
        assert!(
            keys.windows(2)
                .all(|pair| pair[0].as_bytes() < pair[1].as_bytes()),
            "as SQLite compares blobs"
        );
        for refused in [
            "2a00:1450:4001:80b::1/64",
            "8.8.8.0/64",
            "2001:1::/64",
            "fc00::/64",
            "2a00::/48",
        ] {
            assert!(refused.parse::<Listed>().is_err(), "{refused}");
        }
        let mut host_bits = parse("2a00:1450:4001:80b::/64").key().as_bytes().to_vec();
        host_bits[15] = 1;
        assert_eq!(Listed::from_key(&host_bits), None);
        assert_eq!(Listed::from_key(&[0x2a; 18]), None);
    }
}
