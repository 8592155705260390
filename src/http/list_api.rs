//! The three specified list operations: check, add, remove.

use futures_util::future::join;
use worker::{Context, Env, Request};

use super::auth;
use super::body::Body;
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::{clock, config};
use crate::domain::entry::EntryDetails;
use crate::domain::holder::{Call, Operation};
use crate::domain::ipv4::PublicIpv4;
use crate::domain::outcome::Outcome;
use crate::domain::quota::rate_limit_headers;
use crate::domain::time::UnixTime;
use crate::store::{allow_list, global_list, holders};

/// Steps in the order decisions.md fixes: token, validation, allow list, then the
/// lists, where the global list wins over the personal one.
pub async fn handle(operation: Operation, mut req: Request, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let now_ms = clock::now_ms();
    let now = UnixTime(now_ms / 1000);
    let license = auth::license_holder(&req, env, now, log).await?;

    let body = Body::read(&mut req, ctx).await?;
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
    if allow_list::load(env, config::settings(env)?.freshness, now_ms).await?.contains(ip.addr()) {
        return Ok(Reply::Outcome(Outcome::AllowListed(ip), None));
    }

    let call = Call { operation, ip, details, client: req.headers().get("CF-Connecting-IP")? };
    let on_global = global_list::contains(env, ip);
    let personal = holders::apply(env, &license, &call);
    let answer = match operation {
        // Both reads at once: the personal answer is only needed when the global one is no.
        Operation::Check => match join(on_global, personal).await {
            (Ok(true), _) => return Ok(Reply::Outcome(Outcome::ListedGlobal(ip), None)),
            (Ok(false), personal) => personal?,
            (Err(e), _) => return Err(e),
        },
        // An address on the global list is never added, so its object is not called.
        Operation::Add => match on_global.await? {
            true => return Ok(Reply::Outcome(Outcome::AlreadyGlobal(ip), None)),
            false => personal.await?,
        },
        Operation::Remove => personal.await?,
    };
    let quota = answer.usage.map(|usage| rate_limit_headers(usage, answer.limits, now));
    Ok(Reply::Outcome(Outcome::Personal(ip, answer.outcome), quota))
}
