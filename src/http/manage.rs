//! The edge's forward of a management route (an edge built without the
//! `manage` feature, as it deploys): the request goes to the management Worker
//! as it came, through the `MANAGE` service binding, and its answer comes back
//! as that Worker gave it, its log line written there. What the edge refuses
//! alone it refuses first: an operator call without `ADMIN_TOKEN` past its
//! client's count, so that a flood of made-up keys never crosses.

use worker::{Request, Response};

use super::auth::caller;
use super::context::RequestContext;
use super::error::ApiError;

/// The service binding to the management Worker (deploy/workers.mjs writes it).
const MANAGE: &str = "MANAGE";

pub async fn forward(
    cx: &RequestContext,
    req: Request,
    operator: bool,
) -> Result<Response, ApiError> {
    if operator {
        caller::count_operator_client(cx, &req).await?;
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
