//! The one place the Worker reads the clock; the rules in `domain` take time as an argument.
//!
//! Production reads the runtime's clock and nothing else: no request can move it.
//! A build with the `test-hooks` feature (built into `build-test/`, never the
//! folder `wrangler deploy` uploads) adds an offset that the end-to-end tests set
//! through `/__test/clock`; the Worker hands it to its Durable Objects on every
//! call, so that the whole service sees the same moment.

use worker::js_sys::Date;

use crate::domain::time::Millis;

/// `Date.now()`: one call into the runtime, where `worker::Date::now()` makes a
/// `Date` object and asks it its time.
pub fn now() -> Millis {
    Millis((Date::now() as u64).saturating_add_signed(shift::offset_ms()))
}

#[cfg(not(feature = "test-hooks"))]
mod shift {
    pub fn offset_ms() -> i64 {
        0
    }
}

#[cfg(not(feature = "test-hooks"))]
pub fn adopt(_req: &worker::Request) -> worker::Result<()> {
    Ok(())
}

/// The header a call to a Durable Object carries the clock in: none here.
#[cfg(not(feature = "test-hooks"))]
pub fn offset_header() -> Option<(&'static str, String)> {
    None
}

#[cfg(feature = "test-hooks")]
mod shift {
    use std::cell::Cell;

    thread_local! {
        static OFFSET_MS: Cell<i64> = const { Cell::new(0) };
    }

    pub fn offset_ms() -> i64 {
        OFFSET_MS.get()
    }

    pub fn set(offset_ms: i64) {
        OFFSET_MS.set(offset_ms);
    }
}

/// The header a call to a Durable Object carries the test clock's offset in.
#[cfg(feature = "test-hooks")]
const OFFSET_HEADER: &str = "X-Test-Clock-Offset";

/// Sets the test clock: from now on it reads `offset_ms` ahead of the runtime's.
#[cfg(feature = "test-hooks")]
pub fn set_offset(offset_ms: i64) {
    shift::set(offset_ms);
}

#[cfg(feature = "test-hooks")]
pub fn offset_ms() -> i64 {
    shift::offset_ms()
}

/// A Durable Object takes the offset its caller sent, so that it reads the same time.
#[cfg(feature = "test-hooks")]
pub fn adopt(req: &worker::Request) -> worker::Result<()> {
    if let Some(offset) = req
        .headers()
        .get(OFFSET_HEADER)?
        .and_then(|v| v.parse().ok())
    {
        shift::set(offset);
    }
    Ok(())
}

/// The header a call to a Durable Object carries the offset in.
#[cfg(feature = "test-hooks")]
pub fn offset_header() -> Option<(&'static str, String)> {
    Some((OFFSET_HEADER, shift::offset_ms().to_string()))
}
