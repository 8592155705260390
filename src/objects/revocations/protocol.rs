//! The calls the revocations' object takes. It refuses nothing: a revocation is
//! recorded, whatever happens to the holder's object.

use serde::{Deserialize, Serialize};

use crate::domain::access::license::LicenseId;
use crate::objects::calls;
use crate::objects::protocol::Protocol;

pub enum RevocationsProtocol {}

impl Protocol for RevocationsProtocol {
    type Call = RevocationsCall;
    type Refusal = NoRefusal;
}

calls!(RevocationsProtocol => RevocationsCall {
    Notify => (),
    #[cfg(feature = "test-hooks")]
    FailNextNotice => (),
    #[cfg(feature = "test-hooks")]
    RunAlarm => usize,
});

/// This object refuses nothing.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum NoRefusal {}

/// The license is revoked (its record in KV says so already): its holder's
/// object is to be told, now or, should that fail, by the alarm until it is.
/// Answered once the revocation is recorded, told or not.
#[derive(Debug, Serialize, Deserialize)]
pub struct Notify(pub LicenseId);

/// Makes the next notice to a holder's object fail (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailNextNotice;

/// Runs the alarm now; answers how many revocations are still pending (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct RunAlarm;
