//! The Authorization header of a feed request: Bearer or HTTP Basic (base64) with
//! a feed token. Whatever arrives, only a feed token comes out of it.

use greylist::http::auth::credentials::feed_token;

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    let header = String::from_utf8_lossy(data);
    if let Some(token) = feed_token(&header) {
        assert!(token.starts_with("glf_"));
    }
}
