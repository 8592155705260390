//! The runtime as the rest of the Worker uses it: the clock, the settings of the
//! environment, Cloudflare's API as a holder's object calls it (`cloudflare_api`),
//! request bodies as streams, the console below the HTTP layer, the
//! isolate's WebAssembly memory, and (in the test build) what a request costs in
//! billable calls.

pub mod clock;
#[cfg(feature = "objects")]
pub mod cloudflare_api;
pub mod config;
pub mod log;
pub mod memory;
pub mod meter;
pub mod stream;
