//! The global allow list: addresses the service never acts on.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use super::range::Ipv4Range;

/// The operator's entries, kept as they are stored: one range per line, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowEntries(BTreeSet<Ipv4Range>);

impl AllowEntries {
    /// Lines that do not parse are skipped: only the admin API writes this text, and
    /// it validates every entry, so a bad line can only come from a hand edit.
    pub fn from_text(text: &str) -> Self {
        Self(text.lines().filter_map(|line| Ipv4Range::parse(line.trim())).collect())
    }

    pub fn to_text(&self) -> String {
        self.0.iter().map(|range| format!("{range}\n")).collect()
    }

    pub fn insert(&mut self, range: Ipv4Range) -> bool {
        self.0.insert(range)
    }

    pub fn remove(&mut self, range: &Ipv4Range) -> bool {
        self.0.remove(range)
    }

    /// Merges overlapping and adjacent ranges so a lookup is one binary search.
    pub fn compile(&self) -> AllowList {
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.0.len());
        for range in &self.0 {
            match merged.last_mut() {
                Some((_, last)) if range.first() <= last.saturating_add(1) => *last = (*last).max(range.last()),
                _ => merged.push((range.first(), range.last())),
            }
        }
        AllowList { merged }
    }
}

/// Sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    merged: Vec<(u32, u32)>,
}

impl AllowList {
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let addr = u32::from(addr);
        let after = self.merged.partition_point(|&(first, _)| first <= addr);
        after > 0 && addr <= self.merged[after - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> AllowList {
        AllowEntries::from_text(text).compile()
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn empty_list_contains_nothing() {
        assert!(!list("").contains(ip("1.2.3.4")));
    }

    #[test]
    fn finds_addresses_at_the_edges_of_each_range_only() {
        let allow = list("8.8.8.8\n104.16.0.0/13\n1.1.1.0/24\n");
        for inside in ["8.8.8.8", "104.16.0.0", "104.23.255.255", "1.1.1.0", "1.1.1.255"] {
            assert!(allow.contains(ip(inside)), "{inside}");
        }
        for outside in ["8.8.8.7", "8.8.8.9", "104.15.255.255", "104.24.0.0", "1.1.0.255", "1.1.2.0", "0.0.0.0", "255.255.255.255"] {
            assert!(!allow.contains(ip(outside)), "{outside}");
        }
    }

    #[test]
    fn overlapping_and_adjacent_ranges_merge() {
        let entries = AllowEntries::from_text("10.0.0.0/8\n10.1.0.0/16\n11.0.0.0/8\n");
        assert_eq!(entries.compile(), AllowList { merged: vec![(0x0a00_0000, 0x0bff_ffff)] });
        assert!(list("0.0.0.0/0\n").contains(ip("255.255.255.255")));
    }

    #[test]
    fn text_round_trips_sorted_and_skips_hand_edited_garbage() {
        let entries = AllowEntries::from_text("9.9.9.9\n\n garbage \n1.1.1.0/24\n");
        assert_eq!(entries.to_text(), "1.1.1.0/24\n9.9.9.9\n");
        assert_eq!(AllowEntries::from_text(&entries.to_text()), entries);
    }

    #[test]
    fn insert_and_remove_report_whether_they_changed_anything() {
        let mut entries = AllowEntries::default();
        let range = Ipv4Range::parse("1.1.1.0/24").unwrap();
        assert!(entries.insert(range));
        assert!(!entries.insert(range));
        assert!(entries.remove(&range));
        assert!(!entries.remove(&range));
    }
}
