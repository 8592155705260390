//! Access tokens: HS256 JWTs whose `sub` is the license id.

use chrono::{DateTime, Duration, Utc};
use jwt_compact::alg::{Hs256, Hs256Key};
use jwt_compact::{AlgorithmExt, Claims, Header, TimeOptions, UntrustedToken};
use serde::{Deserialize, Serialize};

use super::holder::UnixTime;
use super::license::LicenseId;

/// Clock skew tolerated when checking `exp`, between the edge machines that issue and check tokens.
pub const EXPIRY_LEEWAY_SECONDS: i64 = 10;

#[derive(Serialize, Deserialize)]
struct Subject {
    sub: String,
}

/// Why a token was refused; logged, never shown to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    Malformed,
    Unverified,
    Expired,
    BadSubject,
}

impl TokenError {
    pub fn code(self) -> &'static str {
        match self {
            Self::Malformed => "token_malformed",
            Self::Unverified => "token_unverified",
            Self::Expired => "token_expired",
            Self::BadSubject => "token_bad_subject",
        }
    }
}

pub struct TokenKey(Hs256Key);

impl TokenKey {
    pub fn new(secret: &str) -> Self {
        Self(Hs256Key::new(secret.as_bytes()))
    }

    pub fn issue(&self, license: &LicenseId, now: UnixTime, lifetime_seconds: u64) -> String {
        let time = time_options(now);
        let claims = Claims::new(Subject { sub: license.as_str().to_owned() })
            .set_duration_and_issuance(&time, Duration::seconds(lifetime_seconds as i64));
        Hs256
            .token(&Header::empty().with_token_type("JWT"), &claims, &self.0)
            .expect("claims of two strings and two numbers always serialize")
    }

    /// Accepts exactly an HS256 token signed with this key, with `exp` in the
    /// future (within the leeway) and a `sub` that is a license id.
    pub fn verify(&self, token: &str, now: UnixTime) -> Result<LicenseId, TokenError> {
        let untrusted = UntrustedToken::new(token).map_err(|_| TokenError::Malformed)?;
        let verified = Hs256.validator::<Subject>(&self.0).validate(&untrusted).map_err(|_| TokenError::Unverified)?;
        let claims = verified.claims();
        claims.validate_expiration(&time_options(now)).map_err(|_| TokenError::Expired)?;
        LicenseId::parse(&claims.custom.sub).ok_or(TokenError::BadSubject)
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, as RFC 6750 allows).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim_start();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(char::is_whitespace)).then_some(token)
}

fn time_options(now: UnixTime) -> TimeOptions<impl Fn() -> DateTime<Utc>> {
    let at = DateTime::from_timestamp(now.0 as i64, 0).unwrap_or(DateTime::<Utc>::MAX_UTC);
    TimeOptions::new(Duration::seconds(EXPIRY_LEEWAY_SECONDS), move || at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn license() -> LicenseId {
        LicenseId::parse("lic_0123456789abcdef01234567").unwrap()
    }

    fn key() -> TokenKey {
        TokenKey::new("test-secret-of-reasonable-length")
    }

    #[test]
    fn issued_token_verifies_to_its_license_until_expiry_plus_leeway() {
        let token = key().issue(&license(), NOW, 3600);
        assert_eq!(key().verify(&token, NOW), Ok(license()));
        let last_accepted = UnixTime(NOW.0 + 3600 + EXPIRY_LEEWAY_SECONDS as u64);
        assert_eq!(key().verify(&token, last_accepted), Ok(license()));
        assert_eq!(key().verify(&token, UnixTime(last_accepted.0 + 1)), Err(TokenError::Expired));
    }

    #[test]
    fn token_of_another_secret_is_refused() {
        let token = TokenKey::new("another-secret").issue(&license(), NOW, 3600);
        assert_eq!(key().verify(&token, NOW), Err(TokenError::Unverified));
    }

    #[test]
    fn bearer_header_yields_its_token_only() {
        assert_eq!(bearer("Bearer abc.def.ghi"), Some("abc.def.ghi"));
        assert_eq!(bearer("bearer  abc"), Some("abc"));
        for header in ["", "Bearer", "Bearer ", "Basic abc", "Bearerabc", "Bearer a b", "Token abc"] {
            assert_eq!(bearer(header), None, "{header:?}");
        }
    }

    #[test]
    fn garbage_is_malformed() {
        for token in ["", "abc", "a.b", "a.b.c.d", "Bearer x.y.z"] {
            assert!(key().verify(token, NOW).is_err(), "{token:?}");
        }
    }
}
