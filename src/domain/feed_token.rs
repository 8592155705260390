//! Feed tokens: read-only credentials an appliance uses to pull a holder's feed,
//! where the license-key login cannot run. Shown once, kept only as digests.

use serde::{Deserialize, Serialize};

use super::license::{hex, key_digest, random, LicenseId};

/// At most this many feed tokens per holder.
pub const MAX_PER_HOLDER: usize = 20;
const TOKEN_PREFIX: &str = "glf_";
const ID_PREFIX: &str = "ft_";

/// A new token: its id (to list and revoke it by) and the secret, shown once.
pub struct NewFeedToken {
    pub id: String,
    pub token: String,
}

impl NewFeedToken {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self {
            id: format!("{ID_PREFIX}{}", hex(&random::<8>()?)),
            token: format!("{TOKEN_PREFIX}{}", hex(&random::<32>()?)),
        })
    }
}

/// A new token as the holder's object records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewFeedTokenRecord {
    pub id: String,
    pub digest: String,
}

/// A token as the holder sees it in the list: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedTokenInfo {
    pub id: String,
    pub created_at: String,
    pub last_used: Option<String>,
}

/// Whose a token is, as its digest's record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedTokenOwner {
    pub license: String,
    pub id: String,
}

impl FeedTokenOwner {
    pub fn license(&self) -> Option<LicenseId> {
        LicenseId::parse(&self.license)
    }
}

pub fn is_id(text: &str) -> bool {
    text.strip_prefix(ID_PREFIX).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The digest a token is stored under.
pub fn digest(token: &str) -> String {
    key_digest(token)
}

/// The feed token an `Authorization` header carries: `Bearer glf_...`, or HTTP
/// Basic with any user name and the token as the password.
pub fn from_authorization(header: &str) -> Option<String> {
    let (scheme, credentials) = header.trim().split_once(' ')?;
    let token = if scheme.eq_ignore_ascii_case("bearer") {
        credentials.trim().to_owned()
    } else if scheme.eq_ignore_ascii_case("basic") {
        let decoded = String::from_utf8(base64_decode(credentials.trim())?).ok()?;
        decoded.split_once(':')?.1.to_owned()
    } else {
        return None;
    };
    token.starts_with(TOKEN_PREFIX).then_some(token)
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
    fn tokens_carry_256_random_bits_and_ids_parse() {
        let (a, b) = (
            NewFeedToken::generate().unwrap(),
            NewFeedToken::generate().unwrap(),
        );
        assert_eq!(a.token.len(), TOKEN_PREFIX.len() + 64);
        assert_ne!(a.token, b.token);
        assert!(is_id(&a.id) && is_id(&b.id) && a.id != b.id);
        for bad in [
            "",
            "ft_",
            "ft_0123456789abcde",
            "ft_0123456789ABCDEF",
            "lic_0123456789abcdef",
            "ft_../0123456789abcd",
        ] {
            assert!(!is_id(bad), "{bad:?}");
        }
        assert_eq!(digest(&a.token).len(), 64);
        assert_ne!(digest(&a.token), a.token);
    }

    #[test]
    fn a_token_comes_as_bearer_or_as_the_basic_password() {
        let token = "glf_0123456789abcdef";
        assert_eq!(
            from_authorization(&format!("Bearer {token}")).as_deref(),
            Some(token)
        );
        // "firewall:glf_0123456789abcdef" and ":glf_0123456789abcdef"
        assert_eq!(
            from_authorization("Basic ZmlyZXdhbGw6Z2xmXzAxMjM0NTY3ODlhYmNkZWY=").as_deref(),
            Some(token)
        );
        assert_eq!(
            from_authorization("basic OmdsZl8wMTIzNDU2Nzg5YWJjZGVm").as_deref(),
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
            assert_eq!(from_authorization(refused), None, "{refused}");
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
