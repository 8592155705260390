//! The edge's forward of a management route (an edge built without the
//! `manage` feature, as it deploys): the request goes to the management Worker
//! as it came, through the `MANAGE` service binding, and its answer comes back
//! as that Worker gave it, its log line written there. The request is first
//! counted for what it arrived as (`Arrival`), which the management Worker,
//! without rate-limiting bindings, cannot: a flood past its count (of made-up
//! operator keys, of logins, of usage reports) never crosses.

use worker::{Request, Response};

use super::auth::arrival::Arrival;
use super::context::RequestContext;
use super::error::ApiError;

/// The service binding to the management Worker (deploy/workers.mjs writes it).
const MANAGE: &str = "MANAGE";

pub async fn forward(
    cx: &RequestContext,
    req: Request,
    arrival: Option<Arrival>,
) -> Result<Response, ApiError> {
    if let Some(arrival) = arrival {
        arrival.count(cx, &req).await?;
    }
    let manage = cx
        .env
        .service(MANAGE)
        .map_err(|e| ApiError::Internal(format!("the {MANAGE} binding: {e}")))?;
    manage
        .fetch_request(req)
        .await
        .map_err(|e| ApiError::Internal(format!("the management Worker: {e}")))
}
