//! The object that revokes licenses, and writes their records in KV, with the
//! revocations still to be told to holders' objects and filed in the directory:
//! its protocol, the object, and the client the Worker calls it through.

pub mod client;
#[cfg(feature = "objects")]
pub mod object;
pub mod protocol;
