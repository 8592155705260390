//! Paging through a holder's list and history: a page size, an opaque cursor
//! that continues after the last row shown, and the list's address prefix filter.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::domain::net::address::Key;

pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;

/// An opaque paging cursor: what a client gets back and hands in for the next page.
pub trait PageCursor: Sized {
    fn encode(&self) -> String;
    fn decode(text: &str) -> Option<Self>;
}

/// After this entry of a list sorted newest first: its time of adding, then its
/// key as the rows keep it (an address's sixteen bytes, IPv4 mapped into IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryCursor {
    pub added_at: u64,
    pub ip: Key,
}

/// After this entry of the holder's allow list, sorted newest first: its time
/// of adding, then its range as the rows keep it (first address, prefix length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowCursor {
    pub added_at: u64,
    pub first: u128,
    pub prefix: u8,
}

impl PageCursor for AllowCursor {
    fn encode(&self) -> String {
        format!("{:x}.{:032x}.{}", self.added_at, self.first, self.prefix)
    }

    fn decode(text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let (added_at, first, prefix) = (parts.next()?, parts.next()?, parts.next()?);
        let first = (first.len() == 32)
            .then(|| u128::from_str_radix(first, 16).ok())
            .flatten()?;
        let prefix = prefix.parse().ok().filter(|&p| p <= 128)?;
        parts.next().is_none().then_some(())?;
        Some(Self {
            added_at: hex(added_at)?,
            first,
            prefix,
        })
    }
}

/// After this history row; rows are numbered in the order they happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryCursor {
    pub id: u64,
}

fn hex(text: &str) -> Option<u64> {
    (!text.is_empty() && text.len() <= 16)
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

impl PageCursor for EntryCursor {
    /// An IPv4 address as its 32-bit value, as cursors always read; any other
    /// as 32 hexadecimal digits, so the two never read alike, and `/64` after a /64.
    fn encode(&self) -> String {
        let octets = self.ip.octets();
        let net = if self.ip.is_net64() { "/64" } else { "" };
        match Ipv6Addr::from(octets)
            .to_ipv4_mapped()
            .filter(|_| net.is_empty())
        {
            Some(v4) => format!("{:x}.{:x}", self.added_at, u32::from(v4)),
            None => format!(
                "{:x}.{:032x}{net}",
                self.added_at,
                u128::from_be_bytes(octets)
            ),
        }
    }

    fn decode(text: &str) -> Option<Self> {
        let (added_at, ip) = text.split_once('.')?;
        let (ip, net) = match ip.strip_suffix("/64") {
            Some(ip) => (ip, true),
            None => (ip, false),
        };
        let octets = if ip.len() == 32 && ip.bytes().all(|b| b.is_ascii_hexdigit()) {
            u128::from_str_radix(ip, 16).ok()?.to_be_bytes()
        } else if !net {
            let v4 = u32::try_from(hex(ip)?).ok()?;
            Ipv4Addr::from(v4).to_ipv6_mapped().octets()
        } else {
            return None;
        };
        let mut bytes = octets.to_vec();
        if net {
            bytes.push(64);
        }
        Some(Self {
            added_at: hex(added_at)?,
            ip: Key::from_bytes(&bytes)?,
        })
    }
}

impl PageCursor for HistoryCursor {
    fn encode(&self) -> String {
        format!("h{:x}", self.id)
    }

    fn decode(text: &str) -> Option<Self> {
        Some(Self {
            id: hex(text.strip_prefix('h')?)?,
        })
    }
}

/// A validated page request, sent to the holder's object as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageQuery<C> {
    pub after: Option<C>,
    pub limit: u32,
    /// Only IPv4 addresses whose dotted form starts with this text (list only;
    /// no IPv6 entry matches it).
    pub prefix: Option<String>,
}

impl<C: PageCursor> PageQuery<C> {
    pub fn parse(
        cursor: Option<&str>,
        limit: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<Self, String> {
        let after = match cursor.map(str::trim).filter(|c| !c.is_empty()) {
            Some(text) => Some(C::decode(text).ok_or("cursor is not one this service gave out")?),
            None => None,
        };
        let limit = page_size(limit)?;
        let prefix = prefix
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        if prefix
            .as_ref()
            .is_some_and(|p| p.len() > 15 || !p.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        {
            return Err("prefix must be the start of a dotted address, such as 203.0.".to_owned());
        }
        Ok(Self {
            after,
            limit,
            prefix,
        })
    }
}

/// A page size a client asked for: 1 to 1 000, 100 when not given.
pub fn page_size(limit: Option<&str>) -> Result<u32, String> {
    match limit.map(str::trim).filter(|l| !l.is_empty()) {
        Some(text) => text
            .parse()
            .ok()
            .filter(|l| (1..=MAX_PAGE).contains(l))
            .ok_or(format!("limit must be 1 to {MAX_PAGE}")),
        None => Ok(DEFAULT_PAGE),
    }
}

/// The addresses whose dotted text starts with `prefix`, as at most three
/// inclusive ranges in ascending order, so that the list's filter is an index
/// range rather than text built for every row. The whole octets of the prefix
/// are fixed; its last part, possibly empty, is the start of the next octet's
/// text (`11` is 11, 110 to 119; `2` is 2, 20 to 29, 200 to 255).
pub fn prefix_ranges(prefix: &str) -> Vec<(u32, u32)> {
    let parts: Vec<&str> = prefix.split('.').collect();
    let Some((partial, whole)) = parts.split_last() else {
        return Vec::new();
    };
    if whole.len() > 3 {
        return Vec::new();
    }
    let mut base = 0u32;
    for part in whole {
        match octet(part) {
            Some(value) => base = (base << 8) | value,
            None => return Vec::new(),
        }
    }
    // The partial octet's place, and the host bits below it, which may be anything.
    let below = 8 * (3 - whole.len() as u32);
    let fixed = u64::from(base) << (below + 8);
    let host = (1u64 << below) - 1;
    octets_starting(partial)
        .into_iter()
        .map(|(low, high)| {
            let first = fixed | (u64::from(low) << below);
            let last = fixed | (u64::from(high) << below) | host;
            (first as u32, last as u32)
        })
        .collect()
}

/// An octet as dotted text writes it: 0 to 255, no sign, no leading zero.
fn octet(text: &str) -> Option<u32> {
    let valid = !text.is_empty()
        && text.len() <= 3
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    valid
        .then(|| text.parse().ok())
        .flatten()
        .filter(|&v| v <= 255)
}

/// The octet values whose text starts with `start`, as ascending ranges.
fn octets_starting(start: &str) -> Vec<(u32, u32)> {
    if start.is_empty() {
        return vec![(0, 255)];
    }
    if start.len() > 3 || !start.bytes().all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    if start.starts_with('0') {
        return if start == "0" {
            vec![(0, 0)]
        } else {
            Vec::new()
        };
    }
    let value: u32 = start.parse().expect("one to three digits");
    [
        (value, value),
        (value * 10, value * 10 + 9),
        (value * 100, value * 100 + 99),
    ]
    .into_iter()
    .take(4 - start.len())
    .filter(|&(low, _)| low <= 255)
    .map(|(low, high)| (low, high.min(255)))
    .collect()
}

/// `n` things, in the singular for one.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One page of rows and the cursor of the next page, if there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T, C> {
    pub total: u64,
    pub rows: Vec<T>,
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// The page of `rows`, which were fetched with one row more than `limit` to
    /// learn whether another page follows; `cursor_of` names the last row shown.
    pub fn of(mut rows: Vec<T>, limit: u32, total: u64, cursor_of: impl Fn(&T) -> C) -> Self {
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next = if more {
            rows.last().map(cursor_of)
        } else {
            None
        };
        Self { total, rows, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Query = PageQuery<EntryCursor>;

    #[test]
    fn an_allow_list_cursor_round_trips_and_refuses_anything_else() {
        let cursor = AllowCursor {
            added_at: 0x6931_2c00,
            first: 0xffff_2d43_5900,
            prefix: 120,
        };
        assert_eq!(AllowCursor::decode(&cursor.encode()), Some(cursor));
        for bad in [
            "",
            "1.2",
            "1.00.3",
            "1.0000000000000000000000000000000.129",
            "x.0.1",
        ] {
            assert_eq!(AllowCursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let entry = EntryCursor {
            added_at: 1_795_262_400,
            ip: Key::from_bytes(&Ipv4Addr::new(8, 8, 8, 8).to_ipv6_mapped().octets()).unwrap(),
        };
        assert_eq!(entry.encode(), "6b0187c0.8080808", "as cursors always read");
        assert_eq!(EntryCursor::decode(&entry.encode()), Some(entry));
        for ip in [
            "::2",
            "2a00:1450:4001:80b::200e",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "2a00:1450:4001:80b::/64",
            "::ffff:0:0/64",
        ] {
            let octets = ip
                .trim_end_matches("/64")
                .parse::<Ipv6Addr>()
                .unwrap()
                .octets();
            let mut bytes = octets.to_vec();
            if ip.ends_with("/64") {
                bytes.push(64);
            }
            let v6 = EntryCursor {
                added_at: 5,
                ip: Key::from_bytes(&bytes).unwrap(),
            };
            assert_eq!(
                EntryCursor::decode(&v6.encode()),
                Some(v6),
                "an IPv6 entry's cursor reads back as that entry: {ip}"
            );
        }
        assert!(
            EntryCursor::decode("5.8080808/64").is_none(),
            "an IPv4 key is never a /64"
        );
        let row = HistoryCursor { id: 41 };
        assert_eq!(HistoryCursor::decode(&row.encode()), Some(row));
        for bad in [
            "",
            ".",
            "1.",
            ".1",
            "x.1",
            "1.2.3",
            "11111111111111111.1",
            "1.100000000",
            "1.0000000000000000000000000000000g",
            "1.000000000000000000000000000000001",
            "h29",
        ] {
            assert_eq!(EntryCursor::decode(bad), None, "{bad:?}");
        }
        for bad in ["", "h", "29", "hx", "1.2", "h11111111111111111"] {
            assert_eq!(HistoryCursor::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_page_keeps_limit_rows_and_names_the_last_when_more_follow() {
        let page = Page::of(vec![5, 4, 3], 2, 9, |n| HistoryCursor { id: *n });
        assert_eq!(
            (page.rows, page.next, page.total),
            (vec![5, 4], Some(HistoryCursor { id: 4 }), 9)
        );
        let last = Page::of(vec![2, 1], 2, 9, |n| HistoryCursor { id: *n });
        assert_eq!(last.next, None);
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "address", "addresses"), "1 address");
        assert_eq!(counted(0, "address", "addresses"), "0 addresses");
        assert_eq!(counted(2, "change", "changes"), "2 changes");
    }

    #[test]
    fn page_size_defaults_to_100_and_is_at_most_1000() {
        assert_eq!(Query::parse(None, None, None).unwrap().limit, 100);
        assert_eq!(Query::parse(None, Some("1000"), None).unwrap().limit, 1000);
        for bad in ["0", "1001", "-1", "ten"] {
            assert!(
                Query::parse(None, Some(bad), None)
                    .unwrap_err()
                    .contains("limit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn prefix_is_digits_and_dots() {
        assert_eq!(
            Query::parse(None, None, Some("203.0."))
                .unwrap()
                .prefix
                .as_deref(),
            Some("203.0.")
        );
        assert_eq!(Query::parse(None, None, Some("")).unwrap().prefix, None);
        for bad in ["203.0.%", "a", "1.2.3.4.5.6.7.8.9"] {
            assert!(Query::parse(None, None, Some(bad)).is_err(), "{bad}");
        }
    }

    fn dotted(addr: u32) -> String {
        std::net::Ipv4Addr::from(addr).to_string()
    }

    #[test]
    fn a_prefix_is_the_ranges_of_the_addresses_whose_text_starts_with_it() {
        let ranges = |prefix: &str| {
            prefix_ranges(prefix)
                .into_iter()
                .map(|(a, b)| format!("{}-{}", dotted(a), dotted(b)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ranges("203.0.11"),
            ["203.0.11.0-203.0.11.255", "203.0.110.0-203.0.119.255"]
        );
        assert_eq!(ranges("203.0.114."), ["203.0.114.0-203.0.114.255"]);
        assert_eq!(
            ranges("2"),
            [
                "2.0.0.0-2.255.255.255",
                "20.0.0.0-29.255.255.255",
                "200.0.0.0-255.255.255.255"
            ]
        );
        assert_eq!(ranges(""), ["0.0.0.0-255.255.255.255"]);
        assert_eq!(ranges("0"), ["0.0.0.0-0.255.255.255"]);
        assert_eq!(
            ranges("1.2.3.4"),
            ["1.2.3.4-1.2.3.4", "1.2.3.40-1.2.3.49"],
            "1.2.3.45 starts with 1.2.3.4 too"
        );
        assert_eq!(
            ranges("1.2.3.25"),
            ["1.2.3.25-1.2.3.25", "1.2.3.250-1.2.3.255"]
        );
        for nothing in ["01", "256", "1.2.3.4.", "1..2", "1.2.3.4.5", "9999"] {
            assert_eq!(ranges(nothing), Vec::<String>::new(), "{nothing:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn prefix_ranges_match_exactly_the_addresses_whose_text_starts_with_the_prefix(
            prefix in "[0-9.]{0,8}",
            addrs in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..64),
        ) {
            let ranges = prefix_ranges(&prefix);
            proptest::prop_assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "ascending and disjoint");
            // Addresses at and around every range's edges, and addresses that share the prefix.
            let edges = ranges.iter().flat_map(|&(a, b)| [a, b, a.wrapping_sub(1), b.wrapping_add(1)]);
            let similar = addrs.iter().map(|&a| {
                let text = format!("{prefix}{}", dotted(a));
                text.parse::<std::net::Ipv4Addr>().map_or(a, u32::from)
            });
            for addr in addrs.iter().copied().chain(edges).chain(similar) {
                let inside = ranges.iter().any(|&(a, b)| a <= addr && addr <= b);
                proptest::prop_assert_eq!(inside, dotted(addr).starts_with(&prefix), "{}", dotted(addr));
            }
        }
    }

    #[test]
    fn unknown_cursors_are_refused() {
        assert!(Query::parse(Some("not-a-cursor"), None, None)
            .unwrap_err()
            .contains("cursor"));
        let cursor = EntryCursor {
            added_at: 5,
            ip: Key::from_bytes(&[6; 16]).unwrap(),
        };
        assert_eq!(
            Query::parse(Some(&cursor.encode()), None, None)
                .unwrap()
                .after,
            Some(cursor)
        );
        assert!(
            PageQuery::<HistoryCursor>::parse(Some(&cursor.encode()), None, None).is_err(),
            "a list's cursor is not the history's"
        );
    }
}
