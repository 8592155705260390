//! Request bodies: read as a stream that stops at the route's limit, then parsed
//! as a form or JSON. Nothing larger than the limit is ever copied into the
//! Worker's memory, whatever the headers say.

use serde::de::DeserializeOwned;
use worker::js_sys::{Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::ReadableStreamDefaultReader;
use worker::{Context, Request};

use super::error::ApiError;
use crate::domain::form;

/// The limit of every body the service takes: a form with one address, a login,
/// an operator's edit of at most 400 entries.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// A request body read whole, with the content type that says how to parse it.
pub struct Body {
    content_type: String,
    bytes: Vec<u8>,
}

impl Body {
    /// Refused with 413 when over `MAX_BODY_BYTES`: by its declared length before
    /// reading, else as soon as the bytes read pass it.
    pub async fn read(req: &mut Request, ctx: &Context) -> Result<Self, ApiError> {
        let limit = MAX_BODY_BYTES;
        let headers = req.headers();
        let content_type = headers.get("Content-Type")?.unwrap_or_default();
        let declared = headers.get("Content-Length")?.and_then(|len| len.trim().parse::<u64>().ok());
        if declared.is_some_and(|len| len > limit as u64) {
            return Err(ApiError::PayloadTooLarge);
        }
        let bytes = read_at_most(req, ctx, limit).await?;
        Ok(Self { content_type, bytes })
    }

    /// The first value of a form field, or `None` when the body does not carry it.
    pub fn field(&self, name: &str) -> Option<String> {
        form::first_field(&self.content_type, &self.bytes, name)
    }

    pub fn is_json(&self) -> bool {
        form::media_type(&self.content_type).eq_ignore_ascii_case("application/json")
    }

    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }
}

/// Reads the body chunk by chunk, measuring each chunk while it is still a
/// JavaScript value, so a body over the limit costs at most `limit` bytes here.
async fn read_at_most(req: &Request, ctx: &Context, limit: usize) -> Result<Vec<u8>, ApiError> {
    let unreadable = |_: JsValue| ApiError::BadRequest("the request body could not be read".to_owned());
    let Some(stream) = req.inner().body() else { return Ok(Vec::new()) };
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut bytes = Vec::new();
    loop {
        let read = JsFuture::from(reader.read()).await.map_err(unreadable)?;
        if Reflect::get(&read, &"done".into()).map_err(unreadable)?.is_truthy() {
            return Ok(bytes);
        }
        let chunk: Uint8Array = Reflect::get(&read, &"value".into()).map_err(unreadable)?.dyn_into().map_err(unreadable)?;
        let start = bytes.len();
        let length = chunk.length() as usize;
        if start + length > limit {
            // The answer goes now; the rest is read and dropped after it, never copied
            // here. Cancelling the stream instead makes `wrangler dev`'s proxy lose the
            // next request or exit (cloudflare/workers-sdk#15709, #15447).
            ctx.wait_until(discard(reader));
            return Err(ApiError::PayloadTooLarge);
        }
        bytes.resize(start + length, 0);
        chunk.copy_to(&mut bytes[start..]);
    }
}

/// Reads a body to its end, keeping nothing; stops at the first error (the client went away).
async fn discard(reader: ReadableStreamDefaultReader) {
    while let Ok(read) = JsFuture::from(reader.read()).await {
        if Reflect::get(&read, &"done".into()).map_or(true, |done| done.is_truthy()) {
            break;
        }
    }
}
