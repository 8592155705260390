//! Addresses and sets of them: a public IPv4 or IPv6 address as a request gives it,
//! the special-purpose ranges that make one private, CIDR ranges, and sets of
//! addresses as sorted intervals, each written once over the address family.

pub mod address;
pub mod family;
pub mod intervals;
pub mod ipv4;
pub mod ipv6;
pub mod range;
pub mod text;
