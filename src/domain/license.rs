//! License ids and keys. A key is a bearer secret: it exists at rest only as
//! its SHA-256 digest, and is shown once, when the license is created.

use sha2::{Digest, Sha256};

/// The public name of a license: the token's `sub` and the Durable Object's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LicenseId(String);

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
        let well_formed = hex_part.len() == 24
            && hex_part
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(s.to_owned()))
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

pub(super) fn random<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
