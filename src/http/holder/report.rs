//! Reports of attackers from the holder's own tools: one address, or many in one
//! request, each answered in the style of the specified operations. A report
//! changes nothing on the holder's lists; the holder's object counts it against
//! the day's reports and sends it on to the shard that counts its address.

use worker::Request;

use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::net::address::PublicIp;
use crate::domain::network::report::{self, Categories, ReportCall};
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::precedence::{Verdict, Weighing};
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::holder::operations::MAX_BULK_BYTES;
use crate::http::holder::settle::{in_order, settle};
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::Report;
use crate::store::canaries;

/// `POST /api/reportIp`: fields `ip`, optional `categories` and `comment`.
pub async fn single(
    cx: &RequestContext,
    mut req: Request,
    caller: HolderCaller,
) -> Result<Reply, ApiError> {
    let from = from(&req)?;
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let ip = body.field("ip").unwrap_or_default();
    let details = details(body.field("categories"), body.field("comment"));
    let mut outcomes = run(cx, (caller, from), &[ip], details).await?;
    Ok(Reply::HolderOutcome(outcomes.remove(0), None))
}

/// `POST /api/reportIps`: many addresses, as the bulk adds take them, each
/// answered as the single report would answer it, in one call to the object.
pub async fn bulk(
    cx: &RequestContext,
    mut req: Request,
    caller: HolderCaller,
) -> Result<Reply, ApiError> {
    let from = from(&req)?;
    let body = Body::read(&mut req, &cx.ctx, MAX_BULK_BYTES).await?;
    let request = body.bulk()?;
    let details = details(request.categories, request.comment);
    let outcomes = run(cx, (caller, from), &request.ips, details).await?;
    Ok(Reply::Outcomes(outcomes, None))
}

/// What every address of a report gets: its categories and comment.
fn details(
    categories: Option<String>,
    comment: Option<String>,
) -> Result<(Categories, Option<String>), ApiError> {
    let categories = Categories::parse(categories.as_deref().unwrap_or_default())
        .map_err(ApiError::BadRequest)?;
    let comment = report::comment(comment.as_deref()).map_err(ApiError::BadRequest)?;
    Ok((categories, comment))
}

/// The network a request's reports come from: its client's, as the edge names it.
fn from(req: &Request) -> Result<ReporterNetwork, ApiError> {
    let client = req.headers().get("CF-Connecting-IP")?;
    Ok(ReporterNetwork::of_client(client.as_deref()))
}

/// The steps of the specified operations, for every address: validation, then
/// the lists in their precedence (`Weighing::Report`: either allow list refuses
/// it; the global list does not, whose entries' reports keep them from
/// decaying). Malformed categories or a long comment refuse the request once an
/// address has passed validation, as an add's details do. The canaries are
/// weighed before the lists: a report of one is answered as the lists answer
/// it, and the holder's object is told, which suspends the license; nothing in
/// the answer says so.
async fn run(
    cx: &RequestContext,
    (caller, network): (HolderCaller, ReporterNetwork),
    ips: &[String],
    details: Result<(Categories, Option<String>), ApiError>,
) -> Result<Vec<HolderOutcome>, ApiError> {
    let (env, settings, now) = (&cx.env, &cx.settings, cx.now);
    let settled = settle(cx, caller.status, Weighing::Report, ips, &details).await?;
    let (categories, comment) = details.unwrap_or_default();
    let public: Vec<PublicIp> = settled.iter().filter_map(Verdict::public_ip).collect();
    let canaries = match public.is_empty() {
        true => Vec::new(),
        false => {
            let known = canaries::known(env, settings.objects.freshness, now).await?;
            public.into_iter().filter(|&ip| known.holds(ip)).collect()
        }
    };
    let calls: Vec<ReportCall> = settled
        .iter()
        .filter_map(|settled| match settled {
            Verdict::ForObject { ip: given, .. } => Some(ReportCall {
                ip: given.ip,
                prefix: settings.ipv6_prefix,
                categories,
                comment: comment.clone(),
                canary: canaries.contains(&given.ip),
            }),
            Verdict::Refused(_) | Verdict::Answered(..) => None,
        })
        .collect();
    let answers = if calls.is_empty() && canaries.is_empty() {
        Vec::new()
    } else {
        holder(env, &caller.license)?
            .ask(Report {
                license: caller.license,
                licensed_at: caller.status.created_at,
                network,
                calls,
                canaries,
            })
            .await?
    };
    in_order(settled, answers, |ip, answer| {
        HolderOutcome::Report(ip, answer.outcome)
    })
}
