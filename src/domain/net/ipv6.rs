//! Public IPv6 addresses: the "globally reachable" rule from the IANA IPv6
//! Special-Purpose Address Registry, and the IPv4 address a form carries.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::domain::net::intervals::{clip, combine, union_of_sorted, Op};
use crate::domain::net::ipv4;
use crate::domain::net::range::{Ipv4Range, Ipv6Range};

/// A globally reachable IPv6 address that is not an IPv4-mapped one (those are
/// the IPv4 addresses they map, and live as `PublicIpv4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicIpv6(Ipv6Addr);

impl PublicIpv6 {
    /// The address if it is globally reachable and not IPv4-mapped.
    pub fn from_addr(addr: Ipv6Addr) -> Option<Self> {
        (addr.to_ipv4_mapped().is_none() && is_globally_reachable(addr)).then_some(Self(addr))
    }

    pub fn addr(self) -> Ipv6Addr {
        self.0
    }

    /// The /64 around this address, by its network address, when that is public
    /// too: then every address of the /64 is (the registry's blocks narrower than
    /// /64, `::`, `::1`, `::ffff:0:0/96`, `64:ff9b::/96` and 2001:1::1 to ::3, and
    /// the forms that carry an IPv4 address, lie in /64s whose first address is
    /// not public, or are public themselves).
    pub fn net64(self) -> Option<Self> {
        let network = u128::from(self.0) & !u128::from(u64::MAX);
        Self::from_addr(Ipv6Addr::from(network))
    }

    /// Whether this is the first address of a /64.
    pub fn is_net64(self) -> bool {
        u128::from(self.0) & u128::from(u64::MAX) == 0
    }

    /// The IPv4 address this one carries (NAT64's `64:ff9b::/96`, `::/96`,
    /// `::ffff:0:0:0/96`): the host a network on the way reaches by it, which is
    /// public when this address is.
    pub fn carried_ipv4(self) -> Option<ipv4::PublicIpv4> {
        carried_ipv4(u128::from(self.0)).and_then(ipv4::PublicIpv4::from_addr)
    }
}

/// RFC 5952's canonical form: lower case, the longest run of zero groups compressed.
impl fmt::Display for PublicIpv6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A block of the registry: its first address and prefix length.
#[derive(Debug, Clone, Copy)]
struct Block {
    first: u128,
    prefix: u32,
}

impl Block {
    const fn new(groups: [u16; 8], prefix: u32) -> Self {
        let mut first = 0u128;
        let mut i = 0;
        while i < 8 {
            first = (first << 16) | groups[i] as u128;
            i += 1;
        }
        Self { first, prefix }
    }

    fn last(self) -> u128 {
        self.first | (u128::MAX.checked_shr(self.prefix).unwrap_or(0))
    }

    fn contains(self, value: u128) -> bool {
        self.first <= value && value <= self.last()
    }
}

/// Blocks of the IANA IPv6 Special-Purpose Address Registry (2025-10-09) whose
/// "Globally Reachable" is False, those where it is N/A (Teredo, 6to4: they
/// carry IPv4 traffic, and the IPv4 rules decide), multicast `ff00::/8`, and the
/// deprecated site-local `fec0::/10` (RFC 3879: private addresses by another
/// name, still routed inside some networks). Teredo (`2001::/32`, N/A) lies
/// inside `2001::/23`. IPv4-mapped addresses (`::ffff:0:0/96`) are listed for
/// completeness: `PublicIp` makes them IPv4 first.
const NOT_GLOBAL: [Block; 15] = [
    Block::new([0, 0, 0, 0, 0, 0, 0, 0], 128),
    Block::new([0, 0, 0, 0, 0, 0, 0, 1], 128),
    Block::new([0, 0, 0, 0, 0, 0xffff, 0, 0], 96),
    Block::new([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
    Block::new([0x100, 0, 0, 0, 0, 0, 0, 0], 64),
    Block::new([0x100, 0, 0, 1, 0, 0, 0, 0], 64),
    Block::new([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
    Block::new([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
    Block::new([0x2002, 0, 0, 0, 0, 0, 0, 0], 16),
    Block::new([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
    Block::new([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16),
    Block::new([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
    Block::new([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
    Block::new([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
    Block::new([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),
];

/// The /96s whose last 32 bits are an IPv4 address that a network on the way
/// reaches the host by: NAT64's well-known prefix `64:ff9b::/96` (RFC 6052),
/// the deprecated IPv4-compatible `::/96` (RFC 4291, 2.5.5.1) and the
/// IPv4-translated `::ffff:0:0:0/96` (RFC 2765). An address there is public
/// exactly when the IPv4 address it carries is (`64:ff9b::10.0.0.1` reaches
/// 10.0.0.1), and otherwise stays the IPv6 address it is; `::` and `::1` lie in
/// `::/96` and carry 0.0.0.0 and 0.0.0.1, which are not public either.
const CARRYING_IPV4: [Block; 3] = [
    Block::new([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96),
    Block::new([0, 0, 0, 0, 0, 0, 0, 0], 96),
    Block::new([0, 0, 0, 0, 0xffff, 0, 0, 0], 96),
];

/// The IPv4 address `value` carries, if it lies in one of `CARRYING_IPV4`.
fn carried_ipv4(value: u128) -> Option<Ipv4Addr> {
    CARRYING_IPV4
        .iter()
        .any(|block| block.contains(value))
        .then(|| Ipv4Addr::from(value as u32))
}

/// Inside `2001::/23`, the blocks the registry marks globally reachable.
const GLOBAL_EXCEPTIONS: [Block; 7] = [
    Block::new([0x2001, 1, 0, 0, 0, 0, 0, 1], 128),
    Block::new([0x2001, 1, 0, 0, 0, 0, 0, 2], 128),
    Block::new([0x2001, 1, 0, 0, 0, 0, 0, 3], 128),
    Block::new([0x2001, 3, 0, 0, 0, 0, 0, 0], 32),
    Block::new([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48),
    Block::new([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28),
    Block::new([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28),
];

/// `::ffff:0:0/96`, first and last: IPv4 addresses written as IPv6 ones, which
/// are the IPv4 addresses they map wherever the service meets them.
pub const IPV4_MAPPED: (u128, u128) = (0xffff << 32, (0xffff << 32) | 0xffff_ffff);

pub fn is_globally_reachable(addr: Ipv6Addr) -> bool {
    let value = u128::from(addr);
    if let Some(v4) = carried_ipv4(value) {
        return ipv4::is_globally_reachable(v4);
    }
    GLOBAL_EXCEPTIONS.iter().any(|block| block.contains(value))
        || !NOT_GLOBAL.iter().any(|block| block.contains(value))
}

/// Whether no address of `range` is globally reachable: one not-global block
/// holds all of it and no exception lies in it (blocks nest or are disjoint);
/// inside a /96 that carries IPv4 addresses, when none of those it carries is.
pub fn is_wholly_private(range: Ipv6Range) -> bool {
    let (first, last) = (range.first(), range.last());
    if CARRYING_IPV4
        .iter()
        .any(|block| block.contains(first) && block.contains(last))
    {
        let carried = Ipv4Range::from_parts(first as u32, range.prefix().saturating_sub(96));
        return carried.is_some_and(ipv4::is_wholly_private);
    }
    NOT_GLOBAL
        .iter()
        .any(|block| block.first <= first && last <= block.last())
        && !GLOBAL_EXCEPTIONS
            .iter()
            .any(|block| block.first <= last && first <= block.last())
}

/// Whether any address of `range` is not globally reachable: a holder's own
/// allow-list range must be public throughout, as an address must be.
pub fn holds_private(range: Ipv6Range) -> bool {
    let mut blocks: Vec<(u128, u128)> = NOT_GLOBAL.iter().map(|b| (b.first, b.last())).collect();
    blocks.sort_unstable();
    let mut exceptions: Vec<(u128, u128)> = GLOBAL_EXCEPTIONS
        .iter()
        .map(|b| (b.first, b.last()))
        .collect();
    exceptions.sort_unstable();
    let not_global = combine(
        &union_of_sorted(blocks),
        &union_of_sorted(exceptions),
        Op::Minus,
    );
    // Inside the /96s that carry IPv4 addresses, what the IPv4 rules say instead.
    let mut carrying: Vec<(u128, u128)> =
        CARRYING_IPV4.iter().map(|b| (b.first, b.last())).collect();
    carrying.sort_unstable();
    let v4_not_global = ipv4::not_global();
    let mut carried: Vec<(u128, u128)> = CARRYING_IPV4
        .iter()
        .flat_map(|block| {
            let base = block.first;
            v4_not_global
                .iter()
                .map(move |&(low, high)| (base | u128::from(low), base | u128::from(high)))
        })
        .collect();
    carried.sort_unstable();
    let outside = combine(&not_global, &union_of_sorted(carrying), Op::Minus);
    let not_global = combine(&outside, &union_of_sorted(carried), Op::Union);
    !clip(&not_global, range.first(), range.last()).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::text::parse_colon_hex;

    #[test]
    fn a_range_is_wholly_private_only_when_no_address_of_it_is_public() {
        let private = |text: &str| is_wholly_private(Ipv6Range::parse(text).unwrap());
        for text in [
            "2001:db8::/32",
            "fc00::/7",
            "fe80::/64",
            "2001:2::/48",
            "::1",
            "ff02::/16",
            "fec0::/10",
            "64:ff9b::a00:0/104",
            "::a00:0/104",
            "::ffff:0:c0a8:0/112",
            "64:ff9b::ffff:ffff",
        ] {
            assert!(private(text), "{text} holds no public address");
        }
        for text in [
            "2001::/16",
            "2001::/23",
            "2001:1::1",
            "2001:4:112::/48",
            "2a00:1450::/32",
            "::/0",
            "2001:db8::/31",
            "64:ff9b::/96",
            "64:ff9b::808:800/120",
            "::/96",
        ] {
            assert!(!private(text), "{text}");
        }
    }

    #[test]
    fn a_range_holds_private_addresses_where_the_ipv4_addresses_it_carries_do() {
        let holds = |text: &str| holds_private(Ipv6Range::parse(text).unwrap());
        for text in [
            "64:ff9b::a00:0/120",
            "64:ff9b::/96",
            "::808:800/120",
            "::/96",
            "::ffff:0:0:0/96",
            "fec0::/48",
            "2a00:1450::/32",
        ] {
            let expected = !matches!(text, "::808:800/120" | "2a00:1450::/32");
            assert_eq!(holds(text), expected, "{text}");
        }
        assert!(!holds("64:ff9b::808:800/120"));
        assert!(!holds("::ffff:0:808:800/120"));
        assert!(holds("64:ff9b::c000:0/120"), "192.0.0.0/24, but for two");
        assert!(!holds("64:ff9b::c000:9/128"), "192.0.0.9 is public");
    }

    fn public(text: &str) -> bool {
        is_globally_reachable(parse_colon_hex(text).unwrap())
    }

    #[test]
    fn the_registry_blocks_are_private_at_both_edges_and_their_neighbours_public() {
        for private in [
            "::",
            "::1",
            "::2",
            "::10.0.0.1",
            "::ffff:0:10.0.0.1",
            "::ffff:0:0:0",
            "64:ff9b::",
            "64:ff9b::1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::192.168.1.1",
            "64:ff9b::255.255.255.255",
            "64:ff9b:1::",
            "64:ff9b:1:ffff:ffff:ffff:ffff:ffff",
            "100::",
            "100::ffff:ffff:ffff:ffff",
            "100:0:0:1::",
            "2001::",
            "2001::1",
            "2001:1::",
            "2001:1::4",
            "2001:2::",
            "2001:10::",
            "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:db8::",
            "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
            "2002::",
            "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "3fff::",
            "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff",
            "5f00::",
            "fc00::",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fe80::",
            "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fec0::",
            "fec0::1",
            "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "ff00::",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ] {
            assert!(!public(private), "{private} should be private");
        }
        for global in [
            "::8.8.8.8",
            "::ffff:0:8.8.4.4",
            "64:ff9b::8.8.8.8",
            "64:ff9b::192.0.0.9",
            "::1:0:0:1",
            "64:ff9b::1:0:0:1",
            "64:ff9b:0:ffff:ffff:ffff:ffff:ffff",
            "64:ff9b:2::",
            "100:0:0:2::",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::",
            "2001:3:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:4:112::",
            "2001:4:112:ffff:ffff:ffff:ffff:ffff",
            "2001:20::",
            "2001:3f:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:200::",
            "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:db9::",
            "2003::",
            "2a00:1450:4001:80b::200e",
            "3fff:1000::",
            "5f01::",
            "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fe00::",
        ] {
            assert!(public(global), "{global} should be public");
        }
    }

    /// The registry's rows as (block, globally reachable), written independently of
    /// `NOT_GLOBAL`: a longer block decides over the shorter one holding it.
    const REFERENCE: [(&str, u32, bool); 26] = [
        ("::", 128, false),
        ("::1", 128, false),
        ("::ffff:0:0", 96, false),
        ("64:ff9b::", 96, true),
        ("64:ff9b:1::", 48, false),
        ("100::", 64, false),
        ("100:0:0:1::", 64, false),
        ("2001::", 23, false),
        ("2001::", 32, false),
        ("2001:1::1", 128, true),
        ("2001:1::2", 128, true),
        ("2001:1::3", 128, true),
        ("2001:2::", 48, false),
        ("2001:3::", 32, true),
        ("2001:4:112::", 48, true),
        ("2001:10::", 28, false),
        ("2001:20::", 28, true),
        ("2001:30::", 28, true),
        ("2001:db8::", 32, false),
        ("2002::", 16, false),
        ("3fff::", 20, false),
        ("5f00::", 16, false),
        ("fc00::", 7, false),
        ("fe80::", 10, false),
        // Site-local, deprecated (RFC 3879): not in the registry, and private.
        ("fec0::", 10, false),
        // Multicast: not in the registry, and never a challenge list's entry.
        ("ff00::", 8, false),
    ];

    /// The /96s whose last 32 bits are an IPv4 address, which the IPv4 rule decides.
    const REFERENCE_CARRYING: [&str; 3] = ["64:ff9b::", "::", "::ffff:0:0:0"];

    fn reference_is_global(addr: Ipv6Addr) -> bool {
        let value = u128::from(addr);
        let carrying = REFERENCE_CARRYING
            .iter()
            .any(|prefix| value >> 32 == u128::from(prefix.parse::<Ipv6Addr>().unwrap()) >> 32);
        if carrying {
            return ipv4::is_globally_reachable(Ipv4Addr::from(value as u32));
        }
        let mut decided: Option<(u32, bool)> = None;
        for (network, prefix, global) in REFERENCE {
            let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            let inside = value & mask == u128::from(network.parse::<Ipv6Addr>().unwrap());
            if inside && decided.is_none_or(|(longest, _)| prefix > longest) {
                decided = Some((prefix, global));
            }
        }
        decided.is_none_or(|(_, global)| global)
    }

    fn near_an_edge() -> impl proptest::strategy::Strategy<Value = u128> {
        use proptest::prelude::*;
        (0usize..REFERENCE.len(), any::<bool>(), -2i64..=2).prop_map(|(row, high, offset)| {
            let (network, prefix, _) = REFERENCE[row];
            let first = u128::from(network.parse::<Ipv6Addr>().unwrap());
            let base = if high {
                first | u128::MAX.checked_shr(prefix).unwrap_or(0)
            } else {
                first
            };
            base.wrapping_add_signed(i128::from(offset))
        })
    }

    proptest::proptest! {
        #[test]
        fn classification_agrees_with_the_reference_table(n: u128) {
            let addr = Ipv6Addr::from(n);
            proptest::prop_assert_eq!(is_globally_reachable(addr), reference_is_global(addr));
        }

        #[test]
        fn classification_agrees_near_every_block_edge(value in near_an_edge()) {
            let addr = Ipv6Addr::from(value);
            proptest::prop_assert_eq!(is_globally_reachable(addr), reference_is_global(addr));
        }
    }
}
