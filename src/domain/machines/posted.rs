//! The array an engine posts, read as it streams in. CrowdSec 1.4.6 sends its
//! whole cache of alerts in one post and, when the post is refused, sends it
//! again with the new alerts added, for ever: so no size of the array may be
//! refused for its size alone, short of what a Worker may read
//! (`MAX_BODY_BYTES`, `MAX_ELEMENTS`). The elements are told apart as the bytes
//! come; the first `MAX_ALERTS` that end within the body's first
//! `MAX_KEPT_BYTES` are kept, and every later one is checked against JSON's
//! grammar without being built, counted, and let go (one past `MAX_ELEMENT_BYTES` only followed to its end).
//! Nothing holds more than the kept alerts, the element being read and, for the
//! answer, an id per element.

use crate::domain::machines::alert::PostedAlert;

/// Alerts one request takes; those after them are acknowledged and counted
/// ignored. The engine sends what it gathered in a second, a handful at most.
pub const MAX_ALERTS: usize = 100;
/// The kept alerts end within this much of the body: a hundred alerts with
/// their events are about 300 KB, and what they are parsed into stays near it.
pub const MAX_KEPT_BYTES: usize = 1 << 20;
/// An element past this is counted and let go unparsed, its brackets and
/// strings followed only to find its end: one alert, events and all, is tens
/// of kilobytes.
pub const MAX_ELEMENT_BYTES: usize = 1 << 20;
/// A request's body at most, decompressed: an engine's cache after an hour
/// without an answer, well under the 100 MB Cloudflare lets into a Worker.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Elements a request's array holds at most: the answer has an id for each,
/// and an alert is a kilobyte or more, so an engine's 64 MiB never comes near.
pub const MAX_ELEMENTS: u64 = 100_000;
/// Brackets an element may open within one another: what serde_json reads
/// within the array, whose own bracket is one of the 127 it takes.
const MAX_ELEMENT_DEPTH: u64 = 126;

/// The elements kept, and how many the array held in all.
#[derive(Debug)]
pub struct Posted {
    pub kept: Vec<PostedAlert>,
    pub total: u64,
}

/// Why a body is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It is not a JSON array, and why.
    NotAnArray(String),
    /// Its array has more than `MAX_ELEMENTS` elements.
    TooManyElements,
}

/// Where the reader is in the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before its `[`.
    Start,
    /// Where an element begins: after `[` (`first`) or after a `,`.
    Between { first: bool },
    /// Within an element.
    Element,
    /// After its `]`: whitespace only.
    End,
}

/// An array of alerts fed a chunk at a time (`push`), then `finish`ed.
#[derive(Debug)]
pub struct PostedReader {
    at: At,
    /// Bytes read before the current chunk.
    offset: usize,
    /// Within the current element: its open brackets, and whether in a string
    /// (and just after a backslash there).
    depth: u64,
    in_string: bool,
    escaped: bool,
    /// The current element's bytes, until it passes `MAX_ELEMENT_BYTES`.
    element: Vec<u8>,
    oversized: bool,
    /// Whether elements are still kept: once one is not, none after it is.
    keeping: bool,
    posted: Posted,
}

impl Default for PostedReader {
    fn default() -> Self {
        Self {
            at: At::Start,
            offset: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            element: Vec::new(),
            oversized: false,
            keeping: true,
            posted: Posted {
                kept: Vec::new(),
                total: 0,
            },
        }
    }
}

impl PostedReader {
    /// The next bytes of the body, wherever a chunk happens to cut it.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Refused> {
        let mut start = None;
        for (index, &byte) in bytes.iter().enumerate() {
            match self.at {
                At::Start if is_space(byte) => {}
                At::Start if byte == b'[' => self.at = At::Between { first: true },
                At::Start => return Err(not_an_array("it does not begin with `[`")),
                At::Between { .. } if is_space(byte) => {}
                At::Between { first: true } if byte == b']' => self.at = At::End,
                At::Between { .. } | At::Element => {
                    if self.at != At::Element {
                        self.at = At::Element;
                        (self.depth, self.in_string, self.escaped) = (0, false, false);
                    }
                    if self.ends_element(byte)? {
                        self.keep_bytes(&bytes[start.unwrap_or(index)..index]);
                        start = None;
                        self.end_element(self.offset + index)?;
                        self.at = match byte {
                            b',' => At::Between { first: false },
                            _ => At::End,
                        };
                    } else {
                        start.get_or_insert(index);
                    }
                }
                At::End if is_space(byte) => {}
                At::End => return Err(not_an_array("something follows its closing `]`")),
            }
        }
        if let Some(start) = start {
            self.keep_bytes(&bytes[start..]);
        }
        self.offset += bytes.len();
        Ok(())
    }

    /// The array as read, once the body has ended.
    pub fn finish(self) -> Result<Posted, Refused> {
        match self.at {
            At::End => Ok(self.posted),
            _ => Err(not_an_array("it ends before its closing `]`")),
        }
    }

    /// Whether `byte`, within an element, is the `,` or `]` after it; follows
    /// the element's strings and brackets on the way, and refuses nesting past
    /// what a parse of the whole array takes, unparsed elements' too.
    fn ends_element(&mut self, byte: u8) -> Result<bool, Refused> {
        if self.in_string {
            match byte {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            return Ok(false);
        }
        match byte {
            b'"' => self.in_string = true,
            b'[' | b'{' if self.depth == MAX_ELEMENT_DEPTH => {
                return Err(not_an_array("an element nests too deep"))
            }
            b'[' | b'{' => self.depth += 1,
            b',' | b']' if self.depth == 0 => return Ok(true),
            // A mismatched bracket is the element's parser's to refuse.
            b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        Ok(false)
    }

    /// Part of the current element, held until it passes `MAX_ELEMENT_BYTES`.
    fn keep_bytes(&mut self, bytes: &[u8]) {
        if self.oversized {
            return;
        }
        if self.element.len() + bytes.len() > MAX_ELEMENT_BYTES {
            self.oversized = true;
            self.element = Vec::new();
        } else {
            self.element.extend_from_slice(bytes);
        }
    }

    /// The element that ends at `ends_at` bytes into the body: kept, or checked
    /// and counted.
    fn end_element(&mut self, ends_at: usize) -> Result<(), Refused> {
        let posted = &mut self.posted;
        if posted.total == MAX_ELEMENTS {
            return Err(Refused::TooManyElements);
        }
        posted.total += 1;
        self.keeping &=
            !self.oversized && posted.kept.len() < MAX_ALERTS && ends_at <= MAX_KEPT_BYTES;
        let number = posted.total;
        let element =
            |error: serde_json::Error| not_an_array(&format!("element {number}: {error}"));
        if self.keeping {
            let sent = serde_json::from_slice::<PostedAlert>(&self.element).map_err(element)?;
            posted.kept.push(sent);
        } else if !self.oversized {
            // Checked against JSON's grammar and dropped, never built: an element
            // the hundred do not keep costs a scan of its bytes, not a tree of
            // values (nesting was checked as it streamed, in `ends_element`).
            serde_json::from_slice::<serde::de::IgnoredAny>(&self.element).map_err(element)?;
        }
        self.element.clear();
        self.oversized = false;
        Ok(())
    }
}

/// JSON's whitespace, which is not all of ASCII's (no form feed).
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

fn not_an_array(why: &str) -> Refused {
    Refused::NotAnArray(why.to_owned())
}

#[cfg(test)]
mod tests {
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// `body` read in pieces cut at `cuts` (positions within it, in any order).
    fn read(body: &[u8], cuts: &[usize]) -> Result<Posted, Refused> {
        let mut cuts: Vec<usize> = cuts.iter().map(|&cut| cut.min(body.len())).collect();
        cuts.sort_unstable();
        let mut reader = PostedReader::default();
        let mut from = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            reader.push(&body[from..cut])?;
            from = cut;
        }
        reader.finish()
    }

    /// `body` read seven bytes at a time.
    fn read_in_sevens(body: &str) -> Result<Posted, Refused> {
        let cuts: Vec<usize> = (0..body.len()).step_by(7).collect();
        read(body.as_bytes(), &cuts)
    }

    const ALERT: &str =
        r#"{"scenario":"crowdsecurity/ssh-bf","source":{"scope":"Ip","value":"8.8.8.8"}}"#;

    #[test]
    fn a_post_keeps_its_first_hundred_elements_and_counts_the_rest() {
        let mut elements = vec![ALERT.to_owned(), "0".to_owned()];
        // Past the hundred, elements of any shape, an alert's too, are counted only.
        elements.extend((0..248).map(|n| match n % 3 {
            0 => ALERT.to_owned(),
            1 => r#"{"scenario":[1,{"a":"],\\\"["}]}"#.to_owned(),
            _ => "\"x\"".to_owned(),
        }));
        let posted = read_in_sevens(&format!(" [ {} ]\n", elements.join(" ,\n")))
            .expect("a post whose strings hold escaped quotes and brackets is read whole");
        assert_eq!(posted.total, 250);
        assert_eq!(posted.kept.len(), MAX_ALERTS);
        assert!(
            posted.kept.capacity() <= 2 * MAX_ALERTS,
            "never the whole array"
        );
        assert!(matches!(posted.kept[0], PostedAlert::Alert(_)));
        assert!(matches!(posted.kept[1], PostedAlert::Unreadable));
        let empty = read_in_sevens(" [ ] ").unwrap();
        assert_eq!((empty.kept.len(), empty.total), (0, 0));
        // Past the hundred as within it: what JSON's grammar refuses is refused.
        let past = |element: &str| format!("[{}{element}]", "0,".repeat(MAX_ALERTS + 5));
        let too_deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for malformed in [&too_deep, "{]}", "1 2", "[1,]", r#"{"a" 1}"#, "tru"] {
            let within = format!("[{malformed}]");
            assert!(read_in_sevens(&within).is_err(), "{malformed}");
            assert!(
                read_in_sevens(&past(malformed)).is_err(),
                "an element past the hundred that JSON's grammar refuses was taken: {malformed}"
            );
        }
        // Past the hundred an element is scanned, never built: a number no f64
        // holds and a lone surrogate, which building refuses within the hundred,
        // are only counted there.
        for unbuildable in ["1e400", r#""\ud800""#, r#"{"a":[1e400]}"#] {
            let within = format!("[{unbuildable}]");
            assert!(read_in_sevens(&within).is_err(), "{unbuildable}");
            let counted = read_in_sevens(&past(unbuildable)).map(|posted| posted.total);
            assert_eq!(
                counted,
                Ok(MAX_ALERTS as u64 + 6),
                "an element past the hundred was built to be checked: {unbuildable}"
            );
        }
        for not_an_array in [
            r#"{"scenario":"x"}"#,
            "[0,",
            "[0] 1",
            "[0,]",
            "[,0]",
            "[0,,0]",
            "",
            "\x0c[]",
        ] {
            assert!(read_in_sevens(not_an_array).is_err(), "{not_an_array:?}");
        }
    }

    #[test]
    fn the_alerts_kept_end_within_the_first_mebibyte_and_a_longer_cache_is_counted_whole() {
        // An alert of 400 KB: two end within the first MiB, the third after it.
        let padded = format!(
            r#"{{"scenario":"crowdsecurity/ssh-bf","events":["{}"],"source":{{"scope":"Ip","value":"8.8.8.8"}}}}"#,
            "e".repeat(400_000)
        );
        let body = format!(
            "[{}]",
            [padded.as_str(); 3].join(",") + &",0".repeat(MAX_ALERTS)
        );
        let posted = read(
            body.as_bytes(),
            &(0..body.len()).step_by(65_536).collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(posted.total, 3 + MAX_ALERTS as u64);
        assert_eq!(posted.kept.len(), 2, "none after the first left");
        // An element past MAX_ELEMENT_BYTES is followed to its end, not parsed:
        // its brackets and commas within strings do not end it.
        let huge = format!(
            r#"{{"a":1e400,"b":"{}"}}"#,
            "],\\\"".repeat(MAX_ELEMENT_BYTES / 4)
        );
        let body = format!("[{huge},[{huge}],0]");
        let posted = read(body.as_bytes(), &[1, 9, MAX_ELEMENT_BYTES, body.len() - 3]).unwrap();
        assert_eq!((posted.kept.len(), posted.total), (0, 3));
    }

    #[test]
    fn an_array_past_the_most_elements_is_refused_and_nesting_as_a_whole_parse_takes_it() {
        let most = format!("[{}0]", "0,".repeat(MAX_ELEMENTS as usize - 1));
        assert_eq!(read_in_sevens(&most).unwrap().total, MAX_ELEMENTS);
        let past = format!("[{}0]", "0,".repeat(MAX_ELEMENTS as usize));
        assert_eq!(
            read_in_sevens(&past)
                .expect_err("an array of one element past the most a post holds is refused"),
            Refused::TooManyElements
        );
        // At the depth serde_json stops at, within a kept element, a checked one
        // and one too large to parse alike.
        for depth in 120..=130 {
            let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let padded = format!("[\"{}\",{nested}]", " ".repeat(MAX_ELEMENT_BYTES));
            for element in [
                nested.clone(),
                format!("{}{nested}", "0,".repeat(MAX_ALERTS)),
                padded,
            ] {
                let body = format!("[{element}]");
                let whole = serde_json::from_str::<Vec<Value>>(&body).is_ok();
                assert_eq!(
                    read_in_sevens(&body).is_ok(),
                    whole,
                    "{depth} deep, an element is taken as a parse of the whole array takes it"
                );
            }
        }
    }

    /// Any JSON value, with strings full of what ends an element outside one.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z,\\]\\[{}\"\\\\ ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map("[a-z\"]{0,3}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn read_in_any_pieces_it_agrees_with_a_parse_of_the_whole(
            elements in vec(json(), 0..6),
            pretty in any::<bool>(),
            edits in vec((any::<prop::sample::Index>(), prop_oneof![Just(None), proptest::sample::select(b"[]{},\"\\ 0\x0c".to_vec()).prop_map(Some)]), 0..3),
            cuts in vec(0usize..200, 0..6),
        ) {
            let array = Value::Array(elements);
            let mut body = match pretty {
                true => serde_json::to_string_pretty(&array).unwrap(),
                false => array.to_string(),
            }.into_bytes();
            for (at, edit) in edits {
                let at = at.index(body.len() + 1);
                match edit {
                    Some(byte) => body.insert(at, byte),
                    None if at < body.len() => drop(body.remove(at)),
                    None => {}
                }
            }
            let whole = serde_json::from_slice::<Vec<Value>>(&body);
            let streamed = read(&body, &cuts);
            prop_assert_eq!(streamed.is_ok(), whole.is_ok(), "{}", String::from_utf8_lossy(&body));
            if let (Ok(streamed), Ok(whole)) = (streamed, whole) {
                prop_assert_eq!(streamed.total, whole.len() as u64);
                prop_assert_eq!(streamed.kept.len(), whole.len());
            }
        }
    }
}
