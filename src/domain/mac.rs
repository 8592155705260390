//! HMAC-SHA-256 under a key of any length: what signs access and machine tokens
//! (`access/token.rs`) and seals a holder's Cloudflare token (`cloudflare/seal.rs`).

use hmac::Hmac;
pub use hmac::Mac;
use sha2::Sha256;

pub type HmacSha256 = Hmac<Sha256>;

/// A MAC under `key`, to be fed and finished.
pub fn keyed(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length")
}
