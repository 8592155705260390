//! The greylist service, in layers that point one way: `domain` (the rules and
//! values) ← `platform` (the runtime's clock, settings, streams) and `store` (KV
//! and SQLite adapters) ← `objects` (the six Durable Objects and their typed
//! protocols) ← `http` (routes, wire formats, the one error mapping) ← this entry
//! point. `tests/layers.rs` fails when a module imports from a layer above its
//! own, or when two files import each other.

pub mod domain;
#[cfg(any(feature = "edge", feature = "manage"))]
pub mod http;
pub mod objects;
pub mod platform;
pub mod store;

#[cfg(any(feature = "edge", feature = "manage"))]
use worker::{event, Context, Env, Request, Response};

/// The Worker's entry. It sets no panic hook: `worker` sets its own when the
/// module starts, in an isolate that serves only objects as well, and it logs a
/// panic's message and place (`tests/api/faults.rs`).
#[cfg(any(feature = "edge", feature = "manage"))]
#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    http::handle(req, env, ctx).await
}
