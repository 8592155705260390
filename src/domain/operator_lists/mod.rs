//! The operator's lists, the global challenge list and the global allow list: the
//! entries they take, how their writer keeps them (chunks) and publishes them
//! (versions, shards cut where the version before was cut), and what changed
//! between two versions.

pub mod chunk;
pub mod cut;
pub mod delta;
pub mod list;
pub mod publication;
pub mod snapshot;
