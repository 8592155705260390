//! What a feed or a list request carries: the query, If-None-Match, and the
//! cursors of the list and the history. Each line is tried as each of them; what
//! parses prints back to what parses to the same value.

use greylist::domain::feed::item::FeedVersion;
use greylist::domain::page::{EntryCursor, HistoryCursor, PageCursor, PageQuery};
use greylist::http::feed::query::FeedQuery;

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if let Ok(query) = FeedQuery::parse(line) {
            let version = query.version(7, 3, 2);
            let _ = query.known_changes(line, 3, 2);
            assert!(query.etag(version).starts_with('"'));
        }
        if let Some(version) = FeedVersion::parse(line) {
            assert_eq!(FeedVersion::parse(&version.to_string()), Some(version));
        }
        if let Some(cursor) = EntryCursor::decode(line) {
            assert_eq!(EntryCursor::decode(&cursor.encode()), Some(cursor));
        }
        if let Some(cursor) = HistoryCursor::decode(line) {
            assert_eq!(HistoryCursor::decode(&cursor.encode()), Some(cursor));
        }
        let _ = PageQuery::<EntryCursor>::parse(Some(line), Some(line), Some(line));
    }
}
