//! Calls between the Worker and its Durable Objects. A call travels over `fetch`;
//! this is the one place it is encoded. (worker-rs serves no RPC from a Rust
//! object, and one given `DurableObject`'s prototype to serve it answered slower
//! than `fetch` when measured: bench/README.md, "Where the time goes".) Each object has a `Protocol`: an enum of its calls, each call a type
//! with its typed answer (`Ask`), or answered in parts (`AskStream`), and an enum
//! of the refusals it may give. The caller asks with a typed call and gets the
//! typed answer; the object dispatches on the enum. A refusal is a value the
//! caller acts on; a fault (storage, a bug) is a 500 whose detail is logged.
//!
//! On the wire, calls and answers are `postcard`: serde's own data model in a
//! compact binary form (varints, no field names), a stable format (1.0), small
//! and `no_std`; `bincode` is unmaintained (RUSTSEC-2025-0141), and CBOR or
//! MessagePack name every field and bring a self-describing decoder. Its
//! decoding code is a fraction of JSON's per type, and so is its work. An enum's
//! variant travels by its position, and a field by its place: a call names the
//! shape of its build's calls (`build.rs`), and an object of another shape
//! (between a deployment's two steps) refuses it with a 503, which its caller
//! reads as `StoreError::OtherShape`, rather than misread it.
//!
//! The call travels in the request's URL, after the shape's name (base64url),
//! when it is small or when the body carries an upload of its own, else as the
//! request's body: a body costs each side a stream to read, and the caller a
//! promise more, and a URL alone makes the request in one call into the
//! runtime, where headers take one each and a `Headers`, a `RequestInit` and a
//! `Request` besides. A single answer, when small, travels in a header. An
//! answer is frames, each its length (four bytes, little-endian) and its bytes:
//! one frame, `Reply::Ok(answer)` or
//! `Reply::Refused(refusal)`; or, streamed, that reply with the head, a frame per
//! page of items, then `End` with their count, so that an answer cut short is
//! never taken for a whole one. A refusal reads the same either way.

use std::cell::RefCell;
use std::fmt;

use base64ct::{Base64Unpadded, Base64UrlUnpadded, Encoding};
use futures_util::stream::{self, LocalBoxStream, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::js_sys::{ArrayBuffer, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, Headers, ObjectNamespace, Request, Response};

use crate::platform::clock;
use crate::platform::meter::{self, Billable};
use crate::platform::stream::Chunks;
use crate::store::StoreError;

/// One object's calls and refusals.
pub trait Protocol {
    type Call: Serialize + DeserializeOwned;
    type Refusal: Serialize + DeserializeOwned + fmt::Debug;
}

/// A call answered with one value.
pub trait Ask<P: Protocol>: Into<P::Call> {
    type Answer: Serialize + DeserializeOwned;

    /// The object's answer to this call: the one place an answer is encoded.
    fn reply(result: Result<Self::Answer, Failure<P::Refusal>>) -> worker::Result<Response> {
        encode_reply::<P, Self::Answer>(result, Carried::HeaderWhenSmall)
    }
}

/// A call answered in parts: a head, then pages of items.
pub trait AskStream<P: Protocol>: Into<P::Call> {
    type Head: Serialize + DeserializeOwned;
    type Item: Serialize + DeserializeOwned + 'static;

    /// The object's answer to this call: its head, and its items a page at a time,
    /// each page taken from the object's storage only when the caller reads on.
    fn reply(
        result: StreamedOutcome<Self::Head, Self::Item, P::Refusal>,
    ) -> worker::Result<Response> {
        let Streamed { head, pages } = match result {
            Ok(streamed) => streamed,
            Err(failure) => return encode_reply::<P, Self::Head>(Err(failure), Carried::Body),
        };
        let first = frame(&Reply::<Self::Head, P::Refusal>::Ok(head))?;
        let body = stream::unfold(Sending::Head(first, pages), |state| async move {
            match state {
                Sending::Head(first, pages) => Some((Ok(first), Sending::Pages(pages, 0))),
                Sending::Pages(mut pages, count) => Some(match pages.next().await {
                    Some(Ok(page)) => {
                        let count = count + page.len() as u64;
                        (frame(&Part::Items(page)), Sending::Pages(pages, count))
                    }
                    // The body breaks off: the caller sees no end, never a short list.
                    Some(Err(fault)) => (
                        Err(worker::Error::RustError(fault.to_string())),
                        Sending::Done,
                    ),
                    None => (
                        frame(&Part::<Self::Item>::End { items: count }),
                        Sending::Done,
                    ),
                }),
                Sending::Done => None,
            }
        });
        Response::from_stream(body)
    }
}

/// Where a streamed answer is: its head still to send, its pages, or done.
enum Sending<T> {
    Head(Vec<u8>, LocalBoxStream<'static, Result<Vec<T>, StoreError>>),
    Pages(LocalBoxStream<'static, Result<Vec<T>, StoreError>>, u64),
    Done,
}

/// What an object makes of a streamed call: its answer, or why not.
pub type StreamedOutcome<H, T, R> = Result<Streamed<H, T>, Failure<R>>;

/// A streamed answer as the object makes it.
pub struct Streamed<H, T> {
    pub head: H,
    pub pages: LocalBoxStream<'static, Result<Vec<T>, StoreError>>,
}

/// Why an object did not answer a call.
#[derive(Debug)]
pub enum Failure<R> {
    /// It refused: an outcome the caller acts on.
    Refused(R),
    /// It could not: a fault of ours, a logged 500.
    Fault(StoreError),
}

/// The refusal of an object that refuses nothing (a report shard, a Cloudflare
/// account's turns): no value has it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum NoRefusal {}

impl Failure<NoRefusal> {
    /// The failure of an object that refuses nothing: always a fault.
    pub fn into_fault(self) -> StoreError {
        match self {
            Self::Fault(fault) => fault,
            Self::Refused(never) => match never {},
        }
    }
}

impl<R, E: Into<StoreError>> From<E> for Failure<R> {
    fn from(error: E) -> Self {
        Self::Fault(error.into())
    }
}

#[derive(Serialize, Deserialize)]
enum Reply<T, R> {
    Ok(T),
    Refused(R),
}

#[derive(Serialize, Deserialize)]
enum Part<T> {
    Items(Vec<T>),
    End { items: u64 },
}

/// A value whose one shape is its JSON (the manifest KV holds, the operator's
/// edit as sent and as answered, whose fields are left out when empty) crosses
/// as that JSON, in which it reads back whatever it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> Serialize for Json<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = serde_json::to_string(&self.0).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(&text)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Json<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        // Read as KV's values are (`store/kv.rs`), so that a type read from
        // both has one reader in the module, not one for text and one for bytes.
        serde_json::from_slice(text.as_bytes())
            .map(Self)
            .map_err(serde::de::Error::custom)
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    postcard::to_allocvec(value).map_err(|e| StoreError::Corrupt(format!("not encoded: {e}")))
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    postcard::from_bytes(bytes).map_err(|e| {
        StoreError::Corrupt(format!("an object's call or answer does not decode: {e}"))
    })
}

/// The bytes of a frame's length.
const LENGTH: usize = 4;

/// One frame: its length, then its bytes.
fn frame(value: &impl Serialize) -> worker::Result<Vec<u8>> {
    let mut bytes = vec![0; LENGTH];
    bytes =
        postcard::to_extend(value, bytes).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let length = u32::try_from(bytes.len() - LENGTH)
        .map_err(|_| worker::Error::RustError("a page over 4 GB".to_owned()))?;
    bytes[..LENGTH].copy_from_slice(&length.to_le_bytes());
    Ok(bytes)
}

/// Where a reply travels: a single answer in a header when it is small, so that
/// the caller reads no body; a reply that a streamed call's reader may get,
/// always in the body.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Carried {
    HeaderWhenSmall,
    Body,
}

fn encode_reply<P: Protocol, T: Serialize>(
    result: Result<T, Failure<P::Refusal>>,
    carried: Carried,
) -> worker::Result<Response> {
    let reply = match result {
        Ok(answer) => Reply::<T, P::Refusal>::Ok(answer),
        Err(Failure::Refused(refusal)) => Reply::Refused(refusal),
        // A call of its own that another build's object refused: the same refusal,
        // for the caller to pass on.
        Err(Failure::Fault(fault @ StoreError::OtherShape(_))) => {
            return Response::error(fault.to_string(), OTHER_SHAPE)
        }
        Err(Failure::Fault(fault)) => return Response::error(fault.to_string(), 500),
    };
    respond(frame(&reply)?, carried)
}

/// The response carrying a reply's frame: one copy for every reply.
fn respond(frame: Vec<u8>, carried: Carried) -> worker::Result<Response> {
    if carried == Carried::HeaderWhenSmall && frame.len() <= INLINE_BYTES {
        let response = Response::empty()?;
        response
            .headers()
            .set(ANSWER_HEADER, &Base64Unpadded::encode_string(&frame))?;
        return Ok(response);
    }
    Response::from_bytes(frame)
}

/// The header a single answer travels in when it is small: the caller then reads
/// it at once, with no body to wait on.
const ANSWER_HEADER: &str = "X-Greylist-Answer";

/// The shape of the calls of this build (`build.rs`), the first segment of every
/// call's path: an object answers only a call of its own shape. The Worker and
/// its objects deploy as two Workers, one after the other, and two builds whose
/// calls are alike keep talking.
const BUILD: &str = env!("GREYLIST_BUILD");

/// The origin of every call's URL: the runtime routes a stub's request to its
/// object whatever it names.
const ORIGIN: &str = "https://object/";

/// Whether a call comes from a build of this one's shape. Calls travel by
/// position, so one of another shape (between a deployment's two steps) could
/// read as another call.
fn of_this_build(build: Option<&str>) -> Result<(), String> {
    match build {
        Some(BUILD) => Ok(()),
        other => Err(format!(
            "a call of shape {other:?}, where this object's calls are of shape {BUILD}"
        )),
    }
}

/// The largest call sent in a URL, or answer in a header (base64, a third
/// longer): every single operation's, far below the runtime's limits on either.
const INLINE_BYTES: usize = 2048;

/// The URL of a call: the shape's name, then the call itself when it travels
/// there (`in_url`).
fn call_url(call: &[u8], in_url: bool) -> String {
    match in_url {
        true => format!("{ORIGIN}{BUILD}/{}", Base64UrlUnpadded::encode_string(call)),
        false => format!("{ORIGIN}{BUILD}"),
    }
}

/// What a call's path says: the shape it was made in, and the call when it
/// travels there (`call_url`).
fn read_path(path: &str) -> (Option<&str>, Option<&str>) {
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let build = segments.next().filter(|build| !build.is_empty());
    (build, segments.next())
}

/// What an object received: a call, or one of another shape, with the answer
/// the object gives it at once.
pub enum Received<C> {
    Call(C),
    OtherShape(Response),
}

/// The status an object answers a call of another shape with: the other half of
/// a deployment is not there yet, and the caller may try again shortly.
const OTHER_SHAPE: u16 = 503;

/// Reads the call a request carries, as the object receives it. A call with an
/// upload leaves the body unread, for its handler to stream.
pub async fn receive<P: Protocol>(req: &mut Request) -> worker::Result<Received<P::Call>> {
    let path = req.path();
    let (build, in_url) = read_path(&path);
    if let Err(why) = of_this_build(build) {
        return Response::error(why, OTHER_SHAPE).map(Received::OtherShape);
    }
    let bytes = match in_url {
        Some(encoded) => Base64UrlUnpadded::decode_vec(encoded)
            .map_err(|e| worker::Error::RustError(format!("a call's URL: {e}")))?,
        None => buffer_of(req.inner().array_buffer()?).await?,
    };
    Ok(Received::Call(decode(&bytes)?))
}

/// A refusal as an answer to any call of `P`.
pub fn refuse<P: Protocol>(refusal: P::Refusal) -> worker::Result<Response> {
    // Any call's, a streamed one's too.
    encode_reply::<P, ()>(Err(Failure::Refused(refusal)), Carried::Body)
}

/// A Durable Object as its caller sees it: typed calls, typed answers. It holds
/// the runtime's stub itself, so that an answer is read as the runtime gave it,
/// never wrapped in a second `Response`.
pub struct Object<P> {
    stub: worker::worker_sys::DurableObject,
    protocol: std::marker::PhantomData<P>,
}

/// The same object, through the same stub.
impl<P> Clone for Object<P> {
    fn clone(&self) -> Self {
        Self {
            stub: self.stub.clone(),
            protocol: std::marker::PhantomData,
        }
    }
}

thread_local! {
    /// The objects' namespaces, each looked up once: a binding is the isolate's,
    /// the same for every request it serves, and its lookup is several calls
    /// into the runtime (the binding, its type's name) on every call made.
    static NAMESPACES: RefCell<Vec<(&'static str, ObjectNamespace)>> =
        const { RefCell::new(Vec::new()) };
}

impl<P: Protocol> Object<P> {
    /// The object named `name` of the namespace bound as `binding`.
    pub fn named(env: &Env, binding: &'static str, name: &str) -> Result<Self, StoreError> {
        let known = NAMESPACES.with_borrow(|namespaces| {
            namespaces
                .iter()
                .find(|(bound, _)| *bound == binding)
                .map(|(_, namespace)| namespace.clone())
        });
        let namespace = match known {
            Some(namespace) => namespace,
            None => {
                let namespace = env.durable_object(binding)?;
                NAMESPACES
                    .with_borrow_mut(|namespaces| namespaces.push((binding, namespace.clone())));
                namespace
            }
        };
        Ok(Self {
            stub: namespace.get_by_name(name)?.into_rpc(),
            protocol: std::marker::PhantomData,
        })
    }

    pub async fn ask<A: Ask<P>>(&self, call: A) -> Result<A::Answer, Failure<P::Refusal>> {
        let call = encode::<P::Call>(&call.into())?;
        read_reply::<P, A::Answer>(&answer(send(&self.stub, call, None).await?).await?)
    }

    /// `ask`, with `upload` as the request's body, passed through as it came.
    pub async fn ask_uploading<A: Ask<P>>(
        &self,
        call: A,
        upload: Option<worker::web_sys::ReadableStream>,
    ) -> Result<A::Answer, Failure<P::Refusal>> {
        let call = encode::<P::Call>(&call.into())?;
        read_reply::<P, A::Answer>(&answer(send(&self.stub, call, Some(upload)).await?).await?)
    }

    /// The head of a streamed answer, and its pages to read one at a time.
    pub async fn ask_stream<A: AskStream<P>>(
        &self,
        call: A,
    ) -> Result<(A::Head, Pages<A::Item>), Failure<P::Refusal>> {
        let call = encode::<P::Call>(&call.into())?;
        let (head, pages) = streamed(send(&self.stub, call, None).await?).await?;
        match decode::<Reply<A::Head, P::Refusal>>(&head)? {
            Reply::Ok(head) => Ok((
                head,
                Pages {
                    pages,
                    item: std::marker::PhantomData,
                },
            )),
            Reply::Refused(refusal) => Err(Failure::Refused(refusal)),
        }
    }
}

// What follows is the same for every call, and so is not generic: one copy of
// its code serves them all, where each call's own is only its encoding.

/// Sends an encoded call to the object; its answer as the runtime gave it.
async fn send(
    stub: &worker::worker_sys::DurableObject,
    call: Vec<u8>,
    upload: Option<Option<worker::web_sys::ReadableStream>>,
) -> Result<worker::web_sys::Response, StoreError> {
    // A small call goes in the URL, so that neither side streams a body; so does
    // one whose body is an upload of its own.
    let in_url = upload.is_some() || call.len() <= INLINE_BYTES;
    let url = call_url(&call, in_url);
    let body: Option<JsValue> = match upload {
        Some(upload) => upload.map(JsValue::from),
        None => (!in_url).then(|| Uint8Array::from(call.as_slice()).into()),
    };
    meter::count(Billable::DurableObjectRequest);
    let answer = match (body, clock::offset_header()) {
        // The runtime's own request, not `worker::Request`, whose conversion of
        // its options (`cf` and the rest) is more code and work than a call needs.
        (None, None) => stub.fetch_with_str(&url),
        (body, offset) => {
            let init = worker::web_sys::RequestInit::new();
            if let Some(body) = body {
                init.set_method("POST");
                init.set_body(&body);
            }
            if let Some((name, value)) = offset {
                let headers = Headers::new();
                headers.set(name, &value)?;
                init.set_headers(&headers.0);
            }
            let request = worker::web_sys::Request::new_with_str_and_init(&url, &init)
                .map_err(worker::Error::from)?;
            stub.fetch_with_request(&request)
        }
    }
    .map_err(worker::Error::from)?;
    Ok(JsFuture::from(answer)
        .await
        .map_err(worker::Error::from)?
        .unchecked_into())
}

/// A 500 from the object is its fault, with the detail it gave; a 503 refuses a
/// call of another shape; any other status but 200 is an answer this protocol
/// never gives.
async fn fault_of(
    response: worker::web_sys::Response,
) -> Result<worker::web_sys::Response, StoreError> {
    match response.status() {
        200 => Ok(response),
        500 => Err(StoreError::Object(text_of(&response).await?)),
        OTHER_SHAPE => Err(StoreError::OtherShape(text_of(&response).await?)),
        status => Err(StoreError::Corrupt(format!(
            "an object answered {status}: {}",
            text_of(&response).await?
        ))),
    }
}

/// A body read whole by the runtime in one call: `worker::Response` would read it
/// through a stream reader, a promise and a copy per chunk.
async fn buffer_of(read: worker::js_sys::Promise) -> Result<Vec<u8>, StoreError> {
    let buffer: ArrayBuffer = JsFuture::from(read)
        .await
        .map_err(worker::Error::from)?
        .unchecked_into();
    Ok(Uint8Array::new(&buffer).to_vec())
}

async fn text_of(response: &worker::web_sys::Response) -> Result<String, StoreError> {
    let bytes = buffer_of(response.array_buffer().map_err(worker::Error::from)?).await?;
    String::from_utf8(bytes)
        .map_err(|e| StoreError::Corrupt(format!("an object's fault is not UTF-8: {e}")))
}

/// An answer's one frame, whole.
async fn answer(response: worker::web_sys::Response) -> Result<Vec<u8>, StoreError> {
    let response = fault_of(response).await?;
    if let Some(encoded) = response
        .headers()
        .get(ANSWER_HEADER)
        .map_err(worker::Error::from)?
    {
        let frame = Base64Unpadded::decode_vec(&encoded)
            .map_err(|e| StoreError::Corrupt(format!("an answer's header: {e}")))?;
        return one_frame(frame);
    }
    one_frame(buffer_of(response.array_buffer().map_err(worker::Error::from)?).await?)
}

/// The bytes of the one frame `body` is, or why it is not one: cut short, or
/// with more after it.
fn one_frame(mut body: Vec<u8>) -> Result<Vec<u8>, StoreError> {
    match framed_length(&body) {
        Some(length) if LENGTH + length == body.len() => {
            body.drain(..LENGTH);
            Ok(body)
        }
        _ => Err(StoreError::Corrupt(
            "an object's answer is not one frame".to_owned(),
        )),
    }
}

fn read_reply<P: Protocol, T: DeserializeOwned>(frame: &[u8]) -> Result<T, Failure<P::Refusal>> {
    match decode::<Reply<T, P::Refusal>>(frame)? {
        Reply::Ok(answer) => Ok(answer),
        Reply::Refused(refusal) => Err(Failure::Refused(refusal)),
    }
}

/// A streamed answer's head frame, and its frames after it.
async fn streamed(response: worker::web_sys::Response) -> Result<(Vec<u8>, Frames), StoreError> {
    let response = fault_of(response).await?;
    let body = response
        .body()
        .ok_or_else(|| StoreError::Corrupt("a streamed answer without a body".to_owned()))?;
    let mut frames = Frames {
        chunks: Chunks::of(body),
        buffer: Vec::new(),
        count: 0,
        ended: false,
    };
    let head = frames
        .next()
        .await?
        .ok_or_else(|| StoreError::Corrupt("a streamed answer without its head".to_owned()))?;
    Ok((head, frames))
}

/// The frames of a streamed answer, read from the object's body as they come,
/// with the count of items they delivered.
struct Frames {
    chunks: Chunks,
    buffer: Vec<u8>,
    count: u64,
    ended: bool,
}

impl Frames {
    /// The next frame's bytes; `None` when the body ended first.
    async fn next(&mut self) -> Result<Option<Vec<u8>>, StoreError> {
        loop {
            if let Some(length) = framed_length(&self.buffer) {
                self.buffer.drain(..LENGTH);
                return Ok(Some(self.buffer.drain(..length).collect()));
            }
            match self
                .chunks
                .next()
                .await
                .map_err(|_| StoreError::Corrupt("a streamed answer broke off".to_owned()))?
            {
                Some(chunk) => crate::platform::stream::append(&mut self.buffer, &chunk),
                None => return Ok(None),
            }
        }
    }

    /// Whether the end frame's count is what came: a body that ends before its
    /// end, or whose end counts other than what came, is an error.
    fn end(&mut self, items: u64) -> Result<(), StoreError> {
        delivered_whole(items, self.count)?;
        self.ended = true;
        Ok(())
    }
}

/// The pages of a streamed answer, read from the object's body as they come.
pub struct Pages<T> {
    pages: Frames,
    item: std::marker::PhantomData<T>,
}

impl<T: DeserializeOwned> Pages<T> {
    /// The next page, or `None` after the last.
    pub async fn next(&mut self) -> Result<Option<Vec<T>>, StoreError> {
        if self.pages.ended {
            return Ok(None);
        }
        let frame = self
            .pages
            .next()
            .await?
            .ok_or_else(|| StoreError::Corrupt("a streamed answer cut short".to_owned()))?;
        match decode::<Part<T>>(&frame)? {
            Part::Items(items) => {
                self.pages.count += items.len() as u64;
                Ok(Some(items))
            }
            Part::End { items } => self.pages.end(items).map(|()| None),
        }
    }
}

/// Whether a streamed answer whose end counts `items` delivered them all.
fn delivered_whole(items: u64, delivered: u64) -> Result<(), StoreError> {
    if items == delivered {
        return Ok(());
    }
    Err(StoreError::Corrupt(format!(
        "a streamed answer of {items} items delivered {delivered}"
    )))
}

/// The length of the frame `buffer` starts with, once all of it is there.
fn framed_length(buffer: &[u8]) -> Option<usize> {
    let length = u32::from_le_bytes(buffer.get(..LENGTH)?.try_into().ok()?) as usize;
    // Checked: a corrupt length near 2^32 would wrap on wasm32.
    LENGTH
        .checked_add(length)
        .filter(|&whole| buffer.len() >= whole)
        .map(|_| length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::list::{ListCall, Operation};
    use crate::domain::net::address::{Ipv6Prefix, PublicIp};
    use crate::domain::operator_lists::list::ListKind;
    use crate::objects::holder::protocol::{HolderCall, HolderRefusal, Perform};
    use crate::objects::operator_lists::protocol::{
        OperatorListsCall, OperatorListsRefusal, Replace,
    };

    fn add(ip: &str) -> HolderCall {
        Perform(vec![ListCall {
            operation: Operation::Add,
            ip: ip.parse::<PublicIp>().unwrap(),
            prefix: Ipv6Prefix::Net64,
            details: Default::default(),
            client: None,
            global_challenge: false,
        }])
        .into()
    }

    #[test]
    fn answers_and_refusals_come_back_as_they_went() {
        let ok = encode(&Reply::<Vec<u32>, HolderRefusal>::Ok(vec![1, 300])).unwrap();
        assert_eq!(ok, [0, 2, 1, 0xac, 0x02], "a variant, a length, varints");
        assert!(matches!(
            decode::<Reply<Vec<u32>, HolderRefusal>>(&ok).unwrap(),
            Reply::Ok(v) if v == [1, 300]
        ));
        let refused = encode(&Reply::<(), OperatorListsRefusal>::Refused(
            OperatorListsRefusal::BadEdit("\"x\": private".to_owned()),
        ))
        .unwrap();
        assert!(matches!(
            decode::<Reply<(), OperatorListsRefusal>>(&refused).unwrap(),
            Reply::Refused(OperatorListsRefusal::BadEdit(why)) if why == "\"x\": private"
        ));
        assert!(
            decode::<Reply<(), OperatorListsRefusal>>(&refused[..refused.len() - 1]).is_err(),
            "an answer cut short is no answer"
        );
    }

    #[test]
    fn a_streamed_answer_is_frames_each_read_whole_once_all_of_it_came() {
        let mut body = frame(&Part::Items(vec![7u8, 8])).unwrap();
        assert_eq!(body, [4, 0, 0, 0, 0, 2, 7, 8]);
        body.extend(frame(&Part::<u8>::End { items: 2 }).unwrap());
        assert_eq!(framed_length(&body), Some(4));
        assert_eq!(framed_length(&body[..7]), None, "a frame not yet whole");
        assert_eq!(framed_length(&body[..3]), None, "a length not yet whole");
        assert!(matches!(
            decode::<Part<u8>>(&body[8 + LENGTH..]).unwrap(),
            Part::End { items: 2 }
        ));
    }

    #[test]
    fn an_answer_is_one_frame_whole_and_a_stream_all_its_items() {
        let answer = frame(&Reply::<u8, HolderRefusal>::Ok(9)).unwrap();
        assert_eq!(one_frame(answer.clone()).unwrap(), [0, 9]);
        assert!(
            one_frame(answer[..answer.len() - 1].to_vec()).is_err(),
            "cut short"
        );
        let mut longer = answer.clone();
        longer.push(0);
        assert!(one_frame(longer).is_err(), "more after it");
        assert!(one_frame(Vec::new()).is_err());
        assert!(delivered_whole(3, 3).is_ok());
        assert!(
            delivered_whole(3, 2).is_err(),
            "a stream short of an item is refused: a page missing"
        );
        assert!(delivered_whole(2, 3).is_err());
    }

    /// The call in a URL, as the object reads it back from the path.
    fn through_url(call: &[u8]) -> Vec<u8> {
        let url = call_url(call, true);
        let path = url.strip_prefix("https://object").unwrap();
        assert!(
            path.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/-_".contains(&b)),
            "nothing to escape: {path}"
        );
        let (build, encoded) = read_path(path);
        assert_eq!(build, Some(BUILD));
        Base64UrlUnpadded::decode_vec(encoded.unwrap()).unwrap()
    }

    #[test]
    fn a_call_is_its_variant_and_comes_back_as_it_went_in_its_url() {
        let ip = "2a00:1450:4001:80b::200e".parse::<PublicIp>().unwrap();
        let bytes = encode(&add("2a00:1450:4001:80b::200e")).unwrap();
        // Every byte value, where base64's own alphabet would need escaping in a path.
        let every: Vec<u8> = (0..=255).collect();
        assert_eq!(through_url(&every), every);
        assert_eq!(through_url(&[]), Vec::<u8>::new());
        let back: HolderCall = decode(&through_url(&bytes)).unwrap();
        assert!(
            matches!(back, HolderCall::Perform(Perform(calls)) if calls.len() == 1 && calls[0].ip == ip)
        );
        let upload: OperatorListsCall = Replace {
            kind: ListKind::Allow,
            gzip: true,
            ipv6: crate::domain::net::address::Ipv6::On,
            by: Some("alice é".to_owned()),
            stamp: None,
        }
        .into();
        let back: OperatorListsCall = decode(&encode(&upload).unwrap()).unwrap();
        assert!(
            matches!(back, OperatorListsCall::Replace(r) if r.by.as_deref() == Some("alice é"))
        );
    }

    #[test]
    fn a_call_of_another_build_is_refused_before_it_is_read() {
        assert_eq!(of_this_build(Some(BUILD)), Ok(()));
        assert_eq!(BUILD.len(), 16);
        assert!(
            of_this_build(Some("0123456789abcdef")).is_err(),
            "a call of another build's shape is refused"
        );
        assert!(of_this_build(None).is_err(), "a call that does not say");
        // A call whose body carries it names the shape alone; one from a build
        // before calls named it in their path says nothing there.
        assert_eq!(
            read_path(&call_url(&[1], false)["https://object".len()..]),
            (Some(BUILD), None)
        );
        assert_eq!(read_path("/"), (None, None));
        assert_eq!(read_path(""), (None, None));
    }

    #[test]
    fn a_call_this_protocol_does_not_have_is_refused_when_read() {
        assert!(decode::<HolderCall>(&[200, 1]).is_err(), "no such variant");
        assert_eq!(
            framed_length(&[0xfc, 0xff, 0xff, 0xff, 0]),
            None,
            "a length near 2^32"
        );
        let mut bytes = encode(&add("11.0.0.1")).unwrap();
        let at = bytes.windows(8).position(|w| w == b"11.0.0.1").unwrap();
        bytes[at..at + 8].copy_from_slice(b"10.0.0.1");
        assert!(
            decode::<HolderCall>(&bytes).is_err(),
            "a private address never crosses"
        );
    }
}
