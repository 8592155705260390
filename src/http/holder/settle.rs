//! What the Worker settles of a holder's request before the holder's object is
//! asked, and the outcomes put back in the request's order after: the same for
//! the specified operations and for reports, each weighing the lists its way.

use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::net::address::{PublicIp, SubmittedIp};
use crate::domain::precedence::{Verdict, Weighing};
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::objects::operator_lists::client::published;
use crate::store::licenses::LicenseStatus;
use crate::store::StoreError;

/// How the Worker weighs a holder's addresses: the license as the isolate
/// remembers it (whether the holder has allow-list entries, when it was
/// issued), and the operator's lists in their precedence, from the snapshots
/// the isolate holds. The one wiring of the specified operations', the
/// reports' and the alerts' weighing.
pub struct Weigher<'a> {
    cx: &'a RequestContext,
    license: LicenseStatus,
}

impl<'a> Weigher<'a> {
    /// The weighing of the addresses of a license as the caller's proof read it.
    pub fn new(cx: &'a RequestContext, license: LicenseStatus) -> Self {
        Self { cx, license }
    }

    /// Which list governs `ip` for `weighing` (`precedence::verdict`).
    pub async fn verdict(
        &self,
        weighing: impl Into<Weighing>,
        ip: SubmittedIp,
    ) -> Result<Verdict, ApiError> {
        let (cx, allow_list) = (self.cx, self.license.allow_list);
        let verdict = published::verdict(
            &cx.env,
            weighing,
            ip,
            allow_list,
            cx.settings.objects.freshness,
            cx.now,
        );
        Ok(verdict.await?)
    }
}

/// Each address's verdict as far as the Worker can tell: validation, then the
/// operator's lists in their precedence for `weighing`, from the isolate's
/// snapshots. The request's other fields, when malformed (`details`), refuse it
/// once an address has passed validation, as they always have.
pub async fn settle<D>(
    cx: &RequestContext,
    license: LicenseStatus,
    weighing: Weighing,
    ips: &[String],
    details: &Result<D, ApiError>,
) -> Result<Vec<Verdict>, ApiError> {
    let weigher = Weigher::new(cx, license);
    let mut settled = Vec::with_capacity(ips.len());
    for raw in ips {
        let ip = match PublicIp::parse(raw, cx.settings.ipv6) {
            Ok(ip) => ip,
            Err(rejection) => {
                settled.push(Verdict::Refused(rejection.into()));
                continue;
            }
        };
        if let Err(error) = details {
            return Err(error.clone());
        }
        settled.push(weigher.verdict(weighing, ip).await?);
    }
    Ok(settled)
}

/// The outcomes in the request's order: each address the Worker answered, and
/// each the holder's object did, from `answers` in turn. The object answers every
/// address it was asked (each `Verdict::ForObject`), or the answer is a fault.
pub fn in_order<A>(
    settled: Vec<Verdict>,
    answers: Vec<A>,
    outcome: impl Fn(SubmittedIp, A) -> HolderOutcome,
) -> Result<Vec<HolderOutcome>, ApiError> {
    let asked = settled
        .iter()
        .filter(|settled| matches!(settled, Verdict::ForObject { .. }))
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
            Verdict::Refused(answered) | Verdict::Answered(_, answered) => Ok(answered),
            Verdict::ForObject { ip, .. } => answers
                .next()
                .map(|answer| outcome(ip, answer))
                .ok_or_else(|| miscounted(asked)),
        })
        .collect()
}
