//! One object per Cloudflare account, which every holder's object that pushes to
//! a list of that account asks before it sends a bulk operation: Cloudflare runs
//! one at a time per account, and refuses a second, so two licenses that connect
//! one account take turns. Its protocol, the object, and the client.

pub mod client;
#[cfg(feature = "objects")]
pub mod object;
pub mod protocol;
