//! Request bodies read chunk by chunk. Each chunk is measured while it is still a
//! JavaScript value, so a caller can stop before anything over its limit is
//! copied into the Worker's memory.

#[cfg(feature = "objects")]
use worker::js_sys::{Array, Function};
use worker::js_sys::{Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{ReadableStream, ReadableStreamDefaultReader};

pub struct Chunks(ReadableStreamDefaultReader);

/// `body` decompressed as it is read, by the runtime's own `DecompressionStream`:
/// nothing of it is held here, and a malformed stream breaks off where it goes wrong.
/// For the operator's import only, whose parser bounds what it reads: the
/// runtime inflates as fast as it is fed, so a body whose caller is not yet
/// proved is inflated by `http/wire/gzip.rs` instead.
#[cfg(feature = "objects")]
pub fn gunzip(body: ReadableStream) -> worker::Result<ReadableStream> {
    let global = worker::js_sys::global();
    let decompression: Function =
        Reflect::get(&global, &"DecompressionStream".into())?.dyn_into()?;
    let decompressor = Reflect::construct(&decompression, &Array::of1(&"gzip".into()))?;
    let pipe_through: Function = Reflect::get(&body, &"pipeThrough".into())?.dyn_into()?;
    Ok(pipe_through.call1(&body, &decompressor)?.unchecked_into())
}

/// The body broke off before its end (the client went away).
#[derive(Debug)]
pub struct Unreadable;

impl Chunks {
    pub fn of(body: ReadableStream) -> Self {
        Self(body.get_reader().unchecked_into())
    }

    /// The body of an answer another part of the service sent.
    pub fn of_response(response: &worker::Response) -> worker::Result<Self> {
        match response.body() {
            worker::ResponseBody::Stream(body) => Ok(Self::of(body.clone())),
            _ => Err("an answer without a body to read".into()),
        }
    }

    /// The next chunk, or `None` at the end of the body.
    pub async fn next(&self) -> Result<Option<Uint8Array>, Unreadable> {
        let read = JsFuture::from(self.0.read())
            .await
            .map_err(|_| Unreadable)?;
        if Reflect::get(&read, &"done".into())
            .map_err(|_| Unreadable)?
            .is_truthy()
        {
            return Ok(None);
        }
        let value: JsValue = Reflect::get(&read, &"value".into()).map_err(|_| Unreadable)?;
        value.dyn_into().map(Some).map_err(|_| Unreadable)
    }

    /// Reads the rest and keeps nothing; stops at the first error.
    pub async fn discard(self) {
        while let Ok(Some(_)) = self.next().await {}
    }
}

/// Copies a chunk onto the end of `bytes`.
pub fn append(bytes: &mut Vec<u8>, chunk: &Uint8Array) {
    let start = bytes.len();
    bytes.resize(start + chunk.length() as usize, 0);
    chunk.copy_to(&mut bytes[start..]);
}
