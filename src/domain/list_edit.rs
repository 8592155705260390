//! An operator's edit of a global list: `{"add": [...], "remove": [...]}`.

use serde::Deserialize;

/// At most this many entries per request, so that one request stays within
/// the platform's per-invocation storage operations (a read and a write each).
pub const MAX_ENTRIES: usize = 400;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ListEdit<T> {
    pub add: Vec<T>,
    pub remove: Vec<T>,
}

impl EditRequest {
    /// Parses every entry or none: the first that does not parse refuses the whole
    /// edit, and the message names it.
    pub fn parse<T>(self, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<ListEdit<T>, String> {
        if self.add.len() + self.remove.len() > MAX_ENTRIES {
            return Err(format!("at most {MAX_ENTRIES} entries per request; load larger lists in batches"));
        }
        let parse_all = |entries: Vec<String>| -> Result<Vec<T>, String> {
            entries.iter().map(|entry| parse(entry.trim()).ok_or_else(|| format!("not {what}: {entry:?}"))).collect()
        };
        Ok(ListEdit { add: parse_all(self.add)?, remove: parse_all(self.remove)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(add: &[&str], remove: &[&str]) -> EditRequest {
        EditRequest { add: add.iter().map(|s| s.to_string()).collect(), remove: remove.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn parses_every_entry() {
        let edit = request(&["1", " 2 "], &["3"]).parse("a number", |s| s.parse::<u8>().ok());
        assert_eq!(edit, Ok(ListEdit { add: vec![1, 2], remove: vec![3] }));
    }

    #[test]
    fn one_bad_entry_refuses_the_edit_and_is_named() {
        let edit = request(&["1"], &["x7"]).parse("a number", |s| s.parse::<u8>().ok());
        assert_eq!(edit, Err("not a number: \"x7\"".to_owned()));
    }

    #[test]
    fn too_many_entries_are_refused() {
        let many: Vec<&str> = vec!["1"; MAX_ENTRIES + 1];
        assert!(request(&many, &[]).parse("a number", |s| s.parse::<u8>().ok()).is_err());
        let enough: Vec<&str> = vec!["1"; MAX_ENTRIES];
        assert!(request(&enough, &[]).parse("a number", |s| s.parse::<u8>().ok()).is_ok());
    }

    #[test]
    fn json_shape_is_strict() {
        assert!(serde_json::from_str::<EditRequest>(r#"{"add":["1.2.3.4"]}"#).is_ok());
        assert!(serde_json::from_str::<EditRequest>(r#"{"ad":["1.2.3.4"]}"#).is_err());
    }
}
