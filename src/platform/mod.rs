//! The runtime as the rest of the Worker uses it: the clock, the settings of the
//! environment, request bodies as streams.

pub mod clock;
pub mod config;
#[cfg(feature = "test-hooks")]
pub mod memory;
pub mod stream;
