//! A holder's Cloudflare API token, sealed at rest under `CLOUDFLARE_TOKEN_KEY`:
//! HMAC-SHA-256 as a keystream over a random nonce, then HMAC-SHA-256 over the
//! nonce and the ciphertext (encrypt, then authenticate), each with a key of its
//! own derived from the secret. Built from the HMAC the service already carries
//! for its access tokens (`domain/mac.rs`): no cipher crate, nothing added to the module.

use super::connection::ApiToken;
use crate::domain::mac::{keyed, HmacSha256, Mac};

/// The layout's version, first of the sealed bytes.
const VERSION: u8 = 1;
pub const NONCE_BYTES: usize = 16;
const TAG_BYTES: usize = 32;

/// The secret a token is sealed under, as its two derived keys.
pub struct SealingKey {
    encrypt: [u8; 32],
    authenticate: [u8; 32],
}

fn derive(secret: &[u8], label: &[u8]) -> [u8; 32] {
    let mut m = keyed(secret);
    m.update(label);
    m.finalize().into_bytes().into()
}

impl SealingKey {
    pub fn new(secret: &str) -> Self {
        Self {
            encrypt: derive(secret.as_bytes(), b"greylist cloudflare token: encrypt"),
            authenticate: derive(
                secret.as_bytes(),
                b"greylist cloudflare token: authenticate",
            ),
        }
    }

    /// The token's bytes XORed with the keystream of `nonce`.
    fn apply(&self, nonce: &[u8], bytes: &mut [u8]) {
        for (counter, chunk) in bytes.chunks_mut(32).enumerate() {
            let mut m = keyed(&self.encrypt);
            m.update(nonce);
            m.update(&(counter as u32).to_be_bytes());
            let block = m.finalize().into_bytes();
            for (byte, key) in chunk.iter_mut().zip(block) {
                *byte ^= key;
            }
        }
    }

    fn tag(&self, sealed: &[u8]) -> HmacSha256 {
        let mut m = keyed(&self.authenticate);
        m.update(sealed);
        m
    }

    /// The token sealed with a fresh `nonce`: version, nonce, ciphertext, tag.
    pub fn seal(&self, token: &ApiToken, nonce: [u8; NONCE_BYTES]) -> Vec<u8> {
        let mut sealed = vec![VERSION];
        sealed.extend_from_slice(&nonce);
        let mut text = token.expose().as_bytes().to_vec();
        self.apply(&nonce, &mut text);
        sealed.extend_from_slice(&text);
        let tag = self.tag(&sealed).finalize().into_bytes();
        sealed.extend_from_slice(&tag);
        sealed
    }

    /// The token, if `sealed` was sealed under this key and not changed since.
    pub fn open(&self, sealed: &[u8]) -> Option<ApiToken> {
        if sealed.len() < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] != VERSION {
            return None;
        }
        let (body, tag) = sealed.split_at(sealed.len() - TAG_BYTES);
        self.tag(body).verify_slice(tag).ok()?;
        let (nonce, text) = body[1..].split_at(NONCE_BYTES);
        let mut text = text.to_vec();
        self.apply(nonce, &mut text);
        ApiToken::parse(std::str::from_utf8(&text).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_under_its_key_only_and_never_shows_in_what_is_kept() {
        let token = ApiToken::parse(&"T0kEn-".repeat(12)).unwrap();
        let key = SealingKey::new("the operator's secret of thirty-two bytes");
        let sealed = key.seal(&token, [7; NONCE_BYTES]);
        assert_eq!(key.open(&sealed), Some(token.clone()));
        assert!(
            !sealed.windows(6).any(|w| w == b"T0kEn-"),
            "no plain text kept"
        );
        assert_ne!(
            sealed,
            key.seal(&token, [8; NONCE_BYTES]),
            "each nonce seals apart"
        );
        let other = SealingKey::new("another secret of thirty-two bytes!!");
        assert_eq!(other.open(&sealed), None, "another key opens nothing");
        for at in [0, 5, 20, sealed.len() - 1] {
            let mut changed = sealed.clone();
            changed[at] ^= 1;
            assert_eq!(
                key.open(&changed),
                None,
                "a changed byte at {at} is refused"
            );
        }
        assert_eq!(key.open(&sealed[..10]), None);
    }
}
