//! What the Worker settles of a holder's request before the holder's object is
//! asked, and the outcomes put back in the request's order after: the same for
//! the specified operations and for reports, each weighing the lists its way.

use crate::domain::access::license::LicenseId;
use crate::domain::net::address::{GivenIp, PublicIp};
use crate::domain::personal::outcome::Outcome;
use crate::domain::precedence::{verdict, Verdict, Weighing};
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::objects::operator_lists::client as lists;
use crate::store::{licenses, StoreError};

/// Each address's verdict as far as the Worker can tell: validation, then the
/// operator's lists in their precedence for `weighing`, from the isolate's
/// snapshots. The request's other fields, when malformed (`details`), refuse it
/// once an address has passed validation, as they always have.
pub async fn settle<D>(
    cx: &RequestContext,
    license: &LicenseId,
    weighing: Weighing,
    ips: &[String],
    details: &Result<D, ApiError>,
) -> Result<Vec<Verdict>, ApiError> {
    let (env, settings, now) = (&cx.env, &cx.settings, cx.now);
    let freshness = settings.freshness;
    // As the edge authenticated the caller: the isolate remembers it.
    let own_allow_list = licenses::standing(env, license, freshness, now)
        .await?
        .allow_list;
    let mut settled = Vec::with_capacity(ips.len());
    for raw in ips {
        let ip = match PublicIp::parse(raw, settings.ipv6) {
            Ok(ip) => ip,
            Err(rejection) => {
                settled.push(Verdict::Answered(rejection.into()));
                continue;
            }
        };
        if let Err(error) = details {
            return Err(error.clone());
        }
        let holds =
            async |kind, ip: PublicIp| lists::contains(env, kind, ip.addr(), freshness, now).await;
        settled.push(verdict(weighing, ip, own_allow_list, holds).await?);
    }
    Ok(settled)
}

/// The outcomes in the request's order: each address the Worker answered, and
/// each the holder's object did, from `answers` in turn. The object answers every
/// address it was asked (each `Verdict::Personal`), or the answer is a fault.
pub fn in_order<A>(
    settled: Vec<Verdict>,
    answers: Vec<A>,
    outcome: impl Fn(GivenIp, A) -> Outcome,
) -> Result<Vec<Outcome>, ApiError> {
    let asked = settled
        .iter()
        .filter(|settled| matches!(settled, Verdict::Personal(..)))
        .count();
    let miscounted = |answered: usize| {
        ApiError::from(StoreError::Corrupt(format!(
            "the holder's object answered {answered} of {asked} addresses"
        )))
    };
    if answers.len() != asked {
        return Err(miscounted(answers.len()));
    }
    let mut answers = answers.into_iter();
    settled
        .into_iter()
        .map(|settled| match settled {
            Verdict::Answered(answered) => Ok(answered),
            Verdict::Personal(ip, _) => answers
                .next()
                .map(|answer| outcome(ip, answer))
                .ok_or_else(|| miscounted(asked)),
        })
        .collect()
}
