//! Everything a client controls before it reaches storage: the form body and
//! its content type, the Authorization header and the token, the address text.
//! Input: the first line is the Content-Type, the rest is the body; the whole
//! input is also tried as a header, a token and an address or range.

use greylist::domain::access::token::TokenKey;
use greylist::domain::net::address::{Ipv6, PublicIp};
use greylist::domain::net::range::Ipv4Range;
use greylist::domain::time::UnixTime;
use greylist::http::auth::credentials::bearer;
use greylist::http::wire::form::first_field;

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let content_type = String::from_utf8_lossy(&data[..split]);
    let body = data.get(split + 1..).unwrap_or_default();
    if let Some(ip) = first_field(&content_type, body, "ip") {
        for ipv6 in [Ipv6::Off, Ipv6::On] {
            if let Ok(given) = PublicIp::parse(&ip, ipv6) {
                // What was taken reads back as itself from its sixteen bytes.
                assert_eq!(PublicIp::from_octets(given.ip.octets()), Some(given.ip));
            }
        }
    }

    let text = String::from_utf8_lossy(data);
    let key = TokenKey::new("fuzzing-secret");
    let now = UnixTime(1_795_262_400);
    if let Some(token) = bearer(&text) {
        let _ = key.verify(token, now);
    }
    let _ = key.verify(&text, now);
    let _ = Ipv4Range::parse(&text);
}
