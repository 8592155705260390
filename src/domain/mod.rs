//! The rules and values of the service: plain Rust, no I/O, no HTTP, no `worker::`
//! types, time passed in; tested natively. In folders by concept; the rule of which
//! list governs an address for a holder is `precedence`, above them all.

pub mod access;
pub mod cloudflare;
pub mod code;
pub mod feed;
pub mod holder;
pub mod mac;
pub mod machines;
pub mod net;
pub mod network;
pub mod operator_lists;
pub mod page;
pub mod precedence;
pub mod settings;
pub mod time;
pub mod usage_metrics;
