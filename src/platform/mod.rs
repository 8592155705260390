//! The runtime as the rest of the Worker uses it: the clock, the settings of the
//! environment, request bodies as streams.

pub mod clock;
pub mod config;
pub mod stream;
