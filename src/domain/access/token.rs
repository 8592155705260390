//! Access tokens: HS256 JWTs whose `sub` is the license id; and machines' tokens,
//! signed under a key of their own, so that neither kind is ever taken for the other.
//! The service reads only the tokens it issues, so a JWT here is exactly what it
//! writes (RFC 7519 with RFC 7515's compact form): the header
//! `{"alg":"HS256","typ":"JWT"}`, the claims, HMAC-SHA-256 over both, each part
//! base64url without padding; a token is checked by its header's `alg`, its
//! signature (compared in constant time) and then its claims. The tests prove that
//! tokens jwt-compact issued, as earlier versions did, read as before.

use std::collections::HashMap;

use base64ct::{Base64UrlUnpadded, Encoding};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::access::license::LicenseId;
use crate::domain::code::Coded;
use crate::domain::mac::{keyed, HmacSha256, Mac};
use crate::domain::machines::credentials::{is_id, MachineId, TOKEN_SECONDS};
use crate::domain::time::UnixTime;

/// Whether a token that expires at `expires_at` is still good at `now`: its
/// `exp` in the future, exactly (docs/spec decisions, "Authentication"), with no
/// leeway, since the service checks only the tokens it issued itself. `now` is
/// whole seconds, rounded down, so this is `exp` against the clock's milliseconds.
fn unexpired(expires_at: UnixTime, now: UnixTime) -> bool {
    now.0 < expires_at.0
}

#[derive(Deserialize)]
struct Subject {
    sub: String,
}

/// What a holder's token says, as it is issued.
#[derive(Serialize)]
struct LicenseClaims<'a> {
    exp: u64,
    iat: u64,
    sub: &'a str,
}

/// The one header this service writes, and the one `alg` it reads.
const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;
const ALG: &str = "HS256";

#[derive(Deserialize)]
struct Header {
    alg: String,
}

/// A token's `exp`, in whole seconds, read apart from its other claims.
#[derive(Deserialize)]
struct Expiry {
    exp: Option<i64>,
}

/// `claims` as a token signed with `key`.
fn sign(key: &HmacSha256, claims: &impl Serialize) -> String {
    let claims = serde_json::to_vec(claims).expect("claims of strings and numbers serialize");
    let mut token = Base64UrlUnpadded::encode_string(HEADER.as_bytes());
    token.push('.');
    token.push_str(&Base64UrlUnpadded::encode_string(&claims));
    let mut mac = key.clone();
    mac.update(token.as_bytes());
    let signature = mac.finalize().into_bytes();
    token.push('.');
    token.push_str(&Base64UrlUnpadded::encode_string(&signature));
    token
}

/// Why a token was refused; logged, never shown to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    Malformed,
    Unverified,
    Expired,
    BadSubject,
}

impl Coded for TokenError {
    const ALL: &'static [Self] = &[
        Self::Malformed,
        Self::Unverified,
        Self::Expired,
        Self::BadSubject,
    ];

    fn code(self) -> &'static str {
        match self {
            Self::Malformed => "token_malformed",
            Self::Unverified => "token_unverified",
            Self::Expired => "token_expired",
            Self::BadSubject => "token_bad_subject",
        }
    }
}

pub struct TokenKey(HmacSha256);

impl TokenKey {
    pub fn new(secret: &str) -> Self {
        Self(keyed(secret.as_bytes()))
    }

    pub fn issue(&self, license: &LicenseId, now: UnixTime, lifetime_seconds: u64) -> String {
        let claims = LicenseClaims {
            exp: now.0.saturating_add(lifetime_seconds),
            iat: now.0,
            sub: license.as_str(),
        };
        sign(&self.0, &claims)
    }

    /// Accepts exactly an HS256 token signed with this key, with `exp` in the
    /// future and a `sub` that is a license id.
    pub fn verify(&self, token: &str, now: UnixTime) -> Result<LicenseId, TokenError> {
        self.verify_until(token, now).map(|(license, _)| license)
    }

    /// `verify`, also giving the token's expiry.
    fn verify_until(
        &self,
        token: &str,
        now: UnixTime,
    ) -> Result<(LicenseId, UnixTime), TokenError> {
        let (subject, expires_at) = verified::<Subject>(&self.0, token, now)?;
        let license = LicenseId::parse(&subject.sub).ok_or(TokenError::BadSubject)?;
        Ok((license, expires_at))
    }
}

/// The claims of an HS256 token signed with `key`, and its expiry, when `exp`
/// is in the future. A token not of three base64url parts, or whose header is
/// not JSON, is malformed; one of another `alg`, another key's signature or
/// claims of another shape is unverified.
fn verified<T: DeserializeOwned>(
    key: &HmacSha256,
    token: &str,
    now: UnixTime,
) -> Result<(T, UnixTime), TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let decode =
        |part: &str| Base64UrlUnpadded::decode_vec(part).map_err(|_| TokenError::Malformed);
    let (header_json, claims_json, signature) =
        (decode(header)?, decode(claims)?, decode(signature)?);
    let Header { alg } = serde_json::from_slice(&header_json).map_err(|_| TokenError::Malformed)?;
    if alg != ALG {
        return Err(TokenError::Unverified);
    }
    let mut mac = key.clone();
    // What the signature covers: `header.claims`, as the token spells them.
    mac.update(&token.as_bytes()[..header_part_len(header, claims)]);
    mac.verify_slice(&signature)
        .map_err(|_| TokenError::Unverified)?;
    let Expiry { exp } =
        serde_json::from_slice(&claims_json).map_err(|_| TokenError::Unverified)?;
    let custom = serde_json::from_slice(&claims_json).map_err(|_| TokenError::Unverified)?;
    let expires_at = exp
        .and_then(|at| u64::try_from(at).ok())
        .map(UnixTime)
        .filter(|&expires_at| unexpired(expires_at, now))
        .ok_or(TokenError::Expired)?;
    Ok((custom, expires_at))
}

/// How long `header.claims` is, the part of a token its signature covers.
fn header_part_len(header: &str, claims: &str) -> usize {
    header.len() + 1 + claims.len()
}

/// What a machine's token says: the license it acts for (`sub`), the machine's
/// id at its holder's (`mid`) and the name it logs in with (`mch`).
#[derive(Deserialize)]
struct MachineSubject {
    sub: String,
    mid: String,
    mch: String,
}

/// What a machine's token says, as it is issued.
#[derive(Serialize)]
struct MachineClaims<'a> {
    exp: u64,
    iat: u64,
    sub: &'a str,
    mid: &'a str,
    mch: &'a str,
}

/// The machine a token proves, and the license it acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineBearer {
    pub license: LicenseId,
    pub id: String,
    pub machine_id: MachineId,
}

/// The key machines' tokens are signed with: HS256 under a key derived from
/// `JWT_SECRET` apart from the holders' tokens' key. A machine's token therefore
/// fails every holder's and bouncer's route at its signature, and a holder's
/// token fails the machines' routes, whatever claims either carries.
pub struct MachineTokenKey(HmacSha256);

impl MachineTokenKey {
    pub fn new(secret: &str) -> Self {
        let mut derived = Sha256::new();
        derived.update(b"greylist machine tokens\n");
        derived.update(secret.as_bytes());
        Self(keyed(derived.finalize().as_slice()))
    }

    /// A token for `machine`, valid `TOKEN_SECONDS` from `now`, and when it expires.
    pub fn issue(&self, machine: &MachineBearer, now: UnixTime) -> (String, UnixTime) {
        let expires_at = now.plus(TOKEN_SECONDS);
        let claims = MachineClaims {
            exp: expires_at.0,
            iat: now.0,
            sub: machine.license.as_str(),
            mid: &machine.id,
            mch: machine.machine_id.as_str(),
        };
        (sign(&self.0, &claims), expires_at)
    }

    /// Accepts exactly an HS256 token signed with this key, with `exp` in the
    /// future and claims in the shapes `issue` writes.
    pub fn verify(&self, token: &str, now: UnixTime) -> Result<MachineBearer, TokenError> {
        let (subject, _) = verified::<MachineSubject>(&self.0, token, now)?;
        let license = LicenseId::parse(&subject.sub);
        let machine_id = MachineId::parse(&subject.mch);
        match (license, machine_id) {
            (Some(license), Some(machine_id)) if is_id(&subject.mid) => Ok(MachineBearer {
                license,
                id: subject.mid,
                machine_id,
            }),
            _ => Err(TokenError::BadSubject),
        }
    }
}

/// Tokens one isolate has verified, so a caller's repeated requests skip the
/// signature and JSON work. A token is only ever looked up whole, and its expiry
/// is checked on every use exactly as `TokenKey::verify` checks it.
#[derive(Default)]
pub struct VerifiedTokens {
    secret: String,
    verified: HashMap<String, (LicenseId, UnixTime)>,
}

/// How many tokens an isolate remembers before it starts afresh.
const REMEMBERED_TOKENS: usize = 10_000;

impl VerifiedTokens {
    pub fn verify(
        &mut self,
        secret: &str,
        token: &str,
        now: UnixTime,
    ) -> Result<LicenseId, TokenError> {
        if self.secret != secret {
            self.secret = secret.to_owned();
            self.verified.clear();
        }
        if let Some((license, expires_at)) = self.verified.get(token) {
            if unexpired(*expires_at, now) {
                return Ok(license.clone());
            }
            self.verified.remove(token);
            return Err(TokenError::Expired);
        }
        let (license, expires_at) = TokenKey::new(secret).verify_until(token, now)?;
        if self.verified.len() >= REMEMBERED_TOKENS {
            self.verified.clear();
        }
        self.verified
            .insert(token.to_owned(), (license.clone(), expires_at));
        Ok(license)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, Utc};
    use jwt_compact::alg::{Hs256, Hs256Key};
    use jwt_compact::{AlgorithmExt, Claims, Header, TimeOptions};

    const NOW: UnixTime = UnixTime(1_795_262_400);
    const SECRET: &[u8] = b"test-secret-of-reasonable-length";

    /// jwt-compact, the library earlier versions issued and read tokens with:
    /// what tokens they issued hold, and what another issuer may send.
    fn time_options(now: UnixTime) -> TimeOptions<impl Fn() -> DateTime<Utc>> {
        let at = DateTime::from_timestamp(now.0 as i64, 0).unwrap();
        TimeOptions::new(Duration::zero(), move || at)
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sub {
        sub: String,
    }

    fn license() -> LicenseId {
        LicenseId::parse("lic_0123456789abcdef01234567").unwrap()
    }

    fn key() -> TokenKey {
        TokenKey::new("test-secret-of-reasonable-length")
    }

    #[test]
    fn issued_token_verifies_to_its_license_until_its_expiry_and_not_at_it() {
        let token = key().issue(&license(), NOW, 3600);
        assert_eq!(key().verify(&token, NOW), Ok(license()));
        let last_accepted = UnixTime(NOW.0 + 3600 - 1);
        assert_eq!(key().verify(&token, last_accepted), Ok(license()));
        assert_eq!(
            key().verify(&token, UnixTime(NOW.0 + 3600)),
            Err(TokenError::Expired),
            "an `exp` that is now is not in the future"
        );
    }

    #[test]
    fn token_of_another_secret_is_refused() {
        let token = TokenKey::new("another-secret").issue(&license(), NOW, 3600);
        assert_eq!(key().verify(&token, NOW), Err(TokenError::Unverified));
    }

    /// `{"alg":"none","typ":"JWT"}`, base64url.
    const ALG_NONE_HEADER: &str = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";

    fn parts(token: &str) -> Vec<&str> {
        token.split('.').collect()
    }

    #[test]
    fn alg_none_is_refused_with_or_without_a_signature() {
        let valid = key().issue(&license(), NOW, 3600);
        let [_, payload, signature] = parts(&valid)[..] else {
            panic!()
        };
        for forged in [
            format!("{ALG_NONE_HEADER}.{payload}."),
            format!("{ALG_NONE_HEADER}.{payload}.{signature}"),
        ] {
            assert_eq!(
                key().verify(&forged, NOW),
                Err(TokenError::Unverified),
                "{forged}"
            );
        }
    }

    #[test]
    fn a_token_jwt_compact_issued_reads_as_before_and_ours_read_there() {
        let earlier = Claims::new(Sub {
            sub: license().as_str().to_owned(),
        })
        .set_duration_and_issuance(&time_options(NOW), Duration::seconds(3600));
        let earlier = Hs256
            .token(
                &Header::empty().with_token_type("JWT"),
                &earlier,
                &Hs256Key::new(SECRET),
            )
            .unwrap();
        assert_eq!(
            key().verify(&earlier, NOW),
            Ok(license()),
            "a token jwt-compact issued, as earlier versions did, reads as before"
        );
        assert_eq!(
            key().verify(&earlier, NOW.plus(3600)),
            Err(TokenError::Expired)
        );
        let ours = key().issue(&license(), NOW, 3600);
        assert_eq!(
            ours, earlier,
            "the same header, claims and signature, byte for byte"
        );
        let machine_token = MachineTokenKey::new(std::str::from_utf8(SECRET).unwrap())
            .issue(&machine(), NOW)
            .0;
        let untrusted = jwt_compact::UntrustedToken::new(&machine_token).unwrap();
        let derived = Sha256::new()
            .chain_update(b"greylist machine tokens\n")
            .chain_update(SECRET)
            .finalize();
        let read = Hs256
            .validator::<serde_json::Value>(&Hs256Key::new(derived.as_slice()))
            .validate(&untrusted)
            .expect("jwt-compact reads a machine's token");
        assert_eq!(
            read.claims().custom["mch"],
            machine().machine_id.as_str(),
            "{machine_token}"
        );
    }

    #[test]
    fn other_algorithms_under_the_same_secret_are_refused() {
        use jwt_compact::alg::{Hs384, Hs384Key, Hs512, Hs512Key};
        let claims = || {
            Claims::new(Sub {
                sub: license().as_str().to_owned(),
            })
            .set_duration_and_issuance(&time_options(NOW), Duration::seconds(60))
        };
        let secret = SECRET;
        let hs384 = Hs384
            .token(&Header::empty(), &claims(), &Hs384Key::new(secret))
            .unwrap();
        let hs512 = Hs512
            .token(&Header::empty(), &claims(), &Hs512Key::new(secret))
            .unwrap();
        assert_eq!(key().verify(&hs384, NOW), Err(TokenError::Unverified));
        assert_eq!(key().verify(&hs512, NOW), Err(TokenError::Unverified));
    }

    #[test]
    fn an_altered_payload_breaks_the_signature() {
        let mine = key().issue(&license(), NOW, 3600);
        let theirs = key().issue(
            &LicenseId::parse("lic_ffffffffffffffffffffffff").unwrap(),
            NOW,
            3600,
        );
        let forged = format!(
            "{}.{}.{}",
            parts(&mine)[0],
            parts(&theirs)[1],
            parts(&mine)[2]
        );
        assert_eq!(key().verify(&forged, NOW), Err(TokenError::Unverified));
    }

    #[test]
    fn a_token_without_a_license_subject_is_refused() {
        let no_sub = Claims::new(jwt_compact::Empty {})
            .set_duration_and_issuance(&time_options(NOW), Duration::seconds(60));
        let hs256 = Hs256Key::new(SECRET);
        let token = Hs256.token(&Header::empty(), &no_sub, &hs256).unwrap();
        assert_eq!(key().verify(&token, NOW), Err(TokenError::Unverified));
        let other_sub = Claims::new(Sub {
            sub: "../admin".to_owned(),
        })
        .set_duration_and_issuance(&time_options(NOW), Duration::seconds(60));
        let token = Hs256.token(&Header::empty(), &other_sub, &hs256).unwrap();
        assert_eq!(key().verify(&token, NOW), Err(TokenError::BadSubject));
    }

    #[test]
    fn a_token_without_exp_is_refused() {
        let claims = Claims::new(Sub {
            sub: license().as_str().to_owned(),
        });
        let token = Hs256
            .token(&Header::empty(), &claims, &Hs256Key::new(SECRET))
            .unwrap();
        assert_eq!(key().verify(&token, NOW), Err(TokenError::Expired));
    }

    #[test]
    fn remembered_tokens_answer_as_fresh_verification_does() {
        let mut tokens = VerifiedTokens::default();
        let secret = "test-secret-of-reasonable-length";
        let token = key().issue(&license(), NOW, 3600);
        assert_eq!(tokens.verify(secret, &token, NOW), Ok(license()));
        assert_eq!(
            tokens.verify(secret, &token, NOW.plus(100)),
            Ok(license()),
            "from memory"
        );
        let last = NOW.plus(3600 - 1);
        assert_eq!(tokens.verify(secret, &token, last), Ok(license()));
        assert_eq!(
            tokens.verify(secret, &token, last.plus(1)),
            Err(TokenError::Expired),
            "a remembered token is refused from the second its exp names on"
        );
        assert_eq!(
            tokens.verify(secret, &token, NOW),
            Ok(license()),
            "forgotten once expired, then verified afresh"
        );
        assert_eq!(
            tokens.verify("a rotated secret", &token, NOW),
            Err(TokenError::Unverified),
            "a new secret forgets them all"
        );
        let tampered = format!("{token}x");
        assert_eq!(
            tokens.verify(secret, &tampered, NOW),
            Err(TokenError::Unverified)
        );
    }

    fn machine() -> MachineBearer {
        MachineBearer {
            license: license(),
            id: "mc_0123456789abcdef".to_owned(),
            machine_id: MachineId::parse("glm_0123456789abcdef0123456789abcdef").unwrap(),
        }
    }

    #[test]
    fn a_machines_token_names_its_machine_and_license_for_an_hour() {
        let key = MachineTokenKey::new("test-secret-of-reasonable-length");
        let (token, expires_at) = key.issue(&machine(), NOW);
        assert_eq!(expires_at, NOW.plus(3600));
        assert_eq!(key.verify(&token, NOW), Ok(machine()));
        assert_eq!(key.verify(&token, NOW.plus(3600 - 1)), Ok(machine()));
        assert_eq!(
            key.verify(&token, expires_at),
            Err(TokenError::Expired),
            "a machine's token is refused from the second its exp names on"
        );
    }

    #[test]
    fn neither_kind_of_token_is_taken_for_the_other() {
        let secret = "test-secret-of-reasonable-length";
        let (machines, holders) = (MachineTokenKey::new(secret), TokenKey::new(secret));
        let (machine_token, _) = machines.issue(&machine(), NOW);
        let holder_token = holders.issue(&license(), NOW, 3600);
        assert_eq!(
            holders.verify(&machine_token, NOW),
            Err(TokenError::Unverified),
            "a machine's token never passes for a holder's access token"
        );
        let mut remembered = VerifiedTokens::default();
        assert_eq!(
            remembered.verify(secret, &machine_token, NOW),
            Err(TokenError::Unverified)
        );
        assert_eq!(
            machines.verify(&holder_token, NOW),
            Err(TokenError::Unverified)
        );
        let other = MachineTokenKey::new("another-secret-of-reasonable-length");
        assert_eq!(
            other.verify(&machine_token, NOW),
            Err(TokenError::Unverified)
        );
    }

    #[test]
    fn garbage_is_malformed() {
        for token in ["", "abc", "a.b", "a.b.c.d", "Bearer x.y.z"] {
            assert_eq!(
                key().verify(token, NOW).unwrap_err(),
                TokenError::Malformed,
                "{token:?}"
            );
        }
    }
}
