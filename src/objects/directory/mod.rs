//! The operator's directory: licenses with their labels, the named operator keys
//! and the audit log. Its protocol, the object, and the client the Worker calls it through.

pub mod client;
#[cfg(feature = "objects")]
pub mod object;
pub mod protocol;
