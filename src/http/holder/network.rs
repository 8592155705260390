//! What the network says of an address, as a holder may see it: whether the
//! global list carries it by the holders' consensus, and how many licenses'
//! reports make that consensus, never which.

use serde::Serialize;
use worker::Request;

use crate::domain::holder::list::Operation;
use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::precedence::Governor;
use crate::http::auth::arrival::Arrival;
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::Reply;
use crate::objects::operator_lists::client::published;
use crate::objects::protocol::Failure;
use crate::objects::report_shard::client::report_shard_for;
use crate::objects::report_shard::protocol::TallyOf;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StandingView {
    ip: String,
    /// The global challenge list carries it (and the global allow list does not).
    global: bool,
    /// It is there because the holders' reports reached the consensus.
    promoted: bool,
    /// Distinct licenses that reported it within the window, whether their
    /// reports count or not: never which, nor from which networks, nor anything
    /// of a license's standing or of a canary.
    holders: u64,
    /// Since when the consensus holds, if it does.
    promoted_since: Option<String>,
}

/// `POST /api/networkStatus`: field `ip`. An address that is not public is
/// refused with the specified operations' message; past 120 lookups a minute
/// per license, 429 before the shard is asked.
pub async fn status(
    cx: &RequestContext,
    mut req: Request,
    // Proved by the route; the lookup's count proves the holder again where it
    // arrived, at the edge.
    _: HolderCaller,
) -> Result<Reply, ApiError> {
    let (env, settings, now) = (&cx.env, &cx.settings, cx.now);
    Arrival::Lookup.count(cx, &req).await?;
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let raw = body.field("ip").unwrap_or_default();
    let given = PublicIp::parse(&raw, settings.ipv6)
        .map_err(|rejection| ApiError::BadRequest(HolderOutcome::from(rejection).message()))?;
    let ip = given.ip;
    // Whether the global challenge list answers a check of it: the precedence's
    // to say, whatever the holder's own allow list holds (this is the network's
    // answer, the same for every holder).
    let checked = published::verdict(
        env,
        Operation::Check,
        given.clone(),
        false,
        settings.objects.freshness,
        now,
    );
    let global = checked.await?.governor() == Some(Governor::GlobalChallenge);
    // With IPV6_PREFIX 64, an IPv6 address is reported, and counted, as its /64.
    let subject = Listed::keys(ip, settings.ipv6_prefix).0;
    let tally = report_shard_for(env, subject)?
        .ask(TallyOf(subject, 0))
        .await
        .map_err(Failure::into_fault)?;
    Reply::json(
        200,
        &StandingView {
            ip: given.to_string(),
            global,
            promoted: global && tally.reached_at.is_some(),
            holders: tally.reported_by,
            promoted_since: tally.reached_at.map(|at| at.to_rfc3339()),
        },
    )
}
