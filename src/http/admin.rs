//! The operator API under `/admin/`: licenses, the global list, the allow list.
//! Every handler here runs only after `auth::operator` has passed.

use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use worker::{Context, Env, Request, Response};

use super::body::{declared_within, Body};
use super::error::ApiError;
use super::etag;
use super::form;
use super::log::RequestLog;
use super::reply::Reply;
use crate::domain::code::Coded;
use crate::domain::ip_list::{EditRequest, ListKind, MAX_IMPORT_BYTES};
use crate::domain::license::LicenseId;
use crate::domain::page::page_size;
use crate::domain::time::Millis;
use crate::objects::lists::client::writer;
use crate::objects::lists::protocol::{Edit, Export, ExportHead, ListsStatus, Replace, Status};
use crate::objects::protocol::Failure;
use crate::objects::revocations::client::revocations;
use crate::objects::revocations::protocol::Notify;
use crate::platform::config;
use crate::store::licenses;
use crate::store::licenses::LicenseSummary;

/// An edit of at most 10 000 entries, with room for spaces and long ranges.
pub const MAX_EDIT_BYTES: usize = 1024 * 1024;

/// A license as created: the only time its key is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NewLicense<'a> {
    license: &'a str,
    license_key: &'a str,
}

#[derive(Serialize)]
struct LicensePage {
    licenses: Vec<LicenseSummary>,
    cursor: Option<String>,
}

pub async fn create_license(
    env: &Env,
    now: Millis,
    log: &mut RequestLog,
) -> Result<Reply, ApiError> {
    let (license, key) = licenses::create(env, now.unix()).await?;
    log.license = Some(license.clone());
    Reply::json(
        201,
        &NewLicense {
            license: license.as_str(),
            license_key: key.reveal(),
        },
    )
}

/// `GET /admin/licenses?cursor=&limit=`: a page of licenses with when each was created and revoked.
pub async fn licenses(req: Request, env: &Env) -> Result<Reply, ApiError> {
    let url = req.inner().url();
    let query: Vec<(String, String)> = form_urlencoded::parse(form::query_of(&url).as_bytes())
        .into_owned()
        .collect();
    let field = |name| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let limit = page_size(field("limit")).map_err(ApiError::BadRequest)?;
    let (licenses, cursor) =
        licenses::page(env, field("cursor").filter(|c| !c.is_empty()), limit).await?;
    Reply::json(200, &LicensePage { licenses, cursor })
}

pub async fn revoke_license(
    env: &Env,
    id: &str,
    now: Millis,
    log: &mut RequestLog,
) -> Result<Reply, ApiError> {
    let license = LicenseId::parse(id).ok_or(ApiError::NotFound("license"))?;
    log.license = Some(license.clone());
    // The record first: from then on every path refuses the license within the
    // propagation bound, whatever happens next. Then the holder's object, which
    // answers logins at once, is told, now or by the revocations' retries.
    if !licenses::revoke(env, &license, now.unix()).await? {
        return Err(ApiError::NotFound("license"));
    }
    revocations(env)?
        .ask(Notify(license))
        .await
        .map_err(|failure| match failure {
            Failure::Fault(fault) => ApiError::from(fault),
            Failure::Refused(never) => match never {},
        })?;
    Ok(Reply::NoContent)
}

/// `POST`: `{"add": [...], "remove": [...]}`, checked and applied by the lists' writer.
pub async fn edit_list(
    kind: ListKind,
    mut req: Request,
    env: &Env,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let body = Body::read(&mut req, ctx, MAX_EDIT_BYTES).await?;
    let edit = body.json::<EditRequest>().map_err(|e| {
        ApiError::BadRequest(format!(
            "expected {{\"add\": [...], \"remove\": [...]}}: {e}"
        ))
    })?;
    let ipv6 = config::settings(env)?.ipv6;
    Reply::json(200, &writer(env)?.ask(Edit { kind, edit, ipv6 }).await?)
}

/// What a replacement answers.
#[derive(Serialize)]
struct Replacement {
    entries: usize,
    added: usize,
    removed: usize,
    version: String,
}

/// `PUT`: the whole list as text, streamed to the writer, which parses it as it
/// arrives (and counts its limit on the text, however it was sent).
pub async fn replace_list(kind: ListKind, req: Request, env: &Env) -> Result<Reply, ApiError> {
    declared_within(&req, MAX_IMPORT_BYTES)?;
    let gzip = gzipped(&req)?;
    let ipv6 = config::settings(env)?.ipv6;
    let replaced = writer(env)?
        .ask_uploading(Replace { kind, gzip, ipv6 }, req.inner().body())
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

/// Whether an import comes gzipped (`Content-Encoding: gzip`, which the writer
/// decompresses as it reads): ten million lines are about 140 MB of text, past
/// the request body limit of most plans, and about a tenth of that gzipped.
fn gzipped(req: &Request) -> Result<bool, ApiError> {
    let coding = req.headers().get("Content-Encoding")?.unwrap_or_default();
    match coding.trim() {
        "" | "identity" => Ok(false),
        gzip if gzip.eq_ignore_ascii_case("gzip") => Ok(true),
        other => Err(ApiError::UnsupportedEncoding(other.to_owned())),
    }
}

/// `GET`: the list in the import format, `# <list> list, version <v>, <n> entries`
/// first, streamed from the writer a page at a time, with its version as `ETag`.
pub async fn export_list(kind: ListKind, req: Request, env: &Env) -> Result<Reply, ApiError> {
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let tag = |version: u64| format!("\"{version}\"");
    let known = etag::tags(&if_none_match).find_map(|held| {
        held.trim_matches('"')
            .parse()
            .ok()
            .filter(|v: &u64| tag(*v) == held)
    });
    let (head, pages) = writer(env)?.ask_stream(Export { kind, known }).await?;
    let response = match head {
        ExportHead::NotModified { version } => Response::empty()?
            .with_status(304)
            .with_headers(etag_header(&tag(version))?),
        ExportHead::List { version, entries } => {
            let first = format!(
                "# {} list, version {version}, {entries} entries\n",
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

/// What `/admin/status` answers: both lists, and the number of licenses.
#[derive(Serialize)]
struct ServiceStatus {
    #[serde(flatten)]
    lists: ListsStatus,
    licenses: usize,
}

/// `GET /admin/status`: both lists' sizes and published versions, and the number of licenses.
pub async fn status(env: &Env) -> Result<Reply, ApiError> {
    let lists = writer(env)?.ask(Status).await?;
    Reply::json(
        200,
        &ServiceStatus {
            lists,
            licenses: licenses::count(env).await?,
        },
    )
}
