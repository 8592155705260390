//! License ids and keys. A key is a bearer secret: it exists at rest only as
//! its SHA-256 digest, and is shown once, when the license is created.

use sha2::{Digest, Sha256};

/// The public name of a license: the token's `sub` and the Durable Object's name.
/// As text on any wire, read back only in the shape `generate` makes.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct LicenseId(String);

impl TryFrom<String> for LicenseId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text).ok_or_else(|| format!("not a license id: {text:?}"))
    }
}

impl From<LicenseId> for String {
    fn from(id: LicenseId) -> String {
        id.0
    }
}

/// A freshly issued license key (256 random bits).
pub struct LicenseKey(String);

const ID_PREFIX: &str = "lic_";
const KEY_PREFIX: &str = "glk_";

impl LicenseId {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self(format!("{ID_PREFIX}{}", hex(&random::<12>()?))))
    }

    /// Accepts only the shape `generate` makes, so that a path segment or a
    /// token claim can never name anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let hex_part = s.strip_prefix(ID_PREFIX)?;
        is_lower_hex(hex_part, 24).then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl LicenseKey {
    pub fn generate() -> Result<Self, getrandom::Error> {
        Ok(Self(format!("{KEY_PREFIX}{}", hex(&random::<32>()?))))
    }

    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `text` has the shape `generate` gives a key: a login with any
    /// other is refused without a KV read.
    pub fn is_well_formed(text: &str) -> bool {
        text.strip_prefix(KEY_PREFIX)
            .is_some_and(|hex| is_lower_hex(hex, 64))
    }
}

/// Hex SHA-256 of a submitted or issued key: the only form a key is stored or looked up in.
pub fn key_digest(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// Compares two secrets in time independent of where they differ: both are
/// hashed first, so neither length nor content leaks through timing.
pub fn secrets_match(given: &str, expected: &str) -> bool {
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(expected.as_bytes()),
    );
    a.iter()
        .zip(b.iter())
        .fold(0u8, |diff, (x, y)| diff | (x ^ y))
        == 0
}

pub(crate) fn random<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `text` is `len` lowercase hexadecimal digits, as `hex` writes them:
/// a secret of any other shape was never issued, and is refused before any
/// storage is asked about it.
pub(crate) fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// How long to wait before telling a holder's object of its revocation again,
/// after `attempts` failed: 5 seconds, doubling, at most an hour. The revocation
/// is in force meanwhile (the license's record says so); this only brings the
/// object, which answers logins without KV's delay, up to date.
pub fn notice_retry_seconds(attempts: u32) -> u64 {
    5u64.saturating_mul(1 << attempts.min(20)).min(3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_retried_sooner_first_and_at_least_hourly() {
        let waits: Vec<u64> = (0..12).map(notice_retry_seconds).collect();
        assert_eq!(&waits[..4], [5, 10, 20, 40]);
        assert_eq!(waits[11], 3600);
        assert_eq!(notice_retry_seconds(u32::MAX), 3600);
    }

    #[test]
    fn a_license_id_crosses_a_wire_as_text_and_only_in_its_shape() {
        let id = LicenseId::generate().unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{}\"", id.as_str()));
        assert_eq!(serde_json::from_str::<LicenseId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<LicenseId>("\"lic_../x\"").is_err());
    }

    #[test]
    fn generated_ids_parse_and_differ() {
        let (a, b) = (
            LicenseId::generate().unwrap(),
            LicenseId::generate().unwrap(),
        );
        assert_ne!(a, b);
        assert_eq!(LicenseId::parse(a.as_str()), Some(a));
    }

    #[test]
    fn ids_of_any_other_shape_are_refused() {
        for s in [
            "",
            "lic_",
            "lic_0123456789abcdef0123456",
            "lic_0123456789abcdef012345678",
            "lic_0123456789ABCDEF01234567",
            "LIC_0123456789abcdef01234567",
            "lic_../../0123456789abcdef",
        ] {
            assert_eq!(LicenseId::parse(s), None, "{s:?}");
        }
        assert!(LicenseId::parse("lic_0123456789abcdef01234567").is_some());
    }

    #[test]
    fn keys_carry_256_random_bits_and_are_stored_as_sha256() {
        let key = LicenseKey::generate().unwrap();
        assert_eq!(key.reveal().len(), KEY_PREFIX.len() + 64);
        assert!(LicenseKey::is_well_formed(key.reveal()));
        let upper = key.reveal().to_uppercase().replace("GLK_", KEY_PREFIX);
        for made_up in ["", "glk_", "glk_abc", &key.reveal()[..67], &upper[..]] {
            assert!(!LicenseKey::is_well_formed(made_up), "{made_up:?}");
        }
        assert_ne!(key.reveal(), LicenseKey::generate().unwrap().reveal());
        assert_eq!(
            key_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn secrets_match_only_when_equal() {
        assert!(secrets_match("s3cret", "s3cret"));
        assert!(!secrets_match("s3cret", "s3creT"));
        assert!(!secrets_match("s3cre", "s3cret"));
        assert!(!secrets_match("", "s3cret"));
    }
}
