//! The one writer of the operator's lists: its protocol, the object, and the
//! client the Worker calls it through.

pub mod client;
#[cfg(feature = "objects")]
pub mod object;
pub mod protocol;
