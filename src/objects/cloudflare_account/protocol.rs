//! The calls a Cloudflare account's object takes: a turn to send a bulk
//! operation, and its end. It refuses nothing.

use serde::{Deserialize, Serialize};

use crate::domain::access::license::LicenseId;
use crate::domain::time::UnixTime;
use crate::objects::calls;
use crate::objects::protocol::{NoRefusal, Protocol};

pub enum CloudflareAccountProtocol {}

impl Protocol for CloudflareAccountProtocol {
    type Call = CloudflareAccountCall;
    type Refusal = NoRefusal;
}

calls!(CloudflareAccountProtocol => CloudflareAccountCall {
    TakeTurn => bool,
    EndTurn => (),
});

/// The account's turn for `license` until `until` (or longer, asked again):
/// answered whether it has it. A turn another license holds, unexpired, is not given.
#[derive(Debug, Serialize, Deserialize)]
pub struct TakeTurn {
    pub license: LicenseId,
    pub until: UnixTime,
}

/// `license`'s bulk operation ended: the turn goes to whoever asks next.
#[derive(Debug, Serialize, Deserialize)]
pub struct EndTurn(pub LicenseId);
