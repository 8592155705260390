//! The three specified list operations, check, add and remove, one address at a
//! time or many in one request.

use worker::Request;

use crate::domain::holder::entry::EntryDetails;
use crate::domain::holder::list::{ListCall, Operation};
use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::holder::quota::Quota;
use crate::domain::precedence::Verdict;
use crate::domain::time::Millis;
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::holder::settle::{in_order, settle};
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::Perform;

/// A bulk request: a thousand addresses in a multipart form, with room to spare.
pub const MAX_BULK_BYTES: usize = 256 * 1024;

pub async fn single(
    operation: Operation,
    cx: &RequestContext,
    mut req: Request,
    holder: HolderCaller,
) -> Result<Reply, ApiError> {
    let now = cx.now;
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let ip = body.field("ip").unwrap_or_default();
    let details = match operation {
        Operation::Add => details(
            body.field("ttl"),
            body.field("expiresAt"),
            body.field("comment"),
            now,
        ),
        Operation::Check | Operation::Remove => Ok(EntryDetails::default()),
    };
    let client = req.headers().get("CF-Connecting-IP")?;
    let (mut outcomes, quota) = run(cx, &holder, operation, &[ip], details, client).await?;
    Ok(Reply::HolderOutcome(outcomes.remove(0), quota))
}

/// Many addresses, each answered exactly as the single operation would answer it,
/// with one call to the holder's object for all of them.
pub async fn bulk(
    operation: Operation,
    cx: &RequestContext,
    mut req: Request,
    holder: HolderCaller,
) -> Result<Reply, ApiError> {
    let now = cx.now;
    let body = Body::read(&mut req, &cx.ctx, MAX_BULK_BYTES).await?;
    let request = body.bulk()?;
    let details = match operation {
        Operation::Add => details(
            request.ttl.map(|ttl| ttl.to_string()),
            request.expires_at,
            request.comment,
            now,
        ),
        Operation::Check | Operation::Remove => Ok(EntryDetails::default()),
    };
    let client = req.headers().get("CF-Connecting-IP")?;
    let (outcomes, quota) = run(cx, &holder, operation, &request.ips, details, client).await?;
    Ok(Reply::Outcomes(outcomes, quota))
}

fn details(
    ttl: Option<String>,
    expires_at: Option<String>,
    comment: Option<String>,
    now: Millis,
) -> Result<EntryDetails, ApiError> {
    EntryDetails::parse(
        ttl.as_deref(),
        expires_at.as_deref(),
        comment.as_deref(),
        now.unix(),
    )
    .map_err(ApiError::BadRequest)
}

/// Steps in the order the specification fixes, for every address: validation, then
/// the lists in their precedence (`precedence::verdict`). Malformed details
/// (`ttl`, `expiresAt`, `comment`) refuse the request once an address has passed
/// validation, as they always have.
/// The operator's lists answer from the snapshots this isolate holds; what none of
/// them governs goes to the holder's object in one call. Returns an outcome per
/// address, in order, and the day's quota when the personal list answered.
async fn run(
    cx: &RequestContext,
    caller: &HolderCaller,
    operation: Operation,
    ips: &[String],
    details: Result<EntryDetails, ApiError>,
    client: Option<String>,
) -> Result<(Vec<HolderOutcome>, Option<Quota>), ApiError> {
    let settings = &cx.settings;
    let settled = settle(cx, caller.status, operation.into(), ips, &details).await?;
    let details = details.unwrap_or_default();
    let calls: Vec<ListCall> = settled
        .iter()
        .filter_map(|settled| match settled {
            &Verdict::ForObject {
                ref ip,
                global_challenge,
            } => Some(ListCall {
                operation,
                ip: ip.ip,
                prefix: settings.ipv6_prefix,
                details: details.clone(),
                client: client.clone(),
                global_challenge,
            }),
            Verdict::Refused(_) | Verdict::Answered(..) => None,
        })
        .collect();
    let answers = if calls.is_empty() {
        Vec::new()
    } else {
        holder(&cx.env, &caller.license)?
            .ask(Perform(calls))
            .await?
    };
    let quota = answers.last().and_then(|last| {
        last.usage
            .map(|usage| Quota::of(usage, last.limits, cx.now.unix()))
    });
    let outcomes = in_order(settled, answers, |ip, answer| {
        HolderOutcome::Personal(ip, answer.outcome)
    })?;
    Ok((outcomes, quota))
}
