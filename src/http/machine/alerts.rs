//! `POST /v1/alerts`: what a CrowdSec engine's scenarios detected, as the
//! Local API takes it: a JSON array, gzipped or not, answered 201 with one id
//! per alert, as strings (the engine reads no numbers, and would send them again
//! for ever). Every alert is acknowledged, whatever it asks: a refusal would
//! block the engine's buffer for good, so what an alert changed is told by its
//! machine's counts, not by the answer.

use worker::Request;

use crate::domain::holder::list::Operation;
use crate::domain::machines::alert::{
    classify, skipped, AlertAdd, AlertCall, AlertIds, ClassifiedAlert,
};
use crate::domain::machines::posted::{
    Posted, PostedReader, Refused, MAX_BODY_BYTES, MAX_ELEMENTS,
};
use crate::domain::net::address::PublicIp;
use crate::domain::network::report::ReportCall;
use crate::domain::precedence::{Verdict, Weighing};
use crate::http::auth::caller::MachineCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::holder::settle::Weigher;
use crate::http::wire::body::stream_decoded;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::TakeAlerts;
use crate::store::canaries;

/// The alerts of one request, read as they stream in (`PostedReader`) and
/// leniently (`classify`), each weighed by
/// the operator's lists here, then all of them in one call to the holder's
/// object, which weighs its own allow list, applies each (`take_alert`) and
/// counts them; those past `MAX_ALERTS` are acknowledged and counted ignored.
pub async fn post(
    cx: &RequestContext,
    req: Request,
    machine: MachineCaller,
) -> Result<Reply, ApiError> {
    let (env, settings, _now) = (&cx.env, &cx.settings, cx.now);
    let mut reader = PostedReader::default();
    stream_decoded(&req, &cx.ctx, MAX_BODY_BYTES, |piece| {
        reader.push(piece).map_err(not_alerts)
    })
    .await?;
    let Posted { kept: sent, total } = reader.finish().map_err(not_alerts)?;
    if total == 0 {
        return Reply::json(201, &Vec::<String>::new());
    }
    let beyond = total - sent.len() as u64;
    let weigher = Weigher::new(cx, machine.status);
    let mut weighing = Weighed {
        weigher,
        canaries: Vec::new(),
    };
    let mut alerts = Vec::with_capacity(sent.len());
    let mut skips = Vec::new();
    for asked in classify(sent, settings.ipv6) {
        if let ClassifiedAlert::Ignored(skip) = asked {
            skips.push(skip);
        }
        alerts.push(weigh(cx, asked, &mut weighing).await?);
    }
    if let Some(note) = skipped(&skips, beyond) {
        cx.log.notes(note);
    }
    let call = TakeAlerts {
        license: machine.license.clone(),
        licensed_at: machine.status.created_at,
        canaries: weighing.canaries,
        machine: machine.machine,
        alerts,
        beyond,
        client: req.headers().get("CF-Connecting-IP")?,
    };
    let taken = holder(env, &machine.license)?.ask(call).await?;
    Reply::json(
        201,
        &AlertIds {
            first: taken.first,
            total,
        },
    )
}

fn not_alerts(refused: Refused) -> ApiError {
    match refused {
        Refused::NotAnArray(why) => {
            ApiError::BadRequest(format!("the body is not a JSON array of alerts: {why}"))
        }
        Refused::TooManyElements => ApiError::TooManyAlerts(MAX_ELEMENTS),
    }
}

/// What weighing a request's alerts needs and finds beside each alert: the
/// holder's weigher, and the canaries the detections name.
struct Weighed<'a> {
    weigher: Weigher<'a>,
    canaries: Vec<PublicIp>,
}

/// One alert as the holder's object takes it, once the operator's lists have
/// weighed its addresses as `reportIp` and `addIpToGreylist` weigh one: the
/// global allow list refuses both the report and the add, the global challenge
/// list the add only (its entries' reports keep them from decaying). The
/// holder's own allow list is its object's to weigh. A detection is a report:
/// the canaries are weighed before the lists, as a report's are.
async fn weigh(
    cx: &RequestContext,
    asked: ClassifiedAlert,
    weighing: &mut Weighed<'_>,
) -> Result<AlertCall, ApiError> {
    let prefix = cx.settings.ipv6_prefix;
    let mut call = AlertCall::default();
    match asked {
        ClassifiedAlert::Detection {
            ip,
            categories,
            remediation,
            scenario,
        } => {
            let canary = canaries::known(&cx.env, cx.settings.objects.freshness, cx.now)
                .await?
                .holds(ip);
            if canary && !weighing.canaries.contains(&ip) {
                weighing.canaries.push(ip);
            }
            let reported = weighing
                .weigher
                .verdict(Weighing::Report, ip.into())
                .await?;
            if reported.governor().is_some_and(|list| !list.challenges()) {
                // An allow list the Worker holds governs it: neither half is taken.
                return Ok(call);
            }
            call.report = Some(ReportCall {
                ip,
                prefix,
                categories,
                comment: scenario.clone(),
                canary,
            });
            if remediation {
                if let Verdict::ForObject {
                    global_challenge, ..
                } = weighing.weigher.verdict(Operation::Add, ip.into()).await?
                {
                    call.adds.push(AlertAdd {
                        ip,
                        prefix,
                        ttl: None,
                        comment: scenario,
                        global_challenge,
                    });
                }
            }
        }
        ClassifiedAlert::Decisions(decided) => {
            for decision in decided {
                if let Verdict::ForObject {
                    global_challenge, ..
                } = weighing
                    .weigher
                    .verdict(Operation::Add, decision.ip.into())
                    .await?
                {
                    call.adds.push(AlertAdd {
                        ip: decision.ip,
                        prefix,
                        ttl: Some(decision.seconds),
                        comment: decision.scenario,
                        global_challenge,
                    });
                }
            }
        }
        ClassifiedAlert::Ignored(_) => {}
    }
    Ok(call)
}
