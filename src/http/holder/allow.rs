//! The holder's own allow list: check, add and remove an address or range, in
//! the style of the specified operations, and its pages.

use serde::Serialize;
use worker::Request;

use crate::domain::holder::allow::{AllowCall, AllowEntry, AllowOutcome};
use crate::domain::holder::allow_range::AllowRange;
use crate::domain::holder::entry::EntryDetails;
use crate::domain::holder::list::Operation;
use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::holder::quota::Quota;
use crate::domain::operator_lists::list::ListKind;
use crate::domain::page::{counted, AllowCursor, PageCursor};
use crate::domain::precedence::global_allow_holds_range;
use crate::domain::time::UnixTime;
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::holder::browse::page_query;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::{to_json, Listing, Reply};
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{AllowPage, AllowPerform};
use crate::objects::operator_lists::client::published;

/// `checkIpOnAllowlist`, `addIpToAllowlist`, `deleteIpFromAllowlist`: the
/// steps of the specified operations, in their order: validation (an address or
/// a range), the operator's allow list, then the holder's object.
pub async fn single(
    operation: Operation,
    cx: &RequestContext,
    mut req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let raw = body.field("ip").unwrap_or_default();
    let given = match AllowRange::parse(&raw, cx.settings.ipv6) {
        Ok(given) => given,
        Err(rejection) => return Ok(Reply::HolderOutcome(rejection.into(), None)),
    };
    let shown = given.to_string();
    let (env, freshness, now) = (&cx.env, cx.settings.objects.freshness, cx.now);
    let allow = published::intervals(env, ListKind::Allow, freshness, now).await?;
    if global_allow_holds_range((&allow.v4, &allow.v6), given.range) {
        let outcome = HolderOutcome::Allow(shown, AllowOutcome::GlobalAllowListed);
        return Ok(Reply::HolderOutcome(outcome, None));
    }
    let comment = match operation {
        Operation::Add => {
            EntryDetails::parse(None, None, body.field("comment").as_deref(), cx.now.unix())
                .map_err(ApiError::BadRequest)?
                .comment
        }
        Operation::Check | Operation::Remove => None,
    };
    let call = AllowCall {
        operation,
        range: given.range,
        comment,
        client: req.headers().get("CF-Connecting-IP")?,
    };
    let answer = holder(&cx.env, &license)?
        .ask(AllowPerform { license, call })
        .await?;
    let quota = answer
        .usage
        .map(|usage| Quota::of(usage, answer.limits, cx.now.unix()));
    Ok(Reply::HolderOutcome(
        HolderOutcome::Allow(shown, answer.outcome),
        quota,
    ))
}

/// `listAllowlist`: the holder's allow-list entries, newest first, a page at a time.
pub async fn list(
    cx: &RequestContext,
    req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let query = page_query::<AllowCursor>(req, &cx.ctx, false).await?;
    let page = holder(&cx.env, &license)?.ask(AllowPage(query)).await?;
    Ok(Reply::Listing(Listing {
        message: counted(page.total, "entry", "entries"),
        lines: page.rows.iter().map(|e| e.range.to_string()).collect(),
        entries: to_json(page.rows.iter().map(AllowView::of).collect::<Vec<_>>())?,
        cursor: page.next.map(|c| c.encode()),
    }))
}

/// An allow-list entry as the API shows it: its range in canonical form.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AllowView<'a> {
    ip: AllowRange,
    added_at: String,
    comment: Option<&'a str>,
}

impl<'a> AllowView<'a> {
    pub(crate) fn of(entry: &'a AllowEntry) -> Self {
        Self {
            ip: entry.range,
            added_at: UnixTime::to_rfc3339(entry.added_at),
            comment: entry.comment.as_deref(),
        }
    }
}
