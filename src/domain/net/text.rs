//! The strict text forms of an address, IPv4's dotted decimal and RFC 4291's
//! colon-hexadecimal: what every address, range and list entry is read from.
//! They know nothing of which addresses are public (`ipv4`, `ipv6`).

use std::net::{Ipv4Addr, Ipv6Addr};

/// Four decimal octets 0-255 separated by dots, no leading zeros, no sign,
/// nothing else. Stricter than some libc parsers (no octal, hex or short forms).
pub fn parse_dotted(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        *octet = parse_octet(parts.next()?)?;
    }
    match parts.next() {
        None => Some(Ipv4Addr::from(octets)),
        Some(_) => None,
    }
}

fn parse_octet(part: &str) -> Option<u8> {
    let bytes = part.as_bytes();
    let well_formed = matches!(bytes.len(), 1..=3)
        && bytes.iter().all(u8::is_ascii_digit)
        && !(bytes.len() > 1 && bytes[0] == b'0');
    if well_formed {
        part.parse().ok()
    } else {
        None
    }
}

/// The text forms of RFC 4291: eight groups of one to four hexadecimal digits,
/// one `::` standing for one or more zero groups, and the last two groups
/// optionally written as a dotted IPv4 address (held to the same strict rules
/// as IPv4 input). No zone index, no brackets, no prefix length.
pub fn parse_colon_hex(s: &str) -> Option<Ipv6Addr> {
    let mut groups = [0u16; 8];
    let (head, tail) = match s.split_once("::") {
        None => (s, None),
        Some((head, tail)) => (head, Some(tail)),
    };
    let Some(tail) = tail else {
        return (read_groups(head, &mut groups)? == 8).then(|| Ipv6Addr::from(groups));
    };
    if tail.contains("::") {
        return None;
    }
    let mut back = [0u16; 8];
    let head_count = if head.is_empty() {
        0
    } else {
        read_groups_without_ipv4(head, &mut groups)?
    };
    let tail_count = if tail.is_empty() {
        0
    } else {
        read_groups(tail, &mut back)?
    };
    // `::` stands for at least one group.
    if head_count + tail_count > 7 {
        return None;
    }
    groups[8 - tail_count..].copy_from_slice(&back[..tail_count]);
    Some(Ipv6Addr::from(groups))
}

/// Colon-separated groups, the last of which may be a dotted IPv4 address
/// counting as two; how many groups were written, at most eight.
fn read_groups(text: &str, groups: &mut [u16; 8]) -> Option<usize> {
    let (front, last) = match text.rsplit_once(':') {
        Some((front, last)) => (Some(front), last),
        None => (None, text),
    };
    let Some(v4) = last.contains('.').then(|| parse_dotted(last)) else {
        return read_groups_without_ipv4(text, groups);
    };
    let [a, b, c, d] = v4?.octets();
    let count = match front {
        None => 0,
        Some(front) => read_groups_without_ipv4(front, groups)?,
    };
    if count > 6 {
        return None;
    }
    groups[count] = u16::from_be_bytes([a, b]);
    groups[count + 1] = u16::from_be_bytes([c, d]);
    Some(count + 2)
}

fn read_groups_without_ipv4(text: &str, groups: &mut [u16; 8]) -> Option<usize> {
    let mut count = 0;
    for part in text.split(':') {
        let slot = groups.get_mut(count)?;
        *slot = hex_group(part)?;
        count += 1;
    }
    Some(count)
}

fn hex_group(part: &str) -> Option<u16> {
    let well_formed = matches!(part.len(), 1..=4) && part.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed
        .then(|| u16::from_str_radix(part, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_rfc_4291_form() {
        for (text, groups) in [
            (
                "2001:db8:0:0:8:800:200c:417a",
                [0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a],
            ),
            (
                "2001:DB8::8:800:200C:417A",
                [0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a],
            ),
            ("ff01::101", [0xff01, 0, 0, 0, 0, 0, 0, 0x101]),
            ("::1", [0, 0, 0, 0, 0, 0, 0, 1]),
            ("::", [0; 8]),
            ("1::", [1, 0, 0, 0, 0, 0, 0, 0]),
            (
                "0001:0002:0003:0004:0005:0006:0007:0008",
                [1, 2, 3, 4, 5, 6, 7, 8],
            ),
            ("1:2:3:4:5:6:7::", [1, 2, 3, 4, 5, 6, 7, 0]),
            ("::2:3:4:5:6:7:8", [0, 2, 3, 4, 5, 6, 7, 8]),
            ("::13.1.68.3", [0, 0, 0, 0, 0, 0, 0x0d01, 0x4403]),
            (
                "::ffff:129.144.52.38",
                [0, 0, 0, 0, 0, 0xffff, 0x8190, 0x3426],
            ),
            ("0:0:0:0:0:0:13.1.68.3", [0, 0, 0, 0, 0, 0, 0x0d01, 0x4403]),
            (
                "64:ff9b::192.0.2.33",
                [0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0221],
            ),
        ] {
            assert_eq!(
                parse_colon_hex(text),
                Some(Ipv6Addr::from(groups)),
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_everything_else() {
        for text in [
            "",
            ":",
            ":::",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8::",
            "::1:2:3:4:5:6:7:8",
            "1::2::3",
            ":1::2",
            "1::2:",
            "12345::",
            "g::1",
            "fe80::1%eth0",
            "[2001:db8::1]",
            "2001:db8::/32",
            "2001:db8::1/128",
            "::1.2.3",
            "::1.2.3.04",
            "::256.1.1.1",
            "1.2.3.4::",
            "::1.2.3.4:5",
            "1:2:3:4:5:6:7:1.2.3.4",
            " ::1",
            "::１",
            "+1::",
            "0x1::",
        ] {
            assert_eq!(parse_colon_hex(text), None, "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn dotted_parser_agrees_with_std_on_dotted_looking_text(s in "[0-9.]{0,18}") {
            proptest::prop_assert_eq!(parse_dotted(&s), s.parse::<Ipv4Addr>().ok());
        }

        #[test]
        fn dotted_parser_agrees_with_std_on_any_text(s in "\\PC{0,24}") {
            proptest::prop_assert_eq!(parse_dotted(&s), s.parse::<Ipv4Addr>().ok());
        }

        #[test]
        fn every_address_round_trips_through_its_dotted_form(n: u32) {
            let addr = Ipv4Addr::from(n);
            proptest::prop_assert_eq!(parse_dotted(&addr.to_string()), Some(addr));
        }

        #[test]
        fn colon_hex_parser_agrees_with_std_on_colon_hex_looking_text(s in "[0-9a-fA-F:.]{0,42}") {
            proptest::prop_assert_eq!(parse_colon_hex(&s), s.parse::<Ipv6Addr>().ok());
        }

        #[test]
        fn colon_hex_parser_agrees_with_std_on_short_groups(s in "(([0-9a-f]{1,2}|[0-9]{1,3}|)[:.]){0,10}[0-9a-f]{0,2}") {
            proptest::prop_assert_eq!(parse_colon_hex(&s), s.parse::<Ipv6Addr>().ok());
        }

        #[test]
        fn colon_hex_parser_agrees_with_std_on_any_text(s in "\\PC{0,40}") {
            proptest::prop_assert_eq!(parse_colon_hex(&s), s.parse::<Ipv6Addr>().ok());
        }

        #[test]
        fn every_address_round_trips_through_its_canonical_form(n: u128) {
            let addr = Ipv6Addr::from(n);
            proptest::prop_assert_eq!(parse_colon_hex(&addr.to_string()), Some(addr));
        }
    }
}
