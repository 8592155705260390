//! The holder's own Cloudflare edge: `PUT /api/cloudflare` connects their
//! account (the list the service keeps in sync with what they challenge, and
//! with a zone, the rule that challenges it), `GET` says how the sync stands,
//! `DELETE` stops it and forgets the token. Cloudflare's refusals are answered
//! in Cloudflare's own words; the token is never in an answer.

use worker::Request;

use crate::domain::cloudflare::connection::{Connect, ConnectFields};
use crate::domain::cloudflare::link::ConnectRefusal;
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::form::query_of;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{CloudflareConnect, CloudflareDisconnect, CloudflareState};

fn refused(refusal: ConnectRefusal, list_name: &str) -> ApiError {
    match refusal {
        ConnectRefusal::Off => ApiError::Unavailable(
            "the Cloudflare sync is off: the operator has not set CLOUDFLARE_TOKEN_KEY".to_owned(),
        ),
        ConnectRefusal::Cloudflare {
            status,
            code,
            message,
        } => ApiError::BadRequest(match code {
            Some(code) => format!("Cloudflare refused the request ({status}, error {code}): {message}"),
            None => format!("Cloudflare refused the request ({status}): {message}"),
        }),
        ConnectRefusal::NotAnIpList => ApiError::Conflict(format!(
            "the account's list {list_name:?} is not a list of IP addresses: give another listName"
        )),
        ConnectRefusal::Taken { items } => ApiError::Conflict(format!(
            "the account's list {list_name:?} already holds {items} items this service did not put there: \
             give another listName, or \"takeOver\": true to make it this service's (its other items are then removed)"
        )),
    }
}

/// `PUT /api/cloudflare`: connects, or connects again (the old list stays as it is).
pub async fn connect(
    cx: &RequestContext,
    mut req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let fields: ConnectFields = body.json().map_err(|e| {
        ApiError::BadRequest(format!(
            "the body is not a Cloudflare connection's fields: {e}"
        ))
    })?;
    let connect = Connect::parse(&fields).map_err(ApiError::BadRequest)?;
    let list_name = connect.list_name.as_str().to_owned();
    let object = holder(&cx.env, &license)?;
    match object.ask(CloudflareConnect { license, connect }).await? {
        Ok(status) => Reply::json(200, &status),
        Err(refusal) => Err(refused(refusal, &list_name)),
    }
}

/// `GET /api/cloudflare`: connected or not, and how the sync stands.
pub async fn status(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    Reply::json(200, &holder(&cx.env, &license)?.ask(CloudflareState).await?)
}

/// `DELETE /api/cloudflare[?deleteList=1]`: the sync stops and the token is
/// forgotten; the list stays in the account unless asked to go.
pub async fn disconnect(
    cx: &RequestContext,
    req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    // The runtime's URL text, not `Request::url`, whose parser is a tenth of the module.
    let url = req.inner().url();
    let delete_list = form_urlencoded::parse(query_of(&url).as_bytes())
        .any(|(key, value)| key == "deleteList" && matches!(value.as_ref(), "1" | "true"));
    match holder(&cx.env, &license)?
        .ask(CloudflareDisconnect { delete_list })
        .await?
    {
        Ok(status) => Reply::json(200, &status),
        Err(refusal) => Err(refused(refusal, "")),
    }
}
