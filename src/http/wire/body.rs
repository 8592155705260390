//! Request bodies: read as a stream that stops at the route's limit, then parsed
//! as a form or JSON. Nothing larger than the limit is ever copied into the
//! Worker's memory, whatever the headers say.

use serde::de::DeserializeOwned;
use worker::js_sys::Uint8Array;
use worker::{Context, Request};

use crate::http::error::ApiError;
use crate::http::wire::bulk::{BulkError, BulkRequest};
use crate::http::wire::form;
use crate::http::wire::gzip::Gunzip;
use crate::platform::stream::{append, Chunks};

/// The limit of every body a holder or a login sends: a form with one address.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The body's declared length; 413 when it is over `limit`, before anything is read.
pub fn declared_within(req: &Request, limit: usize) -> Result<Option<u64>, ApiError> {
    let declared = req
        .headers()
        .get("Content-Length")?
        .and_then(|len| len.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    Ok(declared)
}

const UNREADABLE: &str = "the request body could not be read";

/// The chunks of a body given to `take` as they come, until they pass `limit`:
/// then 413, and the rest is read and dropped, never copied here; so is it when
/// `take` refuses a chunk. Cancelling the stream instead makes `wrangler dev`'s
/// proxy lose the next request or exit (cloudflare/workers-sdk#15709, #15447),
/// and so does an answer sent before the body is read: a body whose `declared`
/// length is within the limit is read to its end before the answer (at most
/// `limit` bytes more), one without is read after it. What is drained is the
/// bytes that came, as they came: a gzip body is inflated here (`Gunzip`),
/// never by the stream, so a refused one is not inflated any further.
async fn each_chunk(
    chunks: Chunks,
    ctx: &Context,
    limit: usize,
    declared: Option<u64>,
    take: &mut dyn FnMut(&Uint8Array) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let mut read = 0;
    let broken = |_| ApiError::BadRequest(UNREADABLE.to_owned());
    while let Some(chunk) = chunks.next().await.map_err(broken)? {
        read += chunk.length() as usize;
        let taken = match read > limit {
            true => Err(ApiError::PayloadTooLarge(limit)),
            false => take(&chunk),
        };
        if let Err(refused) = taken {
            match declared {
                Some(_) => chunks.discard().await,
                None => ctx.wait_until(chunks.discard()),
            }
            return Err(refused);
        }
    }
    Ok(())
}

/// Whether the body says it is gzip; 415 for an encoding other than none, the
/// body drained first as any refused body is (`each_chunk`): answered unread, a
/// body of more than a few kilobytes had `wrangler dev`'s proxy reset the
/// connection before the answer reached the client.
pub async fn coding(req: &Request, ctx: &Context, declared: Option<u64>) -> Result<bool, ApiError> {
    let refused = match gzipped(req) {
        Err(refused @ ApiError::UnsupportedEncoding(_)) => refused,
        other => return other,
    };
    if let Some(body) = req.inner().body() {
        let chunks = Chunks::of(body);
        match declared {
            Some(_) => chunks.discard().await,
            None => ctx.wait_until(chunks.discard()),
        }
    }
    Err(refused)
}

/// Whether the body says it is gzip; 415 for an encoding other than none.
fn gzipped(req: &Request) -> Result<bool, ApiError> {
    let coding = req.headers().get("Content-Encoding")?.unwrap_or_default();
    match coding.trim() {
        "" | "identity" => Ok(false),
        gzip if gzip.eq_ignore_ascii_case("gzip") => Ok(true),
        other => Err(ApiError::UnsupportedEncoding(other.to_owned())),
    }
}

/// A body given to `take` a piece at a time as it streams in, gunzipped when
/// its `Content-Encoding` says it is gzip (as CrowdSec's engines send one over
/// 5 KB), never held whole. 413 once its bytes pass `limit`, as sent (by its
/// declared length, before anything is read) or as inflated (the inflating
/// stops there); what `take` refuses is the answer.
pub async fn stream_decoded(
    req: &Request,
    ctx: &Context,
    limit: usize,
    mut take: impl FnMut(&[u8]) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    // Gzip's frame adds a few bytes at most to what it carries.
    let declared = declared_within(req, limit)?;
    let gzip = coding(req, ctx, declared).await?;
    let Some(body) = req.inner().body() else {
        return Ok(());
    };
    let mut piece = Vec::new();
    let mut inflated = 0;
    let mut gunzip = gzip.then(Gunzip::default);
    each_chunk(Chunks::of(body), ctx, limit, declared, &mut |chunk| {
        piece.clear();
        append(&mut piece, chunk);
        match &mut gunzip {
            None => take(&piece),
            Some(gunzip) => gunzip.push(&piece, &mut |out| {
                inflated += out.len();
                match inflated > limit {
                    true => Err(ApiError::PayloadTooLarge(limit)),
                    false => take(out),
                }
            }),
        }
    })
    .await?;
    gunzip.map_or(Ok(()), Gunzip::finish)
}

/// A request body read whole, with the content type that says how to parse it.
pub struct Body {
    content_type: String,
    bytes: Vec<u8>,
}

impl Body {
    /// Refused with 413 when over `limit` bytes: by its declared length before
    /// reading, else as soon as the bytes read pass it.
    pub async fn read(req: &mut Request, ctx: &Context, limit: usize) -> Result<Self, ApiError> {
        let content_type = req.headers().get("Content-Type")?.unwrap_or_default();
        let declared = declared_within(req, limit)?;
        // A declared length binds the body (HTTP framing), so one read is safe and
        // cheaper; only a body sent without one is read chunk by chunk.
        if declared.is_some() {
            let bytes = req.bytes().await.map_err(|_| {
                ApiError::BadRequest("the request body could not be read".to_owned())
            })?;
            if bytes.len() > limit {
                return Err(ApiError::PayloadTooLarge(limit));
            }
            return Ok(Self {
                content_type,
                bytes,
            });
        }
        let mut bytes = Vec::new();
        if let Some(body) = req.inner().body() {
            each_chunk(Chunks::of(body), ctx, limit, None, &mut |chunk| {
                append(&mut bytes, chunk);
                Ok(())
            })
            .await?;
        }
        Ok(Self {
            content_type,
            bytes,
        })
    }

    /// `read`, for a route that takes its body gzipped too (`stream_decoded`),
    /// refused with 413 once the inflated bytes pass `limit`.
    pub async fn read_decoded(
        req: &mut Request,
        ctx: &Context,
        limit: usize,
    ) -> Result<Self, ApiError> {
        if !coding(req, ctx, declared_within(req, limit)?).await? {
            return Self::read(req, ctx, limit).await;
        }
        let content_type = req.headers().get("Content-Type")?.unwrap_or_default();
        let mut bytes = Vec::new();
        stream_decoded(req, ctx, limit, |piece| {
            bytes.extend_from_slice(piece);
            Ok(())
        })
        .await?;
        Ok(Self {
            content_type,
            bytes,
        })
    }

    /// The first value of a form field, or `None` when the body does not carry it.
    pub fn field(&self, name: &str) -> Option<String> {
        form::first_field(&self.content_type, &self.bytes, name)
    }

    /// Whether the body has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn is_json(&self) -> bool {
        form::media_type(&self.content_type).eq_ignore_ascii_case("application/json")
    }

    /// The body's bytes as read, for a parser of its own.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }

    pub fn bulk(&self) -> Result<BulkRequest, BulkError> {
        BulkRequest::parse(&self.content_type, &self.bytes)
    }

    /// The body as text, non-UTF-8 bytes replaced.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}
