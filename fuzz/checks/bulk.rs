//! Bulk request bodies: the first line is the Content-Type, the rest the body.
//! Whatever arrives, the parse answers, and never with more addresses than allowed.

use greylist::http::wire::bulk::{BulkError, BulkRequest, MAX_ADDRESSES};

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let content_type = String::from_utf8_lossy(&data[..split]);
    let body = data.get(split + 1..).unwrap_or_default();
    match BulkRequest::parse(&content_type, body) {
        Ok(request) => assert!(
            request.ips.len() <= MAX_ADDRESSES,
            "a bulk body taken whole holds more addresses than the bound"
        ),
        Err(BulkError::TooMany(n)) => assert!(
            n > MAX_ADDRESSES,
            "a bulk body refused as too many holds no more than the bound"
        ),
        Err(BulkError::Malformed(_)) => {}
    }
}
