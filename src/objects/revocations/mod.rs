//! The revocations still to be told to holders' objects: their protocol, the
//! object, and the client the Worker calls it through.

pub mod client;
pub mod object;
pub mod protocol;
