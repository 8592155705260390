//! The credentials a request carries in `Authorization`: a bearer token (an
//! access token, the admin token, a feed token), or HTTP Basic with a feed token
//! as the password, for appliances that can only send that.

use crate::domain::feed::feed_token::is_token;

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, as RFC 6750 allows).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim_start();
    (scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && !token.contains(char::is_whitespace))
    .then_some(token)
}

/// The feed token an `Authorization` header carries: `Bearer glf_...`, or HTTP
/// Basic with any user name and the token as the password.
pub fn feed_token(header: &str) -> Option<String> {
    let (scheme, credentials) = header.trim().split_once(' ')?;
    let token = if scheme.eq_ignore_ascii_case("bearer") {
        credentials.trim().to_owned()
    } else if scheme.eq_ignore_ascii_case("basic") {
        let decoded = String::from_utf8(base64_decode(credentials.trim())?).ok()?;
        decoded.split_once(':')?.1.to_owned()
    } else {
        return None;
    };
    is_token(&token).then_some(token)
}

/// Standard base64 with padding, as HTTP Basic sends it.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (index, quad) in bytes.chunks(4).enumerate() {
        let last = index == bytes.len() / 4 - 1;
        let padding = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut word = 0u32;
        for &c in &quad[..4 - padding] {
            word = word << 6 | u32::from(value(c)?);
        }
        word <<= 6 * padding as u32;
        out.extend_from_slice(&word.to_be_bytes()[1..4 - padding]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_yields_its_token_only() {
        assert_eq!(bearer("Bearer abc.def.ghi"), Some("abc.def.ghi"));
        assert_eq!(bearer("bearer  abc"), Some("abc"));
        for header in [
            "",
            "Bearer",
            "Bearer ",
            "Basic abc",
            "Bearerabc",
            "Bearer a b",
            "Token abc",
        ] {
            assert_eq!(bearer(header), None, "{header:?}");
        }
    }

    #[test]
    fn a_token_comes_as_bearer_or_as_the_basic_password() {
        let token = "glf_0123456789abcdef";
        assert_eq!(
            feed_token(&format!("Bearer {token}")).as_deref(),
            Some(token)
        );
        // "firewall:glf_0123456789abcdef" and ":glf_0123456789abcdef"
        assert_eq!(
            feed_token("Basic ZmlyZXdhbGw6Z2xmXzAxMjM0NTY3ODlhYmNkZWY=").as_deref(),
            Some(token)
        );
        assert_eq!(
            feed_token("basic OmdsZl8wMTIzNDU2Nzg5YWJjZGVm").as_deref(),
            Some(token)
        );
        for refused in [
            "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x",
            "Basic Zmlyzxdhbgw6",
            "Basic !!!!",
            "Basic Zg=",
            "Token glf_1",
            "glf_1",
            "Basic ZmlyZXdhbGw6cGFzc3dvcmQ=",
        ] {
            assert_eq!(feed_token(refused), None, "{refused}");
        }
    }

    #[test]
    fn base64_decodes_every_padding() {
        assert_eq!(base64_decode("").unwrap(), b"");
        assert_eq!(base64_decode("Zg==").unwrap(), b"f");
        assert_eq!(base64_decode("Zm8=").unwrap(), b"fo");
        assert_eq!(base64_decode("Zm9v").unwrap(), b"foo");
        assert_eq!(base64_decode("Zm9vYg==").unwrap(), b"foob");
        for bad in ["Zg", "Z===", "Zg==Zg==", "Zm9v!"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }
}
