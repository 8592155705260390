//! The operator API's lists under `/admin/`: the global list, the allow list, and
//! the service's status. Every handler here runs only after `auth::caller::operator`
//! has passed for its route; the operator lists' object keeps each change's audit row with
//! the change and sends it to the directory (`object/audit.rs` of the operator lists' object).

use futures_util::stream::{self, StreamExt};
use serde::Serialize;

use worker::{Request, Response};

use crate::domain::code::Coded;
use crate::domain::net::address::Listed;
use crate::domain::network::consensus::Review;
use crate::domain::operator_lists::list::{EditRequest, EntrySource, ListKind, MAX_IMPORT_BYTES};
use crate::http::auth::caller::OperatorCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::operator::network;
use crate::http::wire::body::{coding, declared_within, Body};
use crate::http::wire::reply::Reply;
use crate::http::wire::{etag, form};
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::Count;
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::{
    Edit, Export, ExportHead, ListsStatus, Replace, Status,
};
use crate::objects::protocol::Json;
use crate::platform::memory;

/// An edit of at most 10 000 entries, with room for spaces and long ranges.
pub const MAX_EDIT_BYTES: usize = 1024 * 1024;

/// `POST`: `{"add": [...], "remove": [...]}`, and for the global list
/// `"removePromoted": [...]`, checked and applied by the operator lists' object as one change.
pub async fn edit_list(
    kind: ListKind,
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let body = Body::read(&mut req, &cx.ctx, MAX_EDIT_BYTES).await?;
    let shape = match kind {
        ListKind::Global => r#"{"add": [...], "remove": [...], "removePromoted": [...]}"#,
        ListKind::Allow => r#"{"add": [...], "remove": [...]}"#,
    };
    let edit = body
        .json::<EditRequest>()
        .map_err(|e| ApiError::BadRequest(format!("expected {shape}: {e}")))?;
    let ipv6 = cx.settings.ipv6;
    let by = Some(operator.actor.name().to_owned());
    // The addresses whose promotion the operator takes off: their report shards
    // forget the reports made until now, so that only new ones promote them again.
    let dismissed: Vec<Listed> = edit
        .remove_promoted
        .iter()
        .flatten()
        .filter_map(|text| text.trim().parse().ok())
        .collect();
    let edited = operator_lists(env)?
        .ask(Edit {
            kind,
            edit: Json(edit),
            ipv6,
            by,
            stamp: Some(operator.stamp()),
        })
        .await?;
    network::dismiss(cx, dismissed).await?;
    Reply::json(200, &edited.0)
}

/// What a replacement answers.
#[derive(Serialize)]
struct Replacement {
    entries: usize,
    added: usize,
    removed: usize,
    version: String,
}

/// `PUT`: the whole list as text, streamed to the operator lists' object, which parses it as it
/// arrives (and counts its limit on the text, however it was sent).
pub async fn replace_list(
    kind: ListKind,
    cx: &RequestContext,
    req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let declared = declared_within(&req, MAX_IMPORT_BYTES)?;
    // Ten million lines are about 140 MB of text, past the request body limit of
    // most plans, and about a tenth of that gzipped; the operator lists' object decompresses it.
    let gzip = coding(&req, &cx.ctx, declared).await?;
    let ipv6 = cx.settings.ipv6;
    let by = Some(operator.actor.name().to_owned());
    let replaced = operator_lists(env)?
        .ask_uploading(
            Replace {
                kind,
                gzip,
                ipv6,
                by,
                stamp: Some(operator.stamp()),
            },
            req.inner().body(),
        )
        .await?;
    let (added, removed) = (replaced.changes.added, replaced.changes.removed);
    Reply::json(
        200,
        &Replacement {
            entries: replaced.entries,
            added,
            removed,
            version: replaced.version.to_string(),
        },
    )
}

/// Whose entries an export takes: `?source=operator` (or none), the operator's
/// own, or `?source=promoted`, those the holders' reports promoted to the global list.
fn export_source(kind: ListKind, req: &Request) -> Result<EntrySource, ApiError> {
    let url = req.inner().url();
    let asked = form_urlencoded::parse(form::query_of(&url).as_bytes())
        .find(|(name, _)| name == "source")
        .map(|(_, value)| value.into_owned());
    let Some(asked) = asked else {
        return Ok(EntrySource::Operator);
    };
    match (EntrySource::from_code(&asked), kind) {
        (Some(EntrySource::Promoted), ListKind::Allow) => Err(ApiError::BadRequest(
            "the allow list has no promoted entries".to_owned(),
        )),
        (Some(source), _) => Ok(source),
        (None, _) => Err(ApiError::BadRequest(format!(
            "source is operator or promoted, not {asked:?}"
        ))),
    }
}

/// `GET`: the list in the import format, `# <list> list, version <v>, <n> entries`
/// first (`# <list> list (promoted), ...` for the promoted entries), streamed from
/// the operator lists' object a page at a time, with its version as `ETag` (`"<v>-promoted"` for
/// the promoted entries, so that one export's tag never answers for the other).
pub async fn export_list(
    kind: ListKind,
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let source = export_source(kind, &req)?;
    let (suffix, named) = match source {
        EntrySource::Operator => ("", ""),
        EntrySource::Promoted => ("-promoted", " (promoted)"),
    };
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let tag = |version: u64| format!("\"{version}{suffix}\"");
    let known = etag::tags(&if_none_match).find_map(|held| {
        held.trim_matches('"')
            .strip_suffix(suffix)?
            .parse()
            .ok()
            .filter(|v: &u64| tag(*v) == held)
    });
    let (head, pages) = operator_lists(env)?
        .ask_stream(Export {
            kind,
            known,
            source,
        })
        .await?;
    let response = match head {
        ExportHead::NotModified { version } => Response::empty()?
            .with_status(304)
            .with_headers(etag_header(&tag(version))?),
        ExportHead::List { version, entries } => {
            let first = format!(
                "# {} list{named}, version {version}, {entries} entries\n",
                kind.code()
            );
            let rest = stream::unfold(pages, |mut pages| async move {
                let lines = match pages.next().await {
                    Ok(Some(page)) => page
                        .iter()
                        .map(|entry| format!("{entry}\n"))
                        .collect::<String>(),
                    Ok(None) => return None,
                    // The body breaks off: the client sees a cut transfer, never a short list.
                    Err(fault) => {
                        return Some((Err(worker::Error::RustError(fault.to_string())), pages))
                    }
                };
                Some((Ok(lines.into_bytes()), pages))
            });
            let body = stream::once(async move { Ok(first.into_bytes()) }).chain(rest);
            let response = Response::from_stream(body)?.with_headers(etag_header(&tag(version))?);
            response
                .headers()
                .set("Content-Type", "text/plain; charset=utf-8")?;
            response
        }
    };
    Ok(Reply::Built(response))
}

fn etag_header(tag: &str) -> worker::Result<worker::Headers> {
    let headers = worker::Headers::new();
    headers.set("ETag", tag)?;
    Ok(headers)
}

/// What `/admin/status` answers: both lists, the number of licenses, and the
/// network's settings in force.
#[derive(Serialize)]
struct ServiceStatus {
    #[serde(flatten)]
    lists: ListsStatus,
    licenses: u64,
    network: NetworkSettings,
    isolate: IsolateStatus,
}

/// The isolate that answered: its WebAssembly memory's high-water mark, which
/// holds the lists' snapshots it loaded (an isolate has 128 MB for everything).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IsolateStatus {
    wasm_bytes: u64,
}

/// How the holders' reports promote and let go, every setting in force
/// (`PROMOTION_*`, `DELIST_AFTER_SECONDS`); 0 holders: promotion off.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NetworkSettings {
    promotion_holders: u32,
    promotion_networks: u32,
    promotion_window_seconds: u64,
    delist_after_seconds: u64,
    promotion_probation_seconds: u64,
    promotion_review: Review,
}

/// `GET /admin/status`: both lists' sizes and published versions, and the number of licenses.
pub async fn status(cx: &RequestContext, _: Request, _: OperatorCaller) -> Result<Reply, ApiError> {
    let (env, consensus) = (&cx.env, cx.settings.objects.consensus);
    let lists = operator_lists(env)?.ask(Status).await?;
    Reply::json(
        200,
        &ServiceStatus {
            lists,
            licenses: directory(env)?.ask(Count).await?,
            network: NetworkSettings {
                promotion_holders: consensus.holders,
                promotion_networks: consensus.networks,
                promotion_window_seconds: consensus.window,
                delist_after_seconds: consensus.delist_after,
                promotion_probation_seconds: consensus.probation,
                promotion_review: consensus.review,
            },
            isolate: IsolateStatus {
                wasm_bytes: memory::wasm_bytes(),
            },
        },
    )
}
