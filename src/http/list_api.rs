//! The three specified list operations: check, add, remove.

use futures_util::future::join;
use worker::{Date, Env, Request};

use super::auth;
use super::body;
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::config;
use crate::domain::holder::{Operation, UnixTime};
use crate::domain::ipv4::PublicIpv4;
use crate::domain::outcome::Outcome;
use crate::store::{allow_list, global_list, holders};

/// Steps in the order decisions.md fixes: token, validation, allow list, then the
/// lists, where the global list wins over the personal one.
pub async fn handle(operation: Operation, mut req: Request, env: &Env, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let now_ms = Date::now().as_millis();
    let license = auth::license_holder(&req, env, UnixTime(now_ms / 1000)).await?;
    log.license = Some(license.clone());

    let submitted = body::form_field(&mut req, "ip").await?.unwrap_or_default();
    let ip = match PublicIpv4::parse(&submitted) {
        Ok(ip) => ip,
        Err(rejection) => return Ok(Reply::Outcome(rejection.into())),
    };
    let cache_seconds = config::cache_seconds(env);
    if allow_list::load(env, cache_seconds, now_ms).await?.contains(ip.addr()) {
        return Ok(Reply::Outcome(Outcome::AllowListed(ip)));
    }

    let on_global = global_list::contains(env, ip, cache_seconds);
    let personal = holders::call(env, &license, operation, ip);
    let outcome = match operation {
        // Both reads at once: the personal answer is only needed when the global one is no.
        Operation::Check => match join(on_global, personal).await {
            (Ok(true), _) => Outcome::ListedGlobal(ip),
            (Ok(false), personal) => Outcome::Personal(ip, personal?),
            (Err(e), _) => return Err(e),
        },
        // An address on the global list is never added, so its object is not called.
        Operation::Add => match on_global.await? {
            true => Outcome::AlreadyGlobal(ip),
            false => Outcome::Personal(ip, personal.await?),
        },
        Operation::Remove => Outcome::Personal(ip, personal.await?),
    };
    Ok(Reply::Outcome(outcome))
}
