//! The operator's two lists, the global challenge list and the global allow list:
//! which entries each takes, edits and replacements with their counts, and the
//! text format they are imported and exported in.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::code::{serde_by_code, Coded};
use super::intervals::merged;
use super::ipv4::is_wholly_private;
use super::range::Ipv4Range;

/// At most this many entries in one `POST` edit.
pub const MAX_EDIT_ENTRIES: usize = 10_000;
/// The most an import's text may be, however it was sent: the most entries a list
/// holds, 16 bytes a line, with room for comments.
pub const MAX_IMPORT_BYTES: usize = 256 * 1024 * 1024;
/// Bytes an entry takes in storage: its first address and its prefix length.
pub const ENTRY_BYTES: usize = 5;
/// The most entries a list holds: the isolates hold the global list's snapshot, 4
/// bytes an address, 40 MB at this size, within an isolate's 128 MB. The writer
/// holds a chunk at a time, whatever the size (`chunk`).
pub const MAX_LIST_ENTRIES: usize = 10_000_000;
/// Entries an import holds before it hands them on as one sorted run (8 MB).
pub const RUN_ENTRIES: usize = 1 << 20;
/// The widest range the global list takes: anything wider is more likely a typo than a listing.
pub const WIDEST_GLOBAL_PREFIX: u8 = 8;

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

impl ListKind {
    /// One entry as the operator wrote it: an address or a CIDR range without host
    /// bits. The global list takes only what a lookup could ever find: public
    /// addresses, and ranges no wider than /8 that are not wholly private.
    pub fn parse_entry(self, text: &str) -> Result<Ipv4Range, String> {
        let range = Ipv4Range::parse(text)
            .ok_or_else(|| "not an IPv4 address or CIDR range without host bits".to_owned())?;
        if self == Self::Global {
            if range.prefix() < WIDEST_GLOBAL_PREFIX {
                return Err(format!("wider than /{WIDEST_GLOBAL_PREFIX}"));
            }
            if is_wholly_private(range) {
                return Err("private".to_owned());
            }
        }
        Ok(range)
    }

    /// Every entry of an edit or none: the first that does not parse refuses the
    /// whole edit, and the message names it.
    pub fn parse_edit(self, edit: EditRequest) -> Result<(Vec<Ipv4Range>, Vec<Ipv4Range>), String> {
        if edit.add.len() + edit.remove.len() > MAX_EDIT_ENTRIES {
            return Err(format!(
                "at most {MAX_EDIT_ENTRIES} entries per request; replace a whole list with PUT"
            ));
        }
        let parse = |entries: Vec<String>| -> Result<Vec<Ipv4Range>, String> {
            entries
                .iter()
                .map(|entry| {
                    self.parse_entry(entry.trim())
                        .map_err(|why| format!("{entry:?}: {why}"))
                })
                .collect()
        };
        Ok((parse(edit.add)?, parse(edit.remove)?))
    }
}

/// An operator's edit of a list: `{"add": [...], "remove": [...]}`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
}

/// A list's entries as the operator wrote them, sorted and without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListEntries(Vec<Ipv4Range>);

/// What an edit or a replacement changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub added: usize,
    pub removed: usize,
}

impl ListEntries {
    pub fn new(mut entries: Vec<Ipv4Range>) -> Self {
        entries.sort_unstable();
        entries.dedup();
        Self(entries)
    }

    pub fn as_slice(&self) -> &[Ipv4Range] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The addresses the entries cover, as sorted disjoint intervals, read lazily.
    pub fn intervals(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        merged(self.0.iter().map(|range| (range.first(), range.last())))
    }

    /// Removals, then additions, in one pass over the list however long it is;
    /// counts only entries that changed.
    pub fn edit(&mut self, add: Vec<Ipv4Range>, remove: Vec<Ipv4Range>) -> Changes {
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
    pub fn replace(&mut self, new: ListEntries) -> Changes {
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

    /// The export's first line: a `#` comment with the version and the count.
    pub fn header(&self, kind: ListKind, version: u64) -> String {
        format!(
            "# {} list, version {version}, {} entries\n",
            kind.code(),
            self.0.len()
        )
    }

    /// Up to `count` entries from the `from`th on, one a line, as the import reads them.
    pub fn lines(&self, from: usize, count: usize) -> String {
        let mut text = String::new();
        for entry in self.0.iter().skip(from).take(count) {
            text.push_str(&entry.to_string());
            text.push('\n');
        }
        text
    }

    /// Compact storage: `ENTRY_BYTES` an entry (first address, prefix length).
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.0.len() * ENTRY_BYTES);
        for entry in &self.0 {
            bytes.extend_from_slice(&entry.first().to_le_bytes());
            bytes.push(entry.prefix());
        }
        bytes
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let entries: Option<Vec<Ipv4Range>> = bytes
            .chunks(ENTRY_BYTES)
            .map(|chunk| {
                let first = u32::from_le_bytes(chunk.get(..4)?.try_into().ok()?);
                Ipv4Range::from_parts(first, *chunk.get(4)?)
            })
            .collect();
        Some(Self::new(entries?))
    }
}

/// Two sorted, duplicate-free lists as one.
fn merge(a: Vec<Ipv4Range>, b: Vec<Ipv4Range>) -> Vec<Ipv4Range> {
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
    entries: Vec<Ipv4Range>,
    /// Entries read and handed on in runs.
    handed_on: usize,
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
    pub fn new(kind: ListKind) -> Self {
        Self {
            kind,
            entries: Vec::new(),
            handed_on: 0,
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
    /// there are `RUN_ENTRIES` of them: an import of any size is held a run at a time.
    pub fn run(&mut self) -> Option<ListEntries> {
        if self.entries.len() < RUN_ENTRIES {
            return None;
        }
        self.handed_on += self.entries.len();
        Some(ListEntries::new(std::mem::take(&mut self.entries)))
    }

    /// The last run (the whole import when it took one), sorted and without
    /// duplicates; nothing is returned when a line is bad.
    pub fn finish(mut self) -> Result<ListEntries, LineError> {
        let last = std::mem::take(&mut self.partial);
        if !last.is_empty() {
            self.read_line(&last)?;
        }
        Ok(ListEntries::new(self.entries))
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
        if self.handed_on + self.entries.len() >= MAX_LIST_ENTRIES {
            return Err(refuse(format!(
                "a list holds at most {MAX_LIST_ENTRIES} entries"
            )));
        }
        self.entries
            .push(self.kind.parse_entry(entry).map_err(refuse)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Ipv4Range {
        Ipv4Range::parse(s).unwrap()
    }

    fn import(kind: ListKind, text: &str) -> Result<ListEntries, LineError> {
        let mut import = Import::new(kind);
        import.push(text.as_bytes())?;
        import.finish()
    }

    #[test]
    fn the_global_list_takes_public_addresses_and_ranges_up_to_a_slash_8() {
        assert_eq!(
            ListKind::Global.parse_entry("198.51.99.0/24"),
            Ok(r("198.51.99.0/24"))
        );
        assert_eq!(
            ListKind::Global.parse_entry("8.0.0.0/8"),
            Ok(r("8.0.0.0/8"))
        );
        assert_eq!(
            ListKind::Global.parse_entry("8.0.0.0/7").unwrap_err(),
            "wider than /8"
        );
        assert_eq!(
            ListKind::Global.parse_entry("10.0.0.1").unwrap_err(),
            "private"
        );
        assert_eq!(
            ListKind::Global.parse_entry("10.1.0.0/16").unwrap_err(),
            "private"
        );
        assert_eq!(
            ListKind::Global.parse_entry("192.0.0.8/29"),
            Ok(r("192.0.0.8/29")),
            "holds two public addresses"
        );
        assert!(ListKind::Global
            .parse_entry("203.0.113.5/24")
            .unwrap_err()
            .contains("host bits"));
        assert_eq!(
            ListKind::Allow.parse_entry("10.0.0.0/8"),
            Ok(r("10.0.0.0/8"))
        );
        assert_eq!(ListKind::Allow.parse_entry("0.0.0.0/0"), Ok(r("0.0.0.0/0")));
    }

    fn edit(add: &[&str], remove: &[&str]) -> EditRequest {
        EditRequest {
            add: add.iter().map(|s| s.to_string()).collect(),
            remove: remove.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_edit_parses_every_entry_or_refuses_naming_the_first_bad_one() {
        assert_eq!(
            ListKind::Allow.parse_edit(edit(&[" 1.2.3.4 "], &["5.6.7.0/24"])),
            Ok((vec![r("1.2.3.4")], vec![r("5.6.7.0/24")]))
        );
        assert_eq!(
            ListKind::Global
                .parse_edit(edit(&["8.8.8.8"], &["10.0.0.1"]))
                .unwrap_err(),
            "\"10.0.0.1\": private"
        );
        let many = vec!["8.8.8.8"; MAX_EDIT_ENTRIES + 1];
        assert!(ListKind::Global
            .parse_edit(edit(&many, &[]))
            .unwrap_err()
            .contains("at most 10000 entries"));
        assert!(ListKind::Global.parse_edit(edit(&many[1..], &[])).is_ok());
    }

    #[test]
    fn the_edit_shape_is_strict() {
        assert!(serde_json::from_str::<EditRequest>(r#"{"add":["1.2.3.4"]}"#).is_ok());
        assert!(serde_json::from_str::<EditRequest>(r#"{"ad":["1.2.3.4"]}"#).is_err());
    }

    #[test]
    fn edits_remove_then_add_and_count_only_changes() {
        let mut list = ListEntries::new(vec![r("1.1.1.1"), r("2.2.2.0/24")]);
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
        let mut list = ListEntries::new(vec![r("1.1.1.1"), r("2.2.2.2"), r("3.3.3.0/24")]);
        let changes = list.replace(ListEntries::new(vec![
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
        let list = ListEntries::new(vec![
            r("0.0.0.0/8"),
            r("255.255.255.255"),
            r("1.2.3.4"),
            r("198.51.99.0/24"),
        ]);
        assert_eq!(ListEntries::decode(&list.encode()), Some(list));
        assert_eq!(ListEntries::decode(&[1, 2, 3]), None);
        assert_eq!(
            ListEntries::decode(&[1, 2, 3, 4, 24]),
            None,
            "host bits set"
        );
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
            ListEntries::default()
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
        let text = "1.10.16.0/20 ; SBL\n8.8.8.8\r\n9.9.9.9\n";
        for split in 0..text.len() {
            let mut import = Import::new(ListKind::Global);
            import.push(&text.as_bytes()[..split]).unwrap();
            import.push(&text.as_bytes()[split..]).unwrap();
            assert_eq!(import.finish().unwrap().len(), 3, "split at {split}");
        }
    }

    #[test]
    fn the_export_is_the_import_format_with_a_header() {
        let list = ListEntries::new(vec![r("9.9.9.9"), r("1.10.16.0/20"), r("8.8.8.8")]);
        let text = list.header(ListKind::Global, 7) + &list.lines(0, 2) + &list.lines(2, 2);
        assert_eq!(
            text,
            "# global list, version 7, 3 entries\n1.10.16.0/20\n8.8.8.8\n9.9.9.9\n"
        );
        assert_eq!(import(ListKind::Global, &text).unwrap(), list);
        assert_eq!(list.lines(3, 2), "");
    }
}
