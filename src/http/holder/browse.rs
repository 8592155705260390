//! Reading a holder's own list and history, a page at a time.

use serde::Serialize;
use worker::{Context, Request};

use crate::domain::code::Coded;
use crate::domain::holder::entry::{Entry, HistoryEvent, HistoryKind, Subject};
use crate::domain::holder::quota::Quota;
use crate::domain::net::address::{Ipv6, Listed};
use crate::domain::page::{counted, PageCursor, PageQuery};
use crate::domain::time::UnixTime;
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::{to_json, Listing, Reply};
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{Activity, EntryPage, History, Usage};

/// A page's `cursor` and `limit`, and `prefix` where the page takes one.
pub(super) async fn page_query<C: PageCursor>(
    mut req: Request,
    ctx: &Context,
    with_prefix: bool,
) -> Result<PageQuery<C>, ApiError> {
    let body = Body::read(&mut req, ctx, MAX_BODY_BYTES).await?;
    let prefix = if with_prefix {
        body.field("prefix")
    } else {
        None
    };
    PageQuery::parse(
        body.field("cursor").as_deref(),
        body.field("limit").as_deref(),
        prefix.as_deref(),
    )
    .map_err(ApiError::BadRequest)
}

/// The caller's live entries, newest first.
pub async fn list(
    cx: &RequestContext,
    req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let page = holder(&cx.env, &license)?
        .ask(EntryPage(page_query(req, &cx.ctx, true).await?))
        .await?;
    Ok(Reply::Listing(Listing {
        message: counted(page.total, "address", "addresses"),
        lines: page.rows.iter().map(|entry| entry.ip.to_string()).collect(),
        entries: to_json(page.rows.iter().map(EntryView::of).collect::<Vec<_>>())?,
        cursor: page.next.map(|c| c.encode()),
    }))
}

/// The quota as the dashboard reads it, and whether addresses may be IPv6
/// (`"ipv6": true`, only when `IPV6` is on, so that off the answer is as it was).
#[derive(Serialize)]
struct QuotaView {
    #[serde(flatten)]
    quota: Quota,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ipv6: bool,
}

/// `GET /api/quota`: the day's additions and removals, used and left, and when they reset.
pub async fn quota(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let usage = holder(&cx.env, &license)?.ask(Usage).await?;
    let settings = &cx.settings;
    let view = QuotaView {
        quota: Quota::of(usage, settings.objects.limits, cx.now.unix()),
        ipv6: settings.ipv6 == Ipv6::On,
    };
    Reply::json(200, &view)
}

/// A day of the activity chart, as the dashboard reads it.
#[derive(Serialize)]
struct DayView {
    date: String,
    added: u32,
    removed: u32,
    expired: u32,
    refused: u32,
}

#[derive(Serialize)]
struct ActivityView {
    days: Vec<DayView>,
}

/// `GET /api/activity`: the last 30 days' adds, removes, expiries and refusals,
/// oldest first, a quiet day as zeros.
pub async fn activity(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let days = holder(&cx.env, &license)?.ask(Activity).await?;
    let days = days
        .iter()
        .map(|day| DayView {
            date: day.date(),
            added: day.added,
            removed: day.removed,
            expired: day.expired,
            refused: day.refused,
        })
        .collect();
    Reply::json(200, &ActivityView { days })
}

/// The caller's changes, newest first.
pub async fn history(
    cx: &RequestContext,
    req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let page = holder(&cx.env, &license)?
        .ask(History(page_query(req, &cx.ctx, false).await?))
        .await?;
    Ok(Reply::Listing(Listing {
        message: counted(page.total, "change", "changes"),
        lines: page
            .rows
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    e.at.to_rfc3339(),
                    e.change.code(),
                    e.ip,
                    e.client.as_deref().unwrap_or("-")
                )
            })
            .collect(),
        entries: to_json(page.rows.iter().map(ChangeView::of).collect::<Vec<_>>())?,
        cursor: page.next.map(|c| c.encode()),
    }))
}

/// An entry as the API shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntryView<'a> {
    ip: Listed,
    added_at: String,
    expires_at: Option<String>,
    comment: Option<&'a str>,
}

impl<'a> EntryView<'a> {
    pub(crate) fn of(entry: &'a Entry) -> Self {
        Self {
            ip: entry.ip,
            added_at: entry.added_at.to_rfc3339(),
            expires_at: entry.expires_at.map(UnixTime::to_rfc3339),
            comment: entry.comment.as_deref(),
        }
    }
}

/// A history event as the API shows it.
#[derive(Serialize)]
struct ChangeView<'a> {
    at: String,
    change: HistoryKind,
    /// An address, a /64, or an allow-list range, as its text.
    ip: Subject,
    client: Option<&'a str>,
}

impl<'a> ChangeView<'a> {
    fn of(event: &'a HistoryEvent) -> Self {
        Self {
            at: event.at.to_rfc3339(),
            change: event.change,
            ip: event.ip,
            client: event.client.as_deref(),
        }
    }
}
