//! The machine routes with nothing behind them: the engine's heartbeat, which
//! says only that its token still stands, and the Local API's allow lists,
//! which this service does not keep. An engine only warns on their 404, so it
//! is answered with a message, to anyone, before any credential is read: there
//! is nothing behind it to guard.

use serde_json::json;
use worker::Request;

use crate::http::auth::caller::MachineCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::reply::Reply;

/// `GET /v1/heartbeat`, every minute from each engine: its token was checked
/// (a KV record remembered by the isolate), and nothing is written.
pub async fn heartbeat(
    _: &RequestContext,
    _: Request,
    _: MachineCaller,
) -> Result<Reply, ApiError> {
    Reply::json(200, &json!({}))
}

/// `GET /v1/allowlists`: CrowdSec's allow lists, which this service does not keep.
pub async fn allowlists(_: &RequestContext, _: Request) -> Result<Reply, ApiError> {
    Err(ApiError::NotOffered(
        "Not found: this service keeps no CrowdSec allowlists; see /api/listAllowlist",
    ))
}
