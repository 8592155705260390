//! The floor worker: what the runtime costs before the service does anything.

use worker::{durable_object, event, Context, DurableObject, Env, Request, Response, Result, State};

#[durable_object]
pub struct Empty;

impl DurableObject for Empty {
    fn new(_state: State, _env: Env) -> Self {
        Self
    }

    async fn fetch(&self, _req: Request) -> Result<Response> {
        Response::ok("ok")
    }
}

/// Reads the body as the service does: workerd closes a keep-alive connection
/// whose request body was left unread, which would make the floor slower, not faster.
#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    req.bytes().await?;
    match req.path().as_str() {
        "/do" => env.durable_object("EMPTY")?.get_by_name("floor")?.fetch_with_str("https://empty/").await,
        _ => Response::ok("ok"),
    }
}
