//! The operator keys as every isolate checks them: one record in KV
//! (`operator-keys` in `LICENSES`) of the keys' digests with their id, name and
//! role, and whether revoked, which the directory writes at every change of a
//! key. It is read through KV's edge cache and the isolate's memory, like a
//! license's standing, so that a key is checked without a call into the
//! directory (a flood of made-up keys reaches no object), and a revoked key is
//! refused everywhere within `CACHE_SECONDS`.

use std::rc::Rc;

use worker::Env;

use super::kv::{put_text, read_json, Binding, KvRead, Remembered};
use super::StoreError;
use crate::domain::access::operator::KnownKeys;
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::platform::meter::{self, Billable};

const BINDING: &str = "LICENSES";
const KEY: &str = "operator-keys";

thread_local! {
    /// The record as this isolate last read it: one value, or that there is none.
    static KNOWN: Rc<Remembered<Option<Rc<KnownKeys>>>> = Rc::new(Remembered::new(1));
}

/// The operator keys as KV says within the edge cache's period, remembered by
/// the isolate for its own; `None` before the directory first wrote them.
pub async fn known(
    env: &Env,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<Rc<KnownKeys>>, StoreError> {
    let remembered = KNOWN.with(Rc::clone);
    known_of(&Binding { env, name: BINDING }, &remembered, freshness, now).await
}

async fn known_of(
    kv: &impl KvRead,
    remembered: &Remembered<Option<Rc<KnownKeys>>>,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<Rc<KnownKeys>>, StoreError> {
    if let Some(known) = remembered.get(KEY, now, freshness) {
        return Ok(known);
    }
    let known = read_json::<KnownKeys>(kv, KEY).await?.map(Rc::new);
    remembered.put(KEY, known.clone(), now);
    Ok(known)
}

/// Remembers the keys the directory answered with when KV had none yet.
pub fn remember(keys: Rc<KnownKeys>, now: Millis) {
    KNOWN.with(|known| known.put(KEY, Some(keys), now));
}

/// Writes the record: the directory's, at every change of a key.
pub async fn publish(env: &Env, keys: &KnownKeys) -> Result<(), StoreError> {
    let text = serde_json::to_string(keys)?;
    meter::count(Billable::KvWrite);
    put_text(&env.kv(BINDING)?, KEY, &text)?.execute().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;
    use crate::domain::access::operator::{KnownKey, Role};
    use crate::store::kv::fake::FakeKv;

    const REVOKED_AT: u64 = 1_795_262_400_000;

    fn record(revoked: bool) -> Vec<u8> {
        let mut keys = KnownKeys::default();
        keys.keys.insert(
            "digest".to_owned(),
            KnownKey {
                id: "key_0123456789abcdef".to_owned(),
                name: "deputy".to_owned(),
                role: Role::Admin,
                revoked,
            },
        );
        serde_json::to_vec(&keys).unwrap()
    }

    fn stands(kv: &FakeKv, isolate: &Remembered<Option<Rc<KnownKeys>>>, at: u64) -> bool {
        let freshness = Freshness::new(60).unwrap();
        let known = known_of(kv.at(Millis(at)), isolate, freshness, Millis(at))
            .now_or_never()
            .expect("the fake never waits")
            .unwrap()
            .expect("published");
        known.caller("digest").is_ok()
    }

    #[test]
    fn a_revoked_key_is_refused_in_every_isolate_within_the_bound_and_read_once_a_period() {
        let kv = FakeKv::default();
        kv.write(KEY, &record(false));
        let early = Remembered::new(1);
        assert!(stands(&kv, &early, REVOKED_AT - 1), "read just before");
        kv.write(KEY, &record(true));
        let late = Remembered::new(1);
        let mut longest = 0;
        for after in (0..120_000).step_by(100) {
            for isolate in [&early, &late] {
                if stands(&kv, isolate, REVOKED_AT + after) {
                    longest = longest.max(after);
                }
            }
        }
        let freshness = Freshness::new(60).unwrap();
        assert!(
            longest < freshness.worst_case_seconds() * 1000,
            "a revoked key still stood {longest} ms after its revocation"
        );
        assert!(
            longest >= 29_000,
            "the isolate keeps what it read: {longest}"
        );
        let reads = kv.reads.get();
        for after in 0..100 {
            stands(&kv, &late, REVOKED_AT + 120_000 + after);
        }
        assert_eq!(kv.reads.get(), reads + 1, "a flood reads the record once");
    }

    #[test]
    fn no_record_yet_is_none() {
        let kv = FakeKv::default();
        let freshness = Freshness::new(60).unwrap();
        let known = known_of(&kv, &Remembered::new(1), freshness, Millis(0))
            .now_or_never()
            .unwrap()
            .unwrap();
        assert_eq!(known, None);
    }
}
