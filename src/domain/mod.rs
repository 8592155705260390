//! The rules and values of the service: plain Rust, no I/O, no HTTP, no `worker::`
//! types, time passed in; tested natively.

pub mod activity;
pub mod address;
pub mod audit;
pub mod chunk;
pub mod code;
pub mod cut;
pub mod decision;
pub mod delta;
pub mod entry;
pub mod family;
pub mod feed;
pub mod feed_token;
pub mod holder;
pub mod intervals;
pub mod ip_list;
pub mod ipv4;
pub mod ipv6;
pub mod license;
pub mod operator;
pub mod outcome;
pub mod page;
pub mod precedence;
pub mod publication;
pub mod quota;
pub mod range;
pub mod settings;
pub mod snapshot;
pub mod time;
pub mod token;
