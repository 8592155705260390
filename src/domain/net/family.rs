//! An address of one family as the unsigned integer the operator's lists compute
//! with: `u32` for IPv4, `u128` for IPv6. Ranges, interval sets and snapshot
//! shards are written once over this trait, so each family keeps its own width
//! in memory and in storage (an IPv4 address never takes 16 bytes).

use std::fmt;
use std::hash::Hash;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::domain::net::text::{parse_colon_hex, parse_dotted};

pub trait Addr: Copy + Ord + Hash + fmt::Debug + Default + Send + Sync + 'static {
    /// Bits an address has: the longest prefix.
    const BITS: u8;
    const MAX: Self;
    /// Bytes an address takes in storage.
    const BYTES: usize;
    /// 4 or 6: the byte that names the family in stored layouts.
    const FAMILY: u8;

    /// The bits below a prefix of `prefix` bits; none past `BITS`.
    fn host_mask(prefix: u8) -> Self;
    /// The next address, if there is one.
    fn after(self) -> Option<Self>;
    /// The address before, if there is one.
    fn before(self) -> Option<Self>;
    /// The length of the common prefix of `self` and `other` (`BITS` when equal).
    fn common_prefix(self, other: Self) -> u8;
    /// The zero bits below the lowest one (`BITS` for zero): how wide a block may begin here.
    fn trailing_zeros(self) -> u8;
    fn and(self, other: Self) -> Self;
    fn or(self, other: Self) -> Self;
    fn write_le(self, out: &mut Vec<u8>);
    /// `bytes` must hold exactly `BYTES`.
    fn read_le(bytes: &[u8]) -> Option<Self>;
    /// The family's strict text form (`parse_dotted` or `parse_colon_hex`).
    fn parse(text: &str) -> Option<Self>;
    /// The canonical text form.
    fn show(self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// The family's integer, its text form as `$addr`, and the parser of that text.
macro_rules! family {
    ($int:ty, $family:literal, $addr:ty, $parse:expr) => {
        impl Addr for $int {
            const BITS: u8 = <$int>::BITS as u8;
            const MAX: Self = <$int>::MAX;
            const BYTES: usize = std::mem::size_of::<$int>();
            const FAMILY: u8 = $family;

            fn host_mask(prefix: u8) -> Self {
                <$int>::MAX.checked_shr(u32::from(prefix)).unwrap_or(0)
            }
            fn after(self) -> Option<Self> {
                self.checked_add(1)
            }
            fn before(self) -> Option<Self> {
                self.checked_sub(1)
            }
            fn common_prefix(self, other: Self) -> u8 {
                (self ^ other).leading_zeros() as u8
            }
            fn trailing_zeros(self) -> u8 {
                self.trailing_zeros() as u8
            }
            fn and(self, other: Self) -> Self {
                self & other
            }
            fn or(self, other: Self) -> Self {
                self | other
            }
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Option<Self> {
                Some(Self::from_le_bytes(bytes.try_into().ok()?))
            }
            fn parse(text: &str) -> Option<Self> {
                $parse(text).map(<$int>::from)
            }
            /// Dotted for IPv4; RFC 5952's canonical form for IPv6.
            fn show(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&<$addr>::from(self), f)
            }
        }
    };
}

family!(u32, 4, Ipv4Addr, parse_dotted);
family!(u128, 6, Ipv6Addr, parse_colon_hex);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_neighbours_stop_at_the_edges() {
        assert_eq!(<u32 as Addr>::host_mask(0), u32::MAX);
        assert_eq!(<u32 as Addr>::host_mask(24), 0xff);
        assert_eq!(<u32 as Addr>::host_mask(32), 0);
        assert_eq!(<u128 as Addr>::host_mask(0), u128::MAX);
        assert_eq!(<u128 as Addr>::host_mask(64), u128::from(u64::MAX));
        assert_eq!(<u128 as Addr>::host_mask(128), 0);
        assert_eq!(Addr::after(u128::MAX), None);
        assert_eq!(Addr::before(0u128), None);
        assert_eq!(Addr::after(7u32), Some(8));
        assert_eq!(Addr::common_prefix(5u128, 5u128), 128);
        assert_eq!(Addr::common_prefix(0u32, 1u32), 31);
    }

    #[test]
    fn addresses_round_trip_through_their_bytes() {
        let mut bytes = Vec::new();
        0x2001_0db8_u128.write_le(&mut bytes);
        assert_eq!(bytes.len(), 16);
        assert_eq!(<u128 as Addr>::read_le(&bytes), Some(0x2001_0db8));
        assert_eq!(<u32 as Addr>::read_le(&bytes[..3]), None);
    }
}
