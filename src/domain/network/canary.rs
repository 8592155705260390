//! Canaries: addresses and ranges no honest reporter would report (the operator's
//! own infrastructure, unused space routed to a honeypot). A report of one is
//! answered as any other and counts for nothing, and its license is suspended
//! from the network. Canaries are weighed before every list, so that one the
//! global allow list also holds still catches its reporter; an IPv6 form that
//! carries an IPv4 address is a canary where that address is.

use crate::domain::net::address::PublicIp;
use crate::domain::net::intervals::{union_of_sorted, Intervals};
use crate::domain::operator_lists::list::ListEntry;
use crate::domain::operator_lists::snapshot::covers;

/// Entries the canary list holds at most: it is read whole by every isolate that
/// weighs a report.
pub const MAX_CANARIES: usize = 10_000;

/// The canaries as a set of addresses, each family apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Canaries {
    v4: Intervals<u32>,
    v6: Intervals<u128>,
}

impl Canaries {
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a ListEntry>) -> Self {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for entry in entries {
            match entry {
                ListEntry::V4(range) => v4.push((range.first(), range.last())),
                ListEntry::V6(range) => v6.push((range.first(), range.last())),
            }
        }
        v4.sort_unstable();
        v6.sort_unstable();
        Self {
            v4: union_of_sorted(v4),
            v6: union_of_sorted(v6),
        }
    }

    /// Whether a canary holds `ip`, or the IPv4 address it carries.
    pub fn holds(&self, ip: PublicIp) -> bool {
        let v4 = |ip: crate::domain::net::ipv4::PublicIpv4| covers(&self.v4, u32::from(ip.addr()));
        match ip {
            PublicIp::V4(ip) => v4(ip),
            PublicIp::V6(v6) => {
                covers(&self.v6, u128::from(v6.addr())) || ip.carried_ipv4().is_some_and(v4)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::Ipv6;

    fn canaries(texts: &[&str]) -> Canaries {
        let entries: Vec<ListEntry> = texts
            .iter()
            .map(|text| ListEntry::parse(text, Ipv6::On).unwrap())
            .collect();
        Canaries::new(&entries)
    }

    #[test]
    fn a_canary_holds_its_addresses_and_the_ipv6_forms_that_carry_them() {
        let set = canaries(&["45.67.89.0/24", "46.1.2.9", "2a00:1450:4001:81b::/64"]);
        let holds = |text: &str| set.holds(text.parse().unwrap());
        assert!(holds("45.67.89.77"));
        assert!(holds("46.1.2.9"));
        assert!(!holds("46.1.2.10"));
        assert!(holds("2a00:1450:4001:81b::5"));
        assert!(!holds("2a00:1450:4001:81c::5"));
        assert!(holds("64:ff9b::45.67.89.4"), "NAT64's form of a canary");
        assert!(
            holds("::ffff:0:2e01:209"),
            "the IPv4-translated form of 46.1.2.9"
        );
        assert!(!holds("64:ff9b::46.1.2.10"));
        assert!(Canaries::default().is_empty() && !set.is_empty());
    }
}
