//! The operator's two lists, the global challenge list and the global allow list:
//! which entries each takes, edits and replacements with their counts, and the
//! text format they are imported and exported in.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::domain::code::{serde_by_code, Coded};
use crate::domain::net::address::Ipv6;
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::merged;
use crate::domain::net::ipv6::IPV4_MAPPED;
use crate::domain::net::range::{Cidr, Ipv4Range, Ipv6Range};
use crate::domain::net::{ipv4, ipv6};

/// At most this many entries in one `POST` edit.
pub const MAX_EDIT_ENTRIES: usize = 10_000;
/// The most an import's text may be, however it was sent: the most entries a list
/// holds, 16 bytes a line, with room for comments.
pub const MAX_IMPORT_BYTES: usize = 256 * 1024 * 1024;
/// The most IPv4 entries a list holds: the isolates hold the global list's
/// snapshot, 4 bytes an address, 40 MB at this size, within an isolate's 128 MB.
/// The operator lists' object holds a chunk at a time, whatever the size (`chunk`).
pub const MAX_LIST_ENTRIES: usize = 10_000_000;
/// The most IPv6 entries a list holds besides: 16 bytes an address, 32 a range,
/// at most 32 MB in an isolate beside the IPv4 snapshot's 40.
pub const MAX_IPV6_LIST_ENTRIES: usize = 1_000_000;
/// Bytes of entries an import holds before it hands them on as one sorted run
/// (a million IPv4 entries).
pub const RUN_BYTES: usize = 8 << 20;
/// The widest IPv4 range the global list takes: anything wider is more likely a
/// typo than a listing.
pub const WIDEST_GLOBAL_PREFIX: u8 = 8;
/// The widest IPv6 range the global list takes: a RIPE NCC member's allocation,
/// the widest Spamhaus's DROPv6 lists (e.g. `2a06:5280::/29 ; SBL334219`).
pub const WIDEST_GLOBAL_IPV6_PREFIX: u8 = 29;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    Global,
    Allow,
}

impl Coded for ListKind {
    const ALL: &'static [Self] = &[Self::Global, Self::Allow];

    fn code(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Allow => "allow",
        }
    }
}

serde_by_code!(ListKind);

/// Whose an entry of a list is: the operator's own, which edits and imports
/// change, or one the holders' reports promoted to the global list, which only
/// the reports (and the operator's dismissal) take away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum EntrySource {
    #[default]
    Operator,
    Promoted,
}

impl Coded for EntrySource {
    const ALL: &'static [Self] = &[Self::Operator, Self::Promoted];

    fn code(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Promoted => "promoted",
        }
    }
}

serde_by_code!(EntrySource);

/// One entry of an operator's list, of either family; IPv4 entries sort first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListEntry {
    V4(Ipv4Range),
    V6(Ipv6Range),
}

impl fmt::Display for ListEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(range) => range.fmt(f),
            Self::V6(range) => range.fmt(f),
        }
    }
}

impl ListEntry {
    /// An address or a CIDR range without host bits, IPv6 ones too when `ipv6`
    /// is on (an IPv4-mapped one, `::ffff:a.b.c.d` with a prefix of at least 96,
    /// is the IPv4 entry it maps): what every list of the operator's takes.
    pub fn parse(text: &str, ipv6: Ipv6) -> Result<Self, String> {
        match Ipv4Range::parse(text) {
            Some(range) => Ok(Self::V4(range)),
            // Only text with a colon can be IPv6: other text is refused as IPv4 was.
            None if ipv6 == Ipv6::Off || !text.contains(':') => {
                Err("not an IPv4 address or CIDR range without host bits".to_owned())
            }
            None => Ipv6Range::parse(text)
                .map(unmapped)
                .ok_or_else(|| "not an IP address or CIDR range without host bits".to_owned()),
        }
    }
}

/// Carried as its text, and read back as either family.
impl Serialize for ListEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ListEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        match (Ipv4Range::parse(&text), Ipv6Range::parse(&text)) {
            (Some(range), _) => Ok(Self::V4(range)),
            (None, Some(range)) => Ok(Self::V6(range)),
            (None, None) => Err(serde::de::Error::custom(format!(
                "not a CIDR block: {text:?}"
            ))),
        }
    }
}

impl ListKind {
    /// One entry as the operator wrote it: an address or a CIDR range without host
    /// bits, IPv6 ones too when `ipv6` is on (an IPv4-mapped one, `::ffff:a.b.c.d`
    /// with a prefix of at least 96, is the IPv4 entry it maps). The global list
    /// takes only what a lookup could ever find: ranges no wider than /8 (IPv4) or
    /// /29 (IPv6) that are not wholly private.
    pub fn parse_entry(self, text: &str, ipv6: Ipv6) -> Result<ListEntry, String> {
        let entry = ListEntry::parse(text, ipv6)?;
        if self == Self::Global {
            let (prefix, widest, private) = match entry {
                ListEntry::V4(range) => (
                    range.prefix(),
                    WIDEST_GLOBAL_PREFIX,
                    ipv4::is_wholly_private(range),
                ),
                ListEntry::V6(range) => (
                    range.prefix(),
                    WIDEST_GLOBAL_IPV6_PREFIX,
                    ipv6::is_wholly_private(range),
                ),
            };
            if prefix < widest {
                return Err(format!("wider than /{widest}"));
            }
            if private {
                return Err("private".to_owned());
            }
        }
        Ok(entry)
    }

    /// Every entry of an edit or none: the first that does not parse refuses the
    /// whole edit, and the message names it. Answers what to add, what to remove,
    /// and which promoted entries to take off (the global list's only).
    pub fn parse_edit(self, edit: EditRequest, ipv6: Ipv6) -> Result<ParsedEdit, String> {
        let dismissed = edit.remove_promoted.as_ref().map_or(0, Vec::len);
        if edit.add.len() + edit.remove.len() + dismissed > MAX_EDIT_ENTRIES {
            return Err(format!(
                "at most {MAX_EDIT_ENTRIES} entries per request; replace a whole list with PUT"
            ));
        }
        if self != Self::Global && edit.remove_promoted.is_some() {
            return Err(format!(
                "the {} list has no promoted entries: removePromoted is the global list's",
                self.code()
            ));
        }
        let parse = |entries: Vec<String>| -> Result<EntrySet, String> {
            let mut parsed = EntrySet::default();
            for entry in &entries {
                let one = self
                    .parse_entry(entry.trim(), ipv6)
                    .map_err(|why| format!("{entry:?}: {why}"))?;
                parsed.push(one);
            }
            Ok(parsed.sorted())
        };
        Ok(ParsedEdit {
            add: parse(edit.add)?,
            remove: parse(edit.remove)?,
            remove_promoted: edit.remove_promoted.map(parse).transpose()?,
        })
    }
}

/// An IPv6 range inside `::ffff:0:0/96` as the IPv4 range it maps.
fn unmapped(range: Ipv6Range) -> ListEntry {
    let (first, last) = IPV4_MAPPED;
    let mapped = first <= range.first() && range.last() <= last;
    match mapped.then(|| Ipv4Range::from_parts(range.first() as u32, range.prefix() - 96)) {
        Some(Some(v4)) => ListEntry::V4(v4),
        _ => ListEntry::V6(range),
    }
}

/// An operator's edit of a list: `{"add": [...], "remove": [...]}`, and for the
/// global list `"removePromoted": [...]`, the promoted entries to take off.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
    /// Present when the request names it, so that only then does the answer say
    /// how many promoted entries went.
    #[serde(
        default,
        rename = "removePromoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub remove_promoted: Option<Vec<String>>,
}

/// An edit's entries, parsed: what to add and remove of the operator's own, and
/// the promoted entries to take off, when the request named any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedEdit {
    pub add: EntrySet,
    pub remove: EntrySet,
    pub remove_promoted: Option<EntrySet>,
}

/// Entries of both families, each family apart: the operator lists' object keeps each in its own
/// chunks and the isolates each in its own shards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntrySet {
    pub v4: FamilyEntries<u32>,
    pub v6: FamilyEntries<u128>,
}

impl EntrySet {
    fn push(&mut self, entry: ListEntry) {
        match entry {
            ListEntry::V4(range) => self.v4.0.push(range),
            ListEntry::V6(range) => self.v6.0.push(range),
        }
    }

    fn sorted(self) -> Self {
        Self {
            v4: FamilyEntries::new(self.v4.0),
            v6: FamilyEntries::new(self.v6.0),
        }
    }

    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the entries take in memory.
    fn bytes(&self) -> usize {
        self.v4.len() * std::mem::size_of::<Ipv4Range>()
            + self.v6.len() * std::mem::size_of::<Ipv6Range>()
    }
}

/// Entries of either family, each family's sorted and without duplicates.
impl FromIterator<ListEntry> for EntrySet {
    fn from_iter<I: IntoIterator<Item = ListEntry>>(entries: I) -> Self {
        let mut all = Self::default();
        for entry in entries {
            all.push(entry);
        }
        all.sorted()
    }
}

/// A list's entries of one family as the operator wrote them, sorted and without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyEntries<A = u32>(Vec<Cidr<A>>);

impl<A> Default for FamilyEntries<A> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// What an edit or a replacement changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub added: usize,
    pub removed: usize,
}

impl std::ops::AddAssign for Changes {
    fn add_assign(&mut self, other: Self) {
        self.added += other.added;
        self.removed += other.removed;
    }
}

impl<A: Addr> FamilyEntries<A> {
    pub fn new(mut entries: Vec<Cidr<A>>) -> Self {
        entries.sort_unstable();
        entries.dedup();
        Self(entries)
    }

    pub fn as_slice(&self) -> &[Cidr<A>] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The addresses the entries cover, as sorted disjoint intervals, read lazily.
    pub fn intervals(&self) -> impl Iterator<Item = (A, A)> + '_ {
        merged(self.0.iter().map(|range| (range.first(), range.last())))
    }

    /// Removals, then additions, in one pass over the list however long it is;
    /// counts only entries that changed.
    pub fn edit(&mut self, add: Vec<Cidr<A>>, remove: Vec<Cidr<A>>) -> Changes {
        let remove = Self::new(remove);
        let before = self.0.len();
        self.0
            .retain(|entry| remove.0.binary_search(entry).is_err());
        let removed = before - self.0.len();
        let add = Self::new(add);
        let kept = std::mem::take(&mut self.0);
        self.0 = merge(kept, add.0);
        Changes {
            added: self.0.len() - (before - removed),
            removed,
        }
    }

    /// Becomes `new`; the counts say how many entries came and went.
    pub fn replace(&mut self, new: FamilyEntries<A>) -> Changes {
        let (mut old, mut kept) = (self.0.iter().peekable(), 0);
        for entry in &new.0 {
            while old.next_if(|o| *o < entry).is_some() {}
            if old.next_if(|o| *o == entry).is_some() {
                kept += 1;
            }
        }
        let changes = Changes {
            added: new.0.len() - kept,
            removed: self.0.len() - kept,
        };
        *self = new;
        changes
    }

    /// Compact storage: each entry's first address (4 bytes IPv4, 16 IPv6), then
    /// its prefix length.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.0.len() * (A::BYTES + 1));
        for entry in &self.0 {
            entry.first().write_le(&mut bytes);
            bytes.push(entry.prefix());
        }
        bytes
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if !bytes.len().is_multiple_of(A::BYTES + 1) {
            return None;
        }
        let entries: Option<Vec<Cidr<A>>> = bytes
            .chunks_exact(A::BYTES + 1)
            .map(|entry| Cidr::from_parts(A::read_le(&entry[..A::BYTES])?, entry[A::BYTES]))
            .collect();
        Some(Self::new(entries?))
    }
}

/// Two sorted, duplicate-free lists as one.
fn merge<A: Ord>(a: Vec<A>, b: Vec<A>) -> Vec<A> {
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x == y => {
                b.next();
                a.next()
            }
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => break,
        };
        merged.extend(next);
    }
    merged
}

/// A line of an import that is not an entry, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub text: String,
    pub why: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {:?}: {}", self.line, self.text, self.why)
    }
}

/// Reads an import as it arrives, chunk by chunk: one address or CIDR range a
/// line; blank lines, `#` comments and whatever follows `;` are ignored (the
/// format of Spamhaus DROP and FireHOL netsets); CRLF line ends are accepted.
#[derive(Debug)]
pub struct Import {
    kind: ListKind,
    ipv6: Ipv6,
    entries: EntrySet,
    /// Entries of each family (IPv4, IPv6) read and handed on in runs.
    handed_on: (usize, usize),
    partial: Vec<u8>,
    line: usize,
}

/// A line longer than this cannot hold an entry and a reasonable comment.
const MAX_LINE_BYTES: usize = 4096;

/// A line over `MAX_LINE_BYTES`, named by its number and its start.
fn too_long(line: usize, raw: &[u8]) -> LineError {
    let text = String::from_utf8_lossy(&raw[..64]).into_owned();
    LineError {
        line,
        text,
        why: format!("longer than {MAX_LINE_BYTES} bytes"),
    }
}

impl Import {
    /// Reads IPv6 entries too when `ipv6` is on.
    pub fn new(kind: ListKind, ipv6: Ipv6) -> Self {
        Self {
            kind,
            ipv6,
            entries: EntrySet::default(),
            handed_on: (0, 0),
            partial: Vec::new(),
            line: 0,
        }
    }

    pub fn push(&mut self, mut chunk: &[u8]) -> Result<(), LineError> {
        while let Some(end) = memchr::memchr(b'\n', chunk) {
            let line = if self.partial.is_empty() {
                self.read_line(&chunk[..end])
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(&chunk[..end]);
                self.read_line(&whole)
            };
            line?;
            chunk = &chunk[end + 1..];
        }
        self.partial.extend_from_slice(chunk);
        // Checked here too, so that a line with no end in sight is not held whole.
        if self.partial.len() > MAX_LINE_BYTES {
            return Err(too_long(self.line + 1, &self.partial));
        }
        Ok(())
    }

    /// The entries read since the last run, sorted and without duplicates, once
    /// they take `RUN_BYTES`: an import of any size is held a run at a time.
    pub fn run(&mut self) -> Option<EntrySet> {
        if self.entries.bytes() < RUN_BYTES {
            return None;
        }
        self.handed_on.0 += self.entries.v4.len();
        self.handed_on.1 += self.entries.v6.len();
        Some(std::mem::take(&mut self.entries).sorted())
    }

    /// The last run (the whole import when it took one), sorted and without
    /// duplicates; nothing is returned when a line is bad.
    pub fn finish(mut self) -> Result<EntrySet, LineError> {
        let last = std::mem::take(&mut self.partial);
        if !last.is_empty() {
            self.read_line(&last)?;
        }
        Ok(self.entries.sorted())
    }

    fn read_line(&mut self, raw: &[u8]) -> Result<(), LineError> {
        self.line += 1;
        // Wherever the chunks of the body were cut, a line is judged by its whole length.
        if raw.len() > MAX_LINE_BYTES {
            return Err(too_long(self.line, raw));
        }
        // A file saved by some Windows editors starts with a byte order mark.
        let raw = if self.line == 1 {
            raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw)
        } else {
            raw
        };
        let text = String::from_utf8_lossy(raw);
        let entry = text.split(['#', ';']).next().unwrap_or("").trim();
        if entry.is_empty() {
            return Ok(());
        }
        let refuse = |why| LineError {
            line: self.line,
            text: text.trim_end().to_owned(),
            why,
        };
        let entry = self.kind.parse_entry(entry, self.ipv6).map_err(refuse)?;
        let full = match entry {
            ListEntry::V4(_) => (self.handed_on.0 + self.entries.v4.len() >= MAX_LIST_ENTRIES)
                .then(|| format!("a list holds at most {MAX_LIST_ENTRIES} entries")),
            ListEntry::V6(_) => (self.handed_on.1 + self.entries.v6.len() >= MAX_IPV6_LIST_ENTRIES)
                .then(|| format!("a list holds at most {MAX_IPV6_LIST_ENTRIES} IPv6 entries")),
        };
        if let Some(why) = full {
            return Err(refuse(why));
        }
        self.entries.push(entry);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Ipv4Range {
        Ipv4Range::parse(s).unwrap()
    }

    fn r6(s: &str) -> Ipv6Range {
        Ipv6Range::parse(s).unwrap()
    }

    fn v4(s: &str) -> ListEntry {
        ListEntry::V4(r(s))
    }

    fn v6(s: &str) -> ListEntry {
        ListEntry::V6(r6(s))
    }

    fn entry(kind: ListKind, text: &str) -> Result<ListEntry, String> {
        kind.parse_entry(text, Ipv6::On)
    }

    fn import_with(kind: ListKind, text: &str, ipv6: Ipv6) -> Result<EntrySet, LineError> {
        let mut import = Import::new(kind, ipv6);
        import.push(text.as_bytes())?;
        import.finish()
    }

    fn import(kind: ListKind, text: &str) -> Result<FamilyEntries, LineError> {
        import_with(kind, text, Ipv6::Off).map(|entries| entries.v4)
    }

    #[test]
    fn the_global_list_takes_public_addresses_and_ranges_up_to_a_slash_8() {
        let global = |text| entry(ListKind::Global, text);
        assert_eq!(global("198.51.99.0/24"), Ok(v4("198.51.99.0/24")));
        assert_eq!(global("8.0.0.0/8"), Ok(v4("8.0.0.0/8")));
        assert_eq!(global("8.0.0.0/7").unwrap_err(), "wider than /8");
        assert_eq!(global("10.0.0.1").unwrap_err(), "private");
        assert_eq!(global("10.1.0.0/16").unwrap_err(), "private");
        assert_eq!(
            global("192.0.0.8/29"),
            Ok(v4("192.0.0.8/29")),
            "holds two public addresses"
        );
        assert!(global("203.0.113.5/24").unwrap_err().contains("host bits"));
        assert_eq!(entry(ListKind::Allow, "10.0.0.0/8"), Ok(v4("10.0.0.0/8")));
        assert_eq!(entry(ListKind::Allow, "0.0.0.0/0"), Ok(v4("0.0.0.0/0")));
    }

    #[test]
    fn the_global_list_takes_public_ipv6_addresses_and_ranges_up_to_a_slash_29() {
        let global = |text| entry(ListKind::Global, text);
        assert_eq!(global("2a00:1450::/32"), Ok(v6("2a00:1450::/32")));
        assert_eq!(global("2a06:5280::/29"), Ok(v6("2a06:5280::/29")));
        assert_eq!(global("2A00:1450:4001::1"), Ok(v6("2a00:1450:4001::1")));
        assert_eq!(
            global("2a00::/28"),
            Err("wider than /29".to_owned()),
            "the global list refuses an IPv6 range wider than a /29"
        );
        assert_eq!(global("2001:db8::/48").unwrap_err(), "private");
        assert_eq!(global("fe80::1").unwrap_err(), "private");
        assert_eq!(
            global("2001:4:112::/48"),
            Ok(v6("2001:4:112::/48")),
            "a globally reachable block inside 2001::/23"
        );
        assert!(global("2a00:1450::1/32").unwrap_err().contains("host bits"));
        assert_eq!(
            global("::ffff:198.51.99.0/120"),
            Ok(v4("198.51.99.0/24")),
            "an IPv4-mapped range is the IPv4 range it maps"
        );
        assert_eq!(global("::ffff:8.8.8.8"), Ok(v4("8.8.8.8")));
        assert_eq!(entry(ListKind::Allow, "::/0"), Ok(v6("::/0")));
        assert_eq!(entry(ListKind::Allow, "fc00::/7"), Ok(v6("fc00::/7")));
        assert_eq!(
            ListKind::Allow.parse_entry("2a00:1450::/32", Ipv6::Off),
            Err("not an IPv4 address or CIDR range without host bits".to_owned()),
            "with IPv6 off, refused as before"
        );
        assert_eq!(
            entry(ListKind::Allow, "x:y").unwrap_err(),
            "not an IP address or CIDR range without host bits"
        );
        assert_eq!(
            entry(ListKind::Allow, "300.1.1.1").unwrap_err(),
            "not an IPv4 address or CIDR range without host bits",
            "text without a colon is refused as IPv4 was"
        );
        assert_eq!(v6("2001:db8::/32").to_string(), "2001:db8::/32");
        assert!(v4("255.255.255.255") < v6("::/0"), "IPv4 entries first");
    }

    fn edit(add: &[&str], remove: &[&str]) -> EditRequest {
        EditRequest {
            add: add.iter().map(|s| s.to_string()).collect(),
            remove: remove.iter().map(|s| s.to_string()).collect(),
            remove_promoted: None,
        }
    }

    #[test]
    fn an_edit_parses_every_entry_or_refuses_naming_the_first_bad_one() {
        let ParsedEdit {
            add,
            remove,
            remove_promoted,
        } = ListKind::Allow
            .parse_edit(
                edit(&[" 1.2.3.4 ", "2a00::1", "1.2.3.4"], &["5.6.7.0/24"]),
                Ipv6::On,
            )
            .unwrap();
        assert_eq!(add.v4.as_slice(), [r("1.2.3.4")]);
        assert_eq!(add.v6.as_slice(), [r6("2a00::1")]);
        assert_eq!(
            (remove.v4.as_slice(), remove.v6.len()),
            (&[r("5.6.7.0/24")][..], 0)
        );
        assert_eq!(remove_promoted, None);
        assert_eq!(
            ListKind::Global
                .parse_edit(edit(&["8.8.8.8"], &["10.0.0.1"]), Ipv6::Off)
                .unwrap_err(),
            "\"10.0.0.1\": private"
        );
        assert_eq!(
            ListKind::Global
                .parse_edit(edit(&["2a00::1"], &[]), Ipv6::Off)
                .unwrap_err(),
            "\"2a00::1\": not an IPv4 address or CIDR range without host bits"
        );
        let many = vec!["8.8.8.8"; MAX_EDIT_ENTRIES + 1];
        assert!(ListKind::Global
            .parse_edit(edit(&many, &[]), Ipv6::On)
            .unwrap_err()
            .contains("at most 10000 entries"));
        assert!(ListKind::Global
            .parse_edit(edit(&many[1..], &[]), Ipv6::On)
            .is_ok());
    }

    #[test]
    fn promoted_entries_to_take_off_are_the_global_lists_and_count_towards_the_bound() {
        let dismissing = |add: &[&str], promoted: &[&str]| EditRequest {
            remove_promoted: Some(promoted.iter().map(|s| s.to_string()).collect()),
            ..edit(add, &[])
        };
        let parsed = ListKind::Global
            .parse_edit(
                dismissing(&["8.8.8.8"], &["9.9.9.9", "2a00::/64"]),
                Ipv6::On,
            )
            .unwrap();
        let promoted = parsed.remove_promoted.unwrap();
        assert_eq!(
            (promoted.v4.as_slice(), promoted.v6.as_slice()),
            (&[r("9.9.9.9")][..], &[r6("2a00::/64")][..])
        );
        assert_eq!(parsed.add.v4.as_slice(), [r("8.8.8.8")]);
        assert_eq!(
            ListKind::Global
                .parse_edit(dismissing(&[], &[]), Ipv6::Off)
                .unwrap()
                .remove_promoted,
            Some(EntrySet::default()),
            "named, even empty"
        );
        assert_eq!(
            ListKind::Global
                .parse_edit(dismissing(&[], &["10.0.0.1"]), Ipv6::Off)
                .unwrap_err(),
            "\"10.0.0.1\": private"
        );
        assert!(ListKind::Allow
            .parse_edit(dismissing(&[], &[]), Ipv6::On)
            .unwrap_err()
            .contains("removePromoted"));
        let many = vec!["8.8.8.8"; MAX_EDIT_ENTRIES];
        assert!(ListKind::Global
            .parse_edit(dismissing(&many, &["9.9.9.9"]), Ipv6::On)
            .unwrap_err()
            .contains("at most 10000 entries"));
    }

    #[test]
    fn the_edit_shape_is_strict() {
        assert!(serde_json::from_str::<EditRequest>(r#"{"add":["1.2.3.4"]}"#).is_ok());
        assert!(serde_json::from_str::<EditRequest>(r#"{"ad":["1.2.3.4"]}"#).is_err());
        let named: EditRequest = serde_json::from_str(r#"{"removePromoted":["1.2.3.4"]}"#).unwrap();
        assert_eq!(named.remove_promoted, Some(vec!["1.2.3.4".to_owned()]));
        assert!(serde_json::from_str::<EditRequest>(r#"{"remove_promoted":[]}"#).is_err());
        let travelled: EditRequest =
            serde_json::from_str(&serde_json::to_string(&edit(&["1.2.3.4"], &[])).unwrap())
                .unwrap();
        assert_eq!(travelled.remove_promoted, None, "absent stays absent");
    }

    #[test]
    fn entries_collected_are_sorted_each_family_apart() {
        let entries: EntrySet = [v6("2a00::1"), v4("9.9.9.9"), v4("1.1.1.1"), v4("9.9.9.9")]
            .into_iter()
            .collect();
        assert_eq!(entries.v4.as_slice(), [r("1.1.1.1"), r("9.9.9.9")]);
        assert_eq!(entries.v6.as_slice(), [r6("2a00::1")]);
        assert_eq!(
            EntrySource::from_code("promoted"),
            Some(EntrySource::Promoted)
        );
        assert_eq!(EntrySource::default().code(), "operator");
    }

    #[test]
    fn an_entry_travels_as_its_text() {
        for entry in [v4("8.8.8.0/24"), v6("2a00:1450::/32"), v6("::/0")] {
            let json = serde_json::to_string(&entry).unwrap();
            assert_eq!(json, format!("\"{entry}\""));
            assert_eq!(serde_json::from_str::<ListEntry>(&json).unwrap(), entry);
        }
        assert!(serde_json::from_str::<ListEntry>("\"2a00::1/200\"").is_err());
    }

    #[test]
    fn edits_remove_then_add_and_count_only_changes() {
        let mut list = FamilyEntries::new(vec![r("1.1.1.1"), r("2.2.2.0/24")]);
        let changes = list.edit(
            vec![r("3.3.3.3"), r("1.1.1.1"), r("3.3.3.3")],
            vec![r("2.2.2.0/24"), r("9.9.9.9")],
        );
        assert_eq!(
            changes,
            Changes {
                added: 1,
                removed: 1
            }
        );
        assert_eq!(list.as_slice(), [r("1.1.1.1"), r("3.3.3.3")]);
        assert_eq!(
            list.edit(vec![r("4.4.4.4")], vec![r("4.4.4.4")]),
            Changes {
                added: 1,
                removed: 0
            },
            "removal runs first"
        );
    }

    #[test]
    fn a_replacement_counts_what_came_and_went() {
        let mut list = FamilyEntries::new(vec![r("1.1.1.1"), r("2.2.2.2"), r("3.3.3.0/24")]);
        let changes = list.replace(FamilyEntries::new(vec![
            r("2.2.2.2"),
            r("3.3.3.0/24"),
            r("4.4.4.4"),
            r("5.5.5.5"),
        ]));
        assert_eq!(
            changes,
            Changes {
                added: 2,
                removed: 1
            }
        );
        assert_eq!(list.len(), 4);
    }

    #[test]
    fn storage_encoding_round_trips() {
        let list = FamilyEntries::new(vec![
            r("0.0.0.0/8"),
            r("255.255.255.255"),
            r("1.2.3.4"),
            r("198.51.99.0/24"),
        ]);
        assert_eq!(
            list.encode().len(),
            4 * 5,
            "five bytes an IPv4 entry, as before"
        );
        assert_eq!(FamilyEntries::decode(&list.encode()), Some(list));
        assert_eq!(FamilyEntries::<u32>::decode(&[1, 2, 3]), None);
        assert_eq!(
            FamilyEntries::<u32>::decode(&[1, 2, 3, 4, 24]),
            None,
            "host bits set"
        );
        let list6 = FamilyEntries::new(vec![r6("2a00::/32"), r6("::/0"), r6("ffff::1")]);
        assert_eq!(list6.encode().len(), 3 * 17);
        assert_eq!(FamilyEntries::decode(&list6.encode()), Some(list6));
    }

    #[test]
    fn the_text_format_skips_comments_blank_lines_and_text_after_semicolons() {
        let text = "; Spamhaus DROP List\r\n1.10.16.0/20 ; SBL256894\r\n\r\n# FireHOL\n  8.8.8.8  \n9.9.9.9 # inline\n8.8.8.8\n";
        let entries = import(ListKind::Global, text).unwrap();
        assert_eq!(
            entries.as_slice(),
            [r("1.10.16.0/20"), r("8.8.8.8"), r("9.9.9.9")]
        );
        assert_eq!(
            import(ListKind::Global, "").unwrap(),
            FamilyEntries::default()
        );
        assert_eq!(
            import(ListKind::Global, "8.8.8.8").unwrap().len(),
            1,
            "no newline at the end"
        );
        assert_eq!(
            import(ListKind::Global, "\u{feff}8.8.8.8\r\n")
                .unwrap()
                .len(),
            1,
            "a byte order mark first"
        );
    }

    #[test]
    fn one_file_holds_both_families_and_spamhaus_dropv6_reads_as_it_is() {
        // Lines as Spamhaus writes DROPv6 (comments after `;`), and one of DROP, in one file.
        let text = "; Spamhaus DROPv6 List 2025/11/20 - (c) 2025 The Spamhaus Project SLU\n\
                    ; https://www.spamhaus.org/drop/dropv6.txt\n\
                    ; Last-Modified: Thu, 20 Nov 2025 12:41:25 GMT\n\
                    2001:678:738::/48 ; SBL636050\n\
                    2a06:5280::/29 ; SBL334219\n\
                    2a14:7581:feb::/48 ; SBL676547\n\
                    1.10.16.0/20 ; SBL256894\n";
        let entries = import_with(ListKind::Global, text, Ipv6::On).unwrap();
        assert_eq!(entries.v4.as_slice(), [r("1.10.16.0/20")]);
        assert_eq!(
            entries.v6.as_slice(),
            [
                r6("2001:678:738::/48"),
                r6("2a06:5280::/29"),
                r6("2a14:7581:feb::/48")
            ]
        );
        let off = import_with(ListKind::Global, text, Ipv6::Off).unwrap_err();
        assert_eq!(
            (off.line, off.why.as_str()),
            (4, "not an IPv4 address or CIDR range without host bits"),
            "with IPv6 off, the first IPv6 line is refused as before"
        );
        let wide = import_with(ListKind::Global, "2a00::/16\n", Ipv6::On).unwrap_err();
        assert_eq!(wide.why, "wider than /29");
    }

    #[test]
    fn an_import_hands_on_runs_by_their_size_in_memory() {
        let mut import = Import::new(ListKind::Allow, Ipv6::On);
        let lines: String = (0..RUN_BYTES / 32)
            .map(|n| format!("2a00::{:x}:{:x}\n", n >> 16, n & 0xffff))
            .collect();
        import.push(lines.as_bytes()).unwrap();
        let run = import
            .run()
            .expect("a run of IPv6 entries, a quarter as many as IPv4's");
        assert_eq!((run.v4.len(), run.v6.len()), (0, RUN_BYTES / 32));
        assert!(import.run().is_none());
    }

    #[test]
    fn a_bad_line_is_named_by_number_and_text() {
        let error = import(
            ListKind::Global,
            "8.8.8.8\n# fine\r\n10.0.0.1 ; office\r\n9.9.9.9\n",
        )
        .unwrap_err();
        assert_eq!(
            error,
            LineError {
                line: 3,
                text: "10.0.0.1 ; office".into(),
                why: "private".into()
            }
        );
        assert_eq!(error.to_string(), "line 3: \"10.0.0.1 ; office\": private");
        assert_eq!(
            import(ListKind::Allow, "1.2.3.4\nnonsense")
                .unwrap_err()
                .line,
            2
        );
        assert!(import(ListKind::Allow, &"1".repeat(5000))
            .unwrap_err()
            .why
            .contains("longer than"));
        let long_comment = format!("8.8.8.8\n# {}\n9.9.9.9\n", "x".repeat(5000));
        assert_eq!(
            import(ListKind::Allow, &long_comment).unwrap_err().line,
            2,
            "a long line is refused even when it ends within one chunk"
        );
    }

    #[test]
    fn lines_split_across_chunks_are_read_whole() {
        let text = "1.10.16.0/20 ; SBL\n8.8.8.8\r\n2a00:1450::/32\n9.9.9.9\n";
        for split in 0..text.len() {
            let mut import = Import::new(ListKind::Global, Ipv6::On);
            import.push(&text.as_bytes()[..split]).unwrap();
            import.push(&text.as_bytes()[split..]).unwrap();
            assert_eq!(import.finish().unwrap().len(), 4, "split at {split}");
        }
    }
}
