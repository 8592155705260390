//! `POST /v1/usage-metrics`: what CrowdSec's bouncers and engines report of
//! themselves, taken as the Local API takes it: a bouncer with its feed token
//! in `X-Api-Key` (its `remediation_components`), an engine with its machine
//! token (its `log_processors`); 201 without a body. The caller is named by its
//! headers before the body is read (`caller::reporter`), counted as it arrives
//! (`Arrival::Report`: per client, then in its token's or machine's poll
//! budget, which its pulls or alerts share), and proved after the body: a
//! payload that does not parse is refused (400) before anything is read, and
//! the body is inflated only up to its limit. Each report is one call to the
//! holder's object.

use worker::{Request, Response};

use crate::domain::usage_metrics::{parse, UsageReport, MAX_BODY_BYTES};
use crate::http::auth::arrival::Arrival;
use crate::http::auth::caller::{self, bouncer_refusal, machine_refusal, Poll, ReporterCaller};
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::Body;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::RecordUsage;

/// A report, then its reporter proved and counted, then kept by its holder's
/// object on the feed token or machine it came with.
pub async fn post(
    cx: &RequestContext,
    mut req: Request,
    ReporterCaller(reporter): ReporterCaller,
) -> Result<Reply, ApiError> {
    // The body is read before its reporter is proved: counted first, per
    // client and in its credential's budget.
    Arrival::Report.count(cx, &req).await?;
    let body = Body::read_decoded(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let report = parse(body.bytes(), reporter).map_err(ApiError::BadRequest)?;
    match report {
        UsageReport::Bouncer(report) => {
            let bouncer = caller::bouncer(cx, &req, Poll::Counted).await?;
            let call = RecordUsage::Bouncer {
                token: bouncer.token,
                report,
            };
            holder(&cx.env, &bouncer.license)?
                .ask(call)
                .await
                .map_err(|failure| bouncer_refusal(failure.into()))?;
        }
        UsageReport::Engine(report) => {
            let machine = caller::machine(cx, &req, Poll::Counted).await?;
            let call = RecordUsage::Engine {
                machine: machine.machine,
                report,
            };
            holder(&cx.env, &machine.license)?
                .ask(call)
                .await
                .map_err(|failure| machine_refusal(failure.into()))?;
        }
    }
    Ok(Reply::Built(Response::empty()?.with_status(201)))
}
