//! Calls between the Worker and its Durable Objects. A Durable Object written in
//! Rust cannot serve RPC, so a call travels over `fetch`; this is the one place it
//! is encoded. Each object has a `Protocol`: an enum of its calls, each call a type
//! with its typed answer (`Ask`), or answered in parts (`AskStream`), and an enum
//! of the refusals it may give. The caller asks with a typed call and gets the
//! typed answer; the object dispatches on the enum. A refusal is a value the
//! caller acts on; a fault (storage, a bug) is a 500 whose detail is logged.
//!
//! On the wire: the call is a percent-encoded JSON header when it is small or
//! when the body carries an upload of its own, else the request's JSON body (a
//! body costs each side a stream to read). An answer is one JSON line,
//! `{"ok": answer}` or `{"refused": refusal}`; a streamed answer is that line with
//! its head, then a line per page of items, then `{"end": n}`, so that an answer
//! cut short is never taken for a whole one.

use std::fmt;

use futures_util::stream::{self, LocalBoxStream, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::js_sys::Uint8Array;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Headers, Method, Request, RequestInit, Response, Stub};

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
        encode_reply::<P, Self::Answer>(result)
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
            Err(failure) => return encode_reply::<P, Self::Head>(Err(failure)),
        };
        let first = line(&Reply::<Self::Head, P::Refusal>::Ok(head))?;
        let body = stream::unfold(Sending::Head(first, pages), |state| async move {
            match state {
                Sending::Head(first, pages) => Some((Ok(first), Sending::Pages(pages, 0))),
                Sending::Pages(mut pages, count) => Some(match pages.next().await {
                    Some(Ok(page)) => {
                        let count = count + page.len() as u64;
                        (line(&Part::Items(page)), Sending::Pages(pages, count))
                    }
                    // The body breaks off: the caller sees no end line, never a short list.
                    Some(Err(fault)) => (
                        Err(worker::Error::RustError(fault.to_string())),
                        Sending::Done,
                    ),
                    None => (
                        line(&Part::<Self::Item>::End { items: count }),
                        Sending::Done,
                    ),
                }),
                Sending::Done => None,
            }
        });
        let response = Response::from_stream(body)?;
        response
            .headers()
            .set("Content-Type", "application/x-ndjson")?;
        Ok(response)
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

impl<R, E: Into<StoreError>> From<E> for Failure<R> {
    fn from(error: E) -> Self {
        Self::Fault(error.into())
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reply<T, R> {
    Ok(T),
    Refused(R),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Part<T> {
    Items(Vec<T>),
    End { items: u64 },
}

fn line(value: &impl Serialize) -> worker::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn encode_reply<P: Protocol, T: Serialize>(
    result: Result<T, Failure<P::Refusal>>,
) -> worker::Result<Response> {
    let reply = match result {
        Ok(answer) => Reply::<T, P::Refusal>::Ok(answer),
        Err(Failure::Refused(refusal)) => Reply::Refused(refusal),
        Err(Failure::Fault(fault)) => return Response::error(fault.to_string(), 500),
    };
    let response = Response::from_bytes(line(&reply)?)?;
    response.headers().set("Content-Type", "application/json")?;
    Ok(response)
}

/// The header a call travels in when it is small, or when the body carries an
/// upload of its own.
const CALL_HEADER: &str = "X-Greylist-Call";

/// The largest call sent in a header (percent-encoded, up to three times as
/// long): every single operation, far below the runtime's limit on headers.
const SMALL_CALL_BYTES: usize = 2048;

/// A call's JSON as a header value: percent-encoded, so any text fits.
fn to_header(json: &str) -> String {
    form_urlencoded::byte_serialize(json.as_bytes()).collect()
}

fn from_header(encoded: &str) -> String {
    form_urlencoded::parse(encoded.as_bytes())
        .map(|(key, _)| key.into_owned())
        .collect()
}

/// Reads the call a request carries, as the object receives it. A call with an
/// upload leaves the body unread, for its handler to stream.
pub async fn receive<P: Protocol>(req: &mut Request) -> worker::Result<P::Call> {
    if let Some(encoded) = req.headers().get(CALL_HEADER)? {
        return Ok(serde_json::from_str(&from_header(&encoded))?);
    }
    Ok(serde_json::from_slice(&req.bytes().await?)?)
}

/// A refusal as an answer to any call of `P`.
pub fn refuse<P: Protocol>(refusal: P::Refusal) -> worker::Result<Response> {
    encode_reply::<P, ()>(Err(Failure::Refused(refusal)))
}

/// A Durable Object as its caller sees it: typed calls, typed answers.
pub struct Object<P> {
    stub: Stub,
    protocol: std::marker::PhantomData<P>,
}

impl<P: Protocol> Object<P> {
    pub fn new(stub: Stub) -> Self {
        Self {
            stub,
            protocol: std::marker::PhantomData,
        }
    }

    pub async fn ask<A: Ask<P>>(&self, call: A) -> Result<A::Answer, Failure<P::Refusal>> {
        let response = self.send(&call.into(), None).await?;
        decode_reply::<P, A::Answer>(response).await
    }

    /// `ask`, with `upload` as the request's body, passed through as it came.
    pub async fn ask_uploading<A: Ask<P>>(
        &self,
        call: A,
        upload: Option<worker::web_sys::ReadableStream>,
    ) -> Result<A::Answer, Failure<P::Refusal>> {
        let response = self.send(&call.into(), Some(upload)).await?;
        decode_reply::<P, A::Answer>(response).await
    }

    /// The head of a streamed answer, and its pages to read one at a time.
    pub async fn ask_stream<A: AskStream<P>>(
        &self,
        call: A,
    ) -> Result<(A::Head, Pages<A::Item>), Failure<P::Refusal>> {
        let response = self.send(&call.into(), None).await?;
        let response = fault_of(response).await?;
        let mut pages = Pages {
            chunks: Chunks::of_response(&response)?,
            buffer: Vec::new(),
            count: 0,
            ended: false,
            item: std::marker::PhantomData,
        };
        let head = pages
            .line()
            .await?
            .ok_or_else(|| StoreError::Corrupt("a streamed answer without its head".to_owned()))?;
        match serde_json::from_slice::<Reply<A::Head, P::Refusal>>(&head)
            .map_err(StoreError::from)?
        {
            Reply::Ok(head) => Ok((head, pages)),
            Reply::Refused(refusal) => Err(Failure::Refused(refusal)),
        }
    }

    async fn send(
        &self,
        call: &P::Call,
        upload: Option<Option<worker::web_sys::ReadableStream>>,
    ) -> Result<Response, StoreError> {
        let json = serde_json::to_string(call)?;
        let headers = Headers::new();
        clock::forward(&headers)?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post);
        match upload {
            Some(body) => {
                headers.set(CALL_HEADER, &to_header(&json))?;
                init.with_body(body.map(Into::into));
            }
            // A small call goes in a header: no body for either side to stream.
            None if json.len() <= SMALL_CALL_BYTES => {
                headers.set(CALL_HEADER, &to_header(&json))?;
            }
            None => {
                init.with_body(Some(json.into()));
            }
        }
        init.with_headers(headers);
        meter::count(Billable::DurableObjectRequest);
        Ok(self
            .stub
            .fetch_with_request(Request::new_with_init("https://object/", &init)?)
            .await?)
    }
}

/// A 500 from the object is its fault, with the detail it gave; any status but
/// 200 is an answer this protocol never gives.
async fn fault_of(response: Response) -> Result<Response, StoreError> {
    match response.status_code() {
        200 => Ok(response),
        500 => Err(StoreError::Object(text_of(response).await?)),
        status => Err(StoreError::Corrupt(format!(
            "an object answered {status}: {}",
            text_of(response).await?
        ))),
    }
}

/// An answer's whole body, read by the runtime in one call. `worker::Response`
/// reads a fetched body through a stream reader, a promise and a copy per chunk,
/// which cost a check of the holder's list about a tenth of its time.
async fn whole_body(response: Response) -> Result<Vec<u8>, StoreError> {
    let response = worker::web_sys::Response::from(response);
    let read = response.array_buffer().map_err(worker::Error::from)?;
    let buffer = JsFuture::from(read).await.map_err(worker::Error::from)?;
    Ok(Uint8Array::new(&buffer).to_vec())
}

async fn text_of(response: Response) -> Result<String, StoreError> {
    String::from_utf8(whole_body(response).await?)
        .map_err(|e| StoreError::Corrupt(format!("an object's answer is not UTF-8: {e}")))
}

async fn decode_reply<P: Protocol, T: DeserializeOwned>(
    response: Response,
) -> Result<T, Failure<P::Refusal>> {
    let text = text_of(fault_of(response).await?).await?;
    match serde_json::from_str::<Reply<T, P::Refusal>>(&text) {
        Ok(Reply::Ok(answer)) => Ok(answer),
        Ok(Reply::Refused(refusal)) => Err(Failure::Refused(refusal)),
        Err(error) => {
            Err(StoreError::Corrupt(format!("an object answered {text:?}: {error}")).into())
        }
    }
}

/// The pages of a streamed answer, read from the object's body as they come.
pub struct Pages<T> {
    chunks: Chunks,
    buffer: Vec<u8>,
    count: u64,
    ended: bool,
    item: std::marker::PhantomData<T>,
}

impl<T: DeserializeOwned> Pages<T> {
    /// The next page, or `None` after the last. A body that ends before its end
    /// line, or whose end line counts other than what came, is an error.
    pub async fn next(&mut self) -> Result<Option<Vec<T>>, StoreError> {
        if self.ended {
            return Ok(None);
        }
        let line = self
            .line()
            .await?
            .ok_or_else(|| StoreError::Corrupt("a streamed answer cut short".to_owned()))?;
        match serde_json::from_slice::<Part<T>>(&line)? {
            Part::Items(items) => {
                self.count += items.len() as u64;
                Ok(Some(items))
            }
            Part::End { items } if items == self.count => {
                self.ended = true;
                Ok(None)
            }
            Part::End { items } => Err(StoreError::Corrupt(format!(
                "a streamed answer of {items} items delivered {}",
                self.count
            ))),
        }
    }

    /// The next line, without its end; `None` when the body ended first.
    async fn line(&mut self) -> Result<Option<Vec<u8>>, StoreError> {
        loop {
            if let Some(end) = memchr::memchr(b'\n', &self.buffer) {
                let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
                line.pop();
                return Ok(Some(line));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::{Ipv6Prefix, PublicIp};
    use crate::domain::operator_lists::list::ListKind;
    use crate::domain::personal::holder::{Call, Operation};
    use crate::objects::holder::protocol::{HolderCall, HolderRefusal, Perform};
    use crate::objects::operator_lists::protocol::{ListsCall, ListsRefusal, Replace};

    #[test]
    fn answers_and_refusals_are_one_json_line_each() {
        let ok = serde_json::to_string(&Reply::<Vec<u32>, HolderRefusal>::Ok(vec![1, 2])).unwrap();
        assert_eq!(ok, r#"{"ok":[1,2]}"#);
        let refused = serde_json::to_string(&Reply::<(), HolderRefusal>::Refused(
            HolderRefusal::LicenseRevoked,
        ))
        .unwrap();
        assert_eq!(refused, r#"{"refused":"license_revoked"}"#);
        let back: Reply<(), ListsRefusal> =
            serde_json::from_str(r#"{"refused":{"bad_edit":"\"x\": private"}}"#).unwrap();
        assert!(
            matches!(back, Reply::Refused(ListsRefusal::BadEdit(why)) if why == "\"x\": private")
        );
        assert_eq!(
            serde_json::to_string(&Part::<u8>::End { items: 3 }).unwrap(),
            r#"{"end":{"items":3}}"#
        );
        assert_eq!(
            serde_json::to_string(&Part::Items(vec![7u8])).unwrap(),
            r#"{"items":[7]}"#
        );
    }

    #[test]
    fn a_call_is_its_variant_and_comes_back_as_it_went() {
        let ip = "2a00:1450:4001:80b::200e".parse::<PublicIp>().unwrap();
        let call: HolderCall = Perform(vec![Call {
            operation: Operation::Add,
            ip,
            prefix: Ipv6Prefix::Net64,
            details: Default::default(),
            client: None,
            global: false,
        }])
        .into();
        let back: HolderCall =
            serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
        assert!(
            matches!(back, HolderCall::Perform(Perform(calls)) if calls.len() == 1 && calls[0].ip == ip)
        );
        let upload: ListsCall = Replace {
            kind: ListKind::Allow,
            gzip: true,
            ipv6: crate::domain::net::address::Ipv6::On,
            by: Some("alice".to_owned()),
            stamp: None,
        }
        .into();
        let json = serde_json::to_string(&upload).unwrap();
        let header = to_header(&json);
        assert!(header.bytes().all(|b| b.is_ascii_graphic()), "{header}");
        assert_eq!(from_header(&header), json);
        assert_eq!(
            from_header(&to_header("{\"é\": \"a b+c%\"}")),
            "{\"é\": \"a b+c%\"}"
        );
    }

    #[test]
    fn a_call_this_protocol_does_not_have_is_refused_when_read() {
        assert!(serde_json::from_str::<HolderCall>(r#"{"Teleport":null}"#).is_err());
        assert!(
            serde_json::from_str::<HolderCall>(
                r#"{"Perform":[{"operation":"add","ip":"10.0.0.1"}]}"#
            )
            .is_err(),
            "a private address never crosses"
        );
    }
}
