//! The greylist service. `domain` holds the rules as plain Rust, tested natively;
//! `http`, `store`, `stream` and the two Durable Objects are the Worker glue around it.

pub mod clock;
pub mod config;
pub mod domain;
pub mod holder_object;
pub mod http;
pub mod lists_object;
pub mod store;
pub mod stream;

use worker::{event, Context, Env, Request, Response};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    console_error_panic_hook::set_once();
    http::handle(req, env, ctx).await
}
