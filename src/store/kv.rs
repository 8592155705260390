//! KV as the Worker reads it: through the edge cache, then through what an
//! isolate remembers. Both periods come from `Freshness`, so that their sum, the
//! longest a change can take to show, stays within the bound; the fake KV of the
//! tests models the edge cache, so that the sum is tested, not only stated.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashMap;

use worker::kv::{KvStore, PutOptionsBuilder};
use worker::Env;

use super::StoreError;
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::platform::meter::{self, Billable};

/// Reads of one KV namespace.
#[allow(async_fn_in_trait)]
pub trait KvRead {
    /// The value of `key` as KV's edge cache gives it: every read asks for the
    /// shortest edge cache, `Freshness::EDGE_SECONDS` (KV keeps a value 60 seconds
    /// when not told otherwise, which alone would use up the bound).
    async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// A short wait of the calling request's own, before it looks again at a
    /// value another request is reading (see `SharedLoad`).
    async fn pause(&self);
}

/// Starts a write of `text` under `key`, as its UTF-8 bytes. `KvStore::put` takes
/// any value through serde_wasm_bindgen and tells a number from a string or a
/// JSON value: code the module carried for text alone (0.5 KiB gzipped), where
/// KV keeps bytes either way and a read as text gives the same back.
pub fn put_text(kv: &KvStore, key: &str, text: &str) -> Result<PutOptionsBuilder, StoreError> {
    Ok(kv.put_bytes(key, text.as_bytes())?)
}

/// How long a request waits before it looks again at a load another is doing: a
/// shard read from KV takes milliseconds.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

impl KvRead for KvStore {
    async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        meter::count(Billable::KvRead);
        Ok(self
            .get(key)
            .cache_ttl(Freshness::EDGE_SECONDS)
            .bytes()
            .await?)
    }

    async fn pause(&self) {
        worker::Delay::from(PAUSE).await
    }
}

/// A KV namespace by its binding's name, looked up at a read: a value the
/// isolate remembers is answered without the lookup, which is six calls into
/// the runtime (the binding and each of its methods). `E` is the environment,
/// borrowed, or owned where the handle outlives the request's borrow (a feed's
/// stream).
#[derive(Clone)]
pub struct Binding<E> {
    pub env: E,
    pub name: &'static str,
}

impl<E: Borrow<Env>> KvRead for Binding<E> {
    async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.env.borrow().kv(self.name)?.read(key).await
    }

    async fn pause(&self) {
        worker::Delay::from(PAUSE).await
    }
}

impl<T: KvRead> KvRead for std::rc::Rc<T> {
    async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).read(key).await
    }

    async fn pause(&self) {
        (**self).pause().await
    }
}

/// `read`, as JSON.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    kv: &impl KvRead,
    key: &str,
) -> Result<Option<T>, StoreError> {
    kv.read(key)
        .await?
        .map(|bytes| serde_json::from_slice(&bytes))
        .transpose()
        .map_err(StoreError::from)
}

/// What one isolate remembers of values it read, each for `Freshness::isolate_seconds`
/// from its read, and at least for the moment it was read at (`is_fresh`). At most
/// `capacity` values; past that it starts afresh.
pub struct Remembered<V> {
    values: RefCell<HashMap<String, (Millis, V)>>,
    capacity: usize,
}

impl<V: Clone> Remembered<V> {
    pub fn new(capacity: usize) -> Self {
        Self {
            values: RefCell::new(HashMap::new()),
            capacity,
        }
    }

    /// The value read for `key`, while it may still stand in for a read at `now`.
    pub fn get(&self, key: &str, now: Millis, freshness: Freshness) -> Option<V> {
        let values = self.values.borrow();
        let (read_at, value) = values.get(key)?;
        is_fresh(*read_at, now, freshness).then(|| value.clone())
    }

    /// Remembers `value`, read at `now`: for the isolate's period, or with none
    /// (`CACHE_SECONDS` of 30 or less) for that moment only, the one a request
    /// reads the clock at (`is_fresh`), so that its second look (the caller's
    /// standing, then the lists' weighing) reads KV no more.
    pub fn put(&self, key: &str, value: V, now: Millis) {
        let mut values = self.values.borrow_mut();
        if values.len() >= self.capacity {
            values.clear();
        }
        values.insert(key.to_owned(), (now, value));
    }
}

/// Whether a value an isolate read at `read_at` may still stand in for a KV read at `now`:
/// within the isolate's period, or read at that very moment or after it. A request
/// reads the clock once, so a list's manifest is read once however many of its
/// addresses ask, even when the period is nil (`CACHE_SECONDS` of 30 or less): a
/// bulk call of a thousand addresses is two manifest reads, not two thousand.
pub fn is_fresh(read_at: Millis, now: Millis, freshness: Freshness) -> bool {
    read_at >= now || now.since(read_at) < freshness.isolate_seconds() * 1000
}

/// A KV namespace in memory with the edge cache KV puts in front of it: a read
/// keeps the value it saw for `Freshness::EDGE_SECONDS`, and later reads within
/// that period get it, whatever was written since.
#[cfg(test)]
pub mod fake {
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    use super::KvRead;
    use crate::domain::settings::Freshness;
    use crate::domain::time::Millis;
    use crate::store::StoreError;

    /// A value as the edge cache keeps it: when it was read, and what was there.
    type Cached = (u64, Option<Vec<u8>>);

    #[derive(Default)]
    pub struct FakeKv {
        pub now: Cell<u64>,
        stored: RefCell<HashMap<String, Vec<u8>>>,
        edge: RefCell<HashMap<String, Cached>>,
        pub reads: Cell<usize>,
        /// When set, every read answers only on its second poll, as a read over the
        /// network would: requests polled in turn overlap in time.
        pub slow: Cell<bool>,
        /// How often a request paused to wait for another's read.
        pub pauses: Cell<usize>,
    }

    impl FakeKv {
        pub fn at(&self, now: Millis) -> &Self {
            self.now.set(now.0);
            self
        }

        pub fn write(&self, key: &str, value: &[u8]) {
            self.stored
                .borrow_mut()
                .insert(key.to_owned(), value.to_vec());
        }

        pub fn delete(&self, key: &str) {
            self.stored.borrow_mut().remove(key);
        }
    }

    impl KvRead for FakeKv {
        async fn read(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.reads.set(self.reads.get() + 1);
            if self.slow.get() {
                yield_once().await;
            }
            let now = self.now.get();
            let mut edge = self.edge.borrow_mut();
            if let Some((cached_at, value)) = edge.get(key) {
                if now < cached_at + Freshness::EDGE_SECONDS * 1000 {
                    return Ok(value.clone());
                }
            }
            let value = self.stored.borrow().get(key).cloned();
            edge.insert(key.to_owned(), (now, value.clone()));
            Ok(value)
        }

        async fn pause(&self) {
            self.pauses.set(self.pauses.get() + 1);
            yield_once().await
        }
    }

    /// Answers on its second poll, as anything over the network would: futures
    /// polled in turn overlap in time.
    pub async fn yield_once() {
        let mut polled = false;
        std::future::poll_fn(|context| {
            if polled {
                std::task::Poll::Ready(())
            } else {
                polled = true;
                context.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_stands_in_for_a_read_within_the_isolates_period_or_the_same_request() {
        // The last moment, in ms after the read, that the value stands in.
        for (budget, last_ms) in [(0, 0), (30, 0), (60, 29_999)] {
            let freshness = Freshness::new(budget).unwrap();
            let remembered = Remembered::new(10);
            remembered.put("k", 7, Millis(1_000));
            // A request reads the clock once: its second look reads nothing, whatever the period.
            assert_eq!(
                remembered.get("k", Millis(1_000), freshness),
                Some(7),
                "CACHE_SECONDS={budget}: a value read stands in for the rest of its moment"
            );
            assert_eq!(
                remembered.get("k", Millis(1_000 + last_ms), freshness),
                Some(7),
                "{budget}"
            );
            assert_eq!(
                remembered.get("k", Millis(1_001 + last_ms), freshness),
                None,
                "{budget}"
            );
        }
    }
}
