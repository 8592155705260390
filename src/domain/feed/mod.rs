//! What a firewall reads: the feed's items and blocks in their order, CrowdSec's
//! decisions, and the feed tokens that open a feed.

pub mod aggregate;
pub mod cap;
pub mod decision;
pub mod feed_token;
pub mod item;
