//! The operator's lists as the Worker sees them: lookups answered from the
//! published snapshot held in isolate memory, and the operator's calls passed
//! to the one writer, the `OperatorLists` Durable Object.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::net::Ipv4Addr;
use std::rc::Rc;

use worker::wasm_bindgen::JsValue;
use worker::{console_error, Env, Headers, Method, Request, RequestInit, Response};

use super::{cached, fresh, StoreError};
use crate::domain::feed::{subtract, Intervals};
use crate::domain::ip_list::ListKind;
use crate::domain::settings::Freshness;
use crate::domain::snapshot::{shard_key, Manifest, Shard};
use crate::domain::time::Millis;
use crate::lists_object::{BINDING, NAME};

/// The KV namespace a list's snapshots are published to.
pub fn binding(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Global => "GLOBAL_LIST",
        ListKind::Allow => "ALLOW_LIST",
    }
}

thread_local! {
    /// Each list's snapshot as this isolate holds it. Workers isolates are single-threaded.
    static HELD: RefCell<HashMap<ListKind, Rc<Held>>> = RefCell::new(HashMap::new());
    /// The global list without the allow list, for the versions named: every feed of
    /// those versions shares it rather than computing its own copy.
    static CHALLENGED: RefCell<Option<Challenged>> = const { RefCell::new(None) };
}

/// The global list's and the allow list's versions, and the one without the other.
type Challenged = ((u64, u64), Rc<Intervals>);

/// One version of a list, its shards loaded as lookups need them.
struct Held {
    manifest: Manifest,
    /// When the manifest was last read.
    checked: Cell<Millis>,
    shards: RefCell<Vec<Option<Rc<Shard>>>>,
    intervals: RefCell<Option<Rc<Intervals>>>,
}

impl Held {
    fn new(manifest: Manifest, now: Millis) -> Self {
        let shards = RefCell::new(vec![None; manifest.shards.len()]);
        Self {
            manifest,
            checked: Cell::new(now),
            shards,
            intervals: RefCell::new(None),
        }
    }

    async fn contains(&self, env: &Env, kind: ListKind, addr: u32) -> Result<bool, StoreError> {
        Ok(self
            .shard(env, kind, self.manifest.shard_of(addr))
            .await?
            .contains(addr))
    }

    /// Every shard's intervals in order, flattened once per version.
    async fn intervals(&self, env: &Env, kind: ListKind) -> Result<Rc<Intervals>, StoreError> {
        if let Some(intervals) = self.intervals.borrow().clone() {
            return Ok(intervals);
        }
        let mut all = Vec::new();
        for index in 0..self.manifest.shards.len() {
            all.extend(self.shard(env, kind, index).await?.intervals());
        }
        let all = Rc::new(all);
        *self.intervals.borrow_mut() = Some(all.clone());
        Ok(all)
    }

    async fn shard(
        &self,
        env: &Env,
        kind: ListKind,
        index: usize,
    ) -> Result<Rc<Shard>, StoreError> {
        if let Some(shard) = self.shards.borrow().get(index).cloned().flatten() {
            return Ok(shard);
        }
        let key = shard_key(self.manifest.version, index);
        // A shard that is not visible yet is an error, never an empty list.
        let bytes = cached(env.kv(binding(kind))?.get(&key))
            .bytes()
            .await?
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "{} list: shard {key} is not in KV yet",
                    kind.name()
                ))
            })?;
        let shard = Rc::new(Shard::decode(&bytes).ok_or_else(|| {
            StoreError::Corrupt(format!("{} list: shard {key} does not decode", kind.name()))
        })?);
        if let Some(slot) = self.shards.borrow_mut().get_mut(index) {
            *slot = Some(shard.clone());
        }
        Ok(shard)
    }
}

/// Whether `addr` is on the list, as its published snapshot says. Once an isolate
/// holds the part of the snapshot an address falls in, the answer needs no I/O
/// until the manifest is due to be read again (`Freshness::isolate_seconds`).
pub async fn contains(
    env: &Env,
    kind: ListKind,
    addr: Ipv4Addr,
    freshness: Freshness,
    now: Millis,
) -> Result<bool, StoreError> {
    let addr = u32::from(addr);
    answer(env, kind, freshness, now, |held| async move {
        held.contains(env, kind, addr).await
    })
    .await
}

/// The whole list as sorted disjoint intervals, with its version: every shard loaded.
pub async fn intervals(
    env: &Env,
    kind: ListKind,
    freshness: Freshness,
    now: Millis,
) -> Result<(u64, Rc<Intervals>), StoreError> {
    answer(env, kind, freshness, now, |held| async move {
        Ok((held.manifest.version, held.intervals(env, kind).await?))
    })
    .await
}

/// The global list's intervals without what the allow list holds, with both versions.
pub async fn challenged(
    env: &Env,
    freshness: Freshness,
    now: Millis,
) -> Result<(u64, u64, Rc<Intervals>), StoreError> {
    let (global_version, global) = intervals(env, ListKind::Global, freshness, now).await?;
    let (allow_version, allow) = intervals(env, ListKind::Allow, freshness, now).await?;
    let versions = (global_version, allow_version);
    if let Some(kept) = CHALLENGED.with_borrow(|kept| {
        kept.as_ref()
            .filter(|(at, _)| *at == versions)
            .map(|(_, c)| c.clone())
    }) {
        return Ok((global_version, allow_version, kept));
    }
    let challenged = Rc::new(subtract(&global, &allow));
    CHALLENGED.set(Some((versions, challenged.clone())));
    Ok((global_version, allow_version, challenged))
}

/// Answers from the version of the list this isolate should use. A newer
/// version is swapped in only once it answered; until then, and when KV fails,
/// the version held answers.
async fn answer<T, F, Fut>(
    env: &Env,
    kind: ListKind,
    freshness: Freshness,
    now: Millis,
    ask: F,
) -> Result<T, StoreError>
where
    F: Fn(Rc<Held>) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let held = HELD.with_borrow(|held| held.get(&kind).cloned());
    if let Some(held) = held
        .as_ref()
        .filter(|held| fresh(held.checked.get(), now, freshness))
    {
        return ask(held.clone()).await;
    }
    let candidate = match (read_manifest(env, kind).await, &held) {
        (Ok(manifest), Some(held)) if manifest.version == held.manifest.version => {
            held.checked.set(now);
            return ask(held.clone()).await;
        }
        (Ok(manifest), _) => Rc::new(Held::new(manifest, now)),
        (Err(error), Some(held)) => {
            console_error!(
                "{} list: keeping version {}: {error:?}",
                kind.name(),
                held.manifest.version
            );
            return ask(held.clone()).await;
        }
        (Err(error), None) => return Err(error),
    };
    match (ask(candidate.clone()).await, held) {
        (Ok(answer), _) => {
            // Another request may have swapped in a newer version meanwhile; never go back.
            HELD.with_borrow_mut(|held| {
                if held
                    .get(&kind)
                    .is_none_or(|current| current.manifest.version <= candidate.manifest.version)
                {
                    held.insert(kind, candidate);
                }
            });
            Ok(answer)
        }
        (Err(error), Some(held)) => {
            console_error!(
                "{} list: keeping version {}: {error:?}",
                kind.name(),
                held.manifest.version
            );
            ask(held).await
        }
        (Err(error), None) => Err(error),
    }
}

/// The current manifest. When KV has none yet (the writer never ran, or this
/// location read the key before it was first written and KV remembers that for
/// its edge period), the writer is asked: it publishes first if it never did,
/// taking over what an earlier version of the service kept in KV.
async fn read_manifest(env: &Env, kind: ListKind) -> Result<Manifest, StoreError> {
    if let Some(manifest) = cached(env.kv(binding(kind))?.get(Manifest::KEY))
        .json::<Manifest>()
        .await?
    {
        return Ok(manifest);
    }
    let mut response = call(env, Method::Get, "manifest", Some(kind), &[], None).await?;
    let text = response.text().await?;
    match response.status_code() {
        200 => serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("lists object answered {text:?}: {e}"))),
        status => Err(StoreError::Corrupt(format!(
            "{} list: no manifest in KV, and the lists object answered {status}: {text}",
            kind.name()
        ))),
    }
}

/// A call to the writer; `body` is passed through as it is, a stream or a text.
pub async fn call(
    env: &Env,
    method: Method,
    route: &str,
    kind: Option<ListKind>,
    headers: &[(&str, &str)],
    body: Option<JsValue>,
) -> Result<Response, StoreError> {
    let stub = env.durable_object(BINDING)?.get_by_name(NAME)?;
    let query = kind.map_or(String::new(), |kind| format!("?list={}", kind.name()));
    let sent = Headers::new();
    for (name, value) in headers {
        sent.set(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(sent).with_body(body);
    let response = stub
        .fetch_with_request(Request::new_with_init(
            &format!("https://lists/{route}{query}"),
            &init,
        )?)
        .await?;
    Ok(response)
}
