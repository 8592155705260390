//! The three specified list operations: check, add, remove.

use worker::{Context, Env, Request};

use super::auth;
use super::body::{Body, MAX_BODY_BYTES};
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::{clock, config};
use crate::domain::entry::EntryDetails;
use crate::domain::holder::{Call, Operation};
use crate::domain::ip_list::ListKind;
use crate::domain::ipv4::PublicIpv4;
use crate::domain::outcome::Outcome;
use crate::domain::quota::rate_limit_headers;
use crate::domain::time::UnixTime;
use crate::store::{holders, lists};

/// Steps in the order decisions.md fixes: token, validation, allow list, then the
/// lists, where the global list wins over the personal one.
pub async fn handle(operation: Operation, mut req: Request, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let now_ms = clock::now_ms();
    let now = UnixTime(now_ms / 1000);
    let license = auth::license_holder(&req, env, now, log).await?;

    let body = Body::read(&mut req, ctx, MAX_BODY_BYTES).await?;
    let ip = match PublicIpv4::parse(&body.field("ip").unwrap_or_default()) {
        Ok(ip) => ip,
        Err(rejection) => return Ok(Reply::Outcome(rejection.into(), None)),
    };
    let details = match operation {
        Operation::Add => EntryDetails::parse(
            body.field("ttl").as_deref(),
            body.field("expiresAt").as_deref(),
            body.field("comment").as_deref(),
            now,
        )
        .map_err(ApiError::BadRequest)?,
        Operation::Check | Operation::Remove => EntryDetails::default(),
    };
    // Both lists answer from the snapshots this isolate holds: no I/O once warm.
    let freshness = config::settings(env)?.freshness;
    if lists::contains(env, ListKind::Allow, ip.addr(), freshness, now_ms).await? {
        return Ok(Reply::Outcome(Outcome::AllowListed(ip), None));
    }
    if operation != Operation::Remove && lists::contains(env, ListKind::Global, ip.addr(), freshness, now_ms).await? {
        let outcome = if operation == Operation::Add { Outcome::AlreadyGlobal(ip) } else { Outcome::ListedGlobal(ip) };
        return Ok(Reply::Outcome(outcome, None));
    }

    let call = Call { operation, ip, details, client: req.headers().get("CF-Connecting-IP")? };
    let answer = holders::apply(env, &license, &call).await?;
    let quota = answer.usage.map(|usage| rate_limit_headers(usage, answer.limits, now));
    Ok(Reply::Outcome(Outcome::Personal(ip, answer.outcome), quota))
}
