//! License records in KV: `license:<id>` holds the record, `key:<sha256 of key>`
//! points at the id. The key itself is never stored.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use worker::kv::KvStore;
use worker::Env;

use super::kv::{put_text, read_json, Binding, KvRead, Remembered};
use super::{list_page, StoreError};
use crate::domain::access::license::{key_digest, LicenseId, LicenseKey};
use crate::domain::feed::feed_token::FeedTokenOwner;
use crate::domain::settings::Freshness;
use crate::domain::time::{Millis, UnixTime};
use crate::platform::meter::{self, Billable};

pub(super) const BINDING: &str = "LICENSES";
/// How many licenses' standing one isolate remembers before it starts afresh.
const REMEMBERED: usize = 10_000;
/// How many made-up feed tokens one isolate remembers as no one's before it
/// forgets them, and only them.
const REFUSED_REMEMBERED: usize = 1_000;

thread_local! {
    /// Each license's standing, as this isolate last read it. Workers isolates are single-threaded.
    static STATUSES: Rc<Remembered<LicenseStatus>> = Rc::new(Remembered::new(REMEMBERED));
    /// Whose each feed token presented is, or that it is no one's: a feed polled
    /// with an unknown token costs one KV read a period, not one a poll.
    static FEED_TOKENS: Rc<TokenOwners> = Rc::new(TokenOwners::new(REMEMBERED, REFUSED_REMEMBERED));
}

/// Whose each feed token is, as this isolate last read it: the tokens KV knows,
/// and apart from them the ones it does not. Each is capped on its own, so that a
/// flood of made-up tokens, which fills only the second, never pushes a real
/// token out of the first (and its next poll into a KV read).
struct TokenOwners {
    known: Remembered<Option<FeedTokenOwner>>,
    refused: Remembered<Option<FeedTokenOwner>>,
}

impl TokenOwners {
    fn new(known: usize, refused: usize) -> Self {
        Self {
            known: Remembered::new(known),
            refused: Remembered::new(refused),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicenseRecord {
    key_digest: String,
    created_at: u64,
    revoked_at: Option<u64>,
    /// Whether the holder has allow-list entries, as its object last said, and
    /// the number of that saying: an older one never overwrites a newer. Records
    /// written before the allow list have neither: no entries.
    #[serde(default)]
    allow_list: bool,
    #[serde(default)]
    allow_list_version: u64,
}

/// What every holder request needs of its license's record, remembered by the isolate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LicenseStatus {
    pub active: bool,
    /// When it was issued, which the network's probation counts from.
    pub created_at: UnixTime,
    /// Whether the holder has allow-list entries: only then may an address the
    /// global challenge list holds need the holder's object to answer.
    pub allow_list: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordMetadata {
    created_at: u64,
    revoked_at: Option<u64>,
}

impl LicenseRecord {
    fn metadata(&self) -> RecordMetadata {
        RecordMetadata {
            created_at: self.created_at,
            revoked_at: self.revoked_at,
        }
    }
}

/// A license as KV keeps it, for the directory to take over.
pub struct Issued {
    pub id: LicenseId,
    pub created_at: UnixTime,
    pub revoked_at: Option<UnixTime>,
}

async fn save(kv: &KvStore, id: &LicenseId, record: &LicenseRecord) -> Result<(), StoreError> {
    let text = serde_json::to_string(record)?;
    meter::count(Billable::KvWrite);
    put_text(kv, &record_key(id), &text)?
        .metadata(record.metadata())?
        .execute()
        .await?;
    Ok(())
}

const RECORD_PREFIX: &str = "license:";

fn record_key(id: &LicenseId) -> String {
    format!("{RECORD_PREFIX}{}", id.as_str())
}

fn digest_key(digest: &str) -> String {
    format!("key:{digest}")
}

pub async fn create(env: &Env, now: UnixTime) -> Result<(LicenseId, LicenseKey), StoreError> {
    let (id, key) = (LicenseId::generate()?, LicenseKey::generate()?);
    let digest = key_digest(key.reveal());
    let kv = env.kv(BINDING)?;
    save(
        &kv,
        &id,
        &LicenseRecord {
            key_digest: digest.clone(),
            created_at: now.0,
            revoked_at: None,
            allow_list: false,
            allow_list_version: 0,
        },
    )
    .await?;
    meter::count(Billable::KvWrite);
    put_text(&kv, &digest_key(&digest), id.as_str())?
        .execute()
        .await?;
    Ok((id, key))
}

/// Marks the license revoked and forgets its key; `false` when there is no such license.
pub async fn revoke(env: &Env, id: &LicenseId, now: UnixTime) -> Result<bool, StoreError> {
    let kv = env.kv(BINDING)?;
    meter::count(Billable::KvRead);
    let Some(mut record) = kv.get(&record_key(id)).json::<LicenseRecord>().await? else {
        return Ok(false);
    };
    meter::count(Billable::KvWrite);
    kv.delete(&digest_key(&record.key_digest)).await?;
    if record.revoked_at.is_none() {
        record.revoked_at = Some(now.0);
        save(&kv, id, &record).await?;
    }
    Ok(true)
}

/// The active license a key belongs to, if any: one read, since revoking deletes
/// the key's record before it marks the license. A key of another shape than
/// those issued is no one's, and costs no read.
pub async fn find_by_key(env: &Env, key: &str) -> Result<Option<LicenseId>, StoreError> {
    if !LicenseKey::is_well_formed(key) {
        return Ok(None);
    }
    key_owner(&env.kv(BINDING)?, key).await
}

async fn key_owner(kv: &impl KvRead, key: &str) -> Result<Option<LicenseId>, StoreError> {
    let id = kv.read(&digest_key(&key_digest(key))).await?;
    Ok(id
        .as_deref()
        .and_then(|id| std::str::from_utf8(id).ok())
        .and_then(LicenseId::parse))
}

/// Whether the license exists and is not revoked, and whether its holder has
/// allow-list entries, as KV says within the edge cache's period; the isolate
/// remembers the answer for its own period, so most requests read nothing. A
/// revocation, or a holder's first allow-list entry, therefore shows within
/// `Freshness::worst_case_seconds`, in every isolate.
pub async fn status(
    env: &Env,
    id: &LicenseId,
    freshness: Freshness,
    now: Millis,
) -> Result<LicenseStatus, StoreError> {
    let standing = STATUSES.with(Rc::clone);
    status_of(
        &Binding { env, name: BINDING },
        &standing,
        id,
        freshness,
        now,
    )
    .await
}

async fn status_of(
    kv: &impl KvRead,
    remembered: &Remembered<LicenseStatus>,
    id: &LicenseId,
    freshness: Freshness,
    now: Millis,
) -> Result<LicenseStatus, StoreError> {
    if let Some(held) = remembered.get(id.as_str(), now, freshness) {
        return Ok(held);
    }
    let record = read_json::<LicenseRecord>(kv, &record_key(id)).await?;
    let held = LicenseStatus {
        active: record.as_ref().is_some_and(|r| r.revoked_at.is_none()),
        created_at: UnixTime(record.as_ref().map_or(0, |r| r.created_at)),
        allow_list: record.is_some_and(|r| r.allow_list),
    };
    remembered.put(id.as_str(), held, now);
    Ok(held)
}

/// Records whether the holder has allow-list entries, unless a newer saying
/// (`version`) is recorded already; `false` when there is no such license. The
/// revocations' object makes every change of a record after its creation, one
/// at a time, this and `revoke` alike.
pub async fn mark_allow_list(
    env: &Env,
    id: &LicenseId,
    allow_list: bool,
    version: u64,
) -> Result<bool, StoreError> {
    let kv = env.kv(BINDING)?;
    meter::count(Billable::KvRead);
    let Some(mut record) = kv.get(&record_key(id)).json::<LicenseRecord>().await? else {
        return Ok(false);
    };
    if version > record.allow_list_version {
        record.allow_list = allow_list;
        record.allow_list_version = version;
        save(&kv, id, &record).await?;
    }
    Ok(true)
}

/// One license as KV keeps it, if it was ever issued.
pub async fn issued(env: &Env, id: &LicenseId) -> Result<Option<Issued>, StoreError> {
    meter::count(Billable::KvRead);
    let record = env
        .kv(BINDING)?
        .get(&record_key(id))
        .json::<LicenseRecord>()
        .await?;
    Ok(record.map(|record| Issued {
        id: id.clone(),
        created_at: UnixTime(record.created_at),
        revoked_at: record.revoked_at.map(UnixTime),
    }))
}

/// One page of the licenses KV keeps (their standing rides on each key as
/// metadata, so a page is one list call; a record written before it did is read),
/// and the cursor of the next: how the directory takes over licenses issued before it.
pub async fn issued_page(
    env: &Env,
    cursor: Option<String>,
) -> Result<(Vec<Issued>, Option<String>), StoreError> {
    let kv = env.kv(BINDING)?;
    let (keys, next) = list_page(&kv, Some(RECORD_PREFIX), cursor, None).await?;
    let mut issued = Vec::with_capacity(keys.len());
    for key in &keys {
        let Some(id) = key
            .name
            .strip_prefix(RECORD_PREFIX)
            .and_then(LicenseId::parse)
        else {
            continue;
        };
        let standing = match key
            .metadata
            .clone()
            .and_then(|m| serde_json::from_value::<RecordMetadata>(m).ok())
        {
            Some(standing) => Some(standing),
            None => {
                meter::count(Billable::KvRead);
                kv.get(&key.name)
                    .json::<LicenseRecord>()
                    .await?
                    .map(|record| record.metadata())
            }
        };
        issued.extend(standing.map(|standing| Issued {
            id,
            created_at: UnixTime(standing.created_at),
            revoked_at: standing.revoked_at.map(UnixTime),
        }));
    }
    Ok((issued, next))
}

fn feed_token_key(digest: &str) -> String {
    format!("feed:{digest}")
}

/// Remembers whose a feed token is, under its digest.
pub async fn save_feed_token(
    env: &Env,
    digest: &str,
    owner: &FeedTokenOwner,
) -> Result<(), StoreError> {
    let record = serde_json::to_string(owner)?;
    meter::count(Billable::KvWrite);
    put_text(&env.kv(BINDING)?, &feed_token_key(digest), &record)?
        .execute()
        .await?;
    Ok(())
}

/// Whose the token of this digest is, as KV said within the bound. A revoked
/// token that an isolate still remembers is refused by its holder's object,
/// which checks on every feed that the token exists.
pub async fn feed_token_owner(
    env: &Env,
    digest: &str,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<FeedTokenOwner>, StoreError> {
    let remembered = FEED_TOKENS.with(Rc::clone);
    owner_of(
        &Binding { env, name: BINDING },
        &remembered,
        digest,
        freshness,
        now,
    )
    .await
}

/// The owner of a feed token as this isolate remembers it (`Some(None)` for a
/// token it remembers refused), or `None` when knowing it costs a KV read.
pub fn remembered_feed_token_owner(
    digest: &str,
    freshness: Freshness,
    now: Millis,
) -> Option<Option<FeedTokenOwner>> {
    FEED_TOKENS.with(|owners| {
        [&owners.known, &owners.refused]
            .into_iter()
            .find_map(|remembered| remembered.get(digest, now, freshness))
    })
}

async fn owner_of(
    kv: &impl KvRead,
    owners: &TokenOwners,
    digest: &str,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<FeedTokenOwner>, StoreError> {
    for remembered in [&owners.known, &owners.refused] {
        if let Some(owner) = remembered.get(digest, now, freshness) {
            return Ok(owner);
        }
    }
    let owner = read_json::<FeedTokenOwner>(kv, &feed_token_key(digest)).await?;
    let remembered = if owner.is_some() {
        &owners.known
    } else {
        &owners.refused
    };
    remembered.put(digest, owner.clone(), now);
    Ok(owner)
}

pub async fn forget_feed_token(env: &Env, digest: &str) -> Result<(), StoreError> {
    meter::count(Billable::KvWrite);
    env.kv(BINDING)?.delete(&feed_token_key(digest)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;
    use crate::store::kv::fake::FakeKv;

    const REVOKED_AT: u64 = 1_795_262_400_000;

    fn license() -> LicenseId {
        LicenseId::parse("lic_0123456789abcdef01234567").unwrap()
    }

    fn record(revoked_at: Option<u64>) -> Vec<u8> {
        serde_json::to_vec(&LicenseRecord {
            key_digest: "d".into(),
            created_at: 1,
            revoked_at,
            allow_list: false,
            allow_list_version: 0,
        })
        .unwrap()
    }

    fn active(
        kv: &FakeKv,
        isolate: &Remembered<LicenseStatus>,
        freshness: Freshness,
        at: u64,
    ) -> bool {
        held(kv, isolate, freshness, at).active
    }

    fn held(
        kv: &FakeKv,
        isolate: &Remembered<LicenseStatus>,
        freshness: Freshness,
        at: u64,
    ) -> LicenseStatus {
        status_of(
            kv.at(Millis(at)),
            isolate,
            &license(),
            freshness,
            Millis(at),
        )
        .now_or_never()
        .expect("the fake never waits")
        .unwrap()
    }

    /// The last moment, in ms after the revocation, that any of several isolates
    /// still answered "active": each first asks at its own moment after the
    /// revocation, the latest just before KV's edge lets go of what another isolate
    /// read a moment before the revocation; then each is asked every 100 ms.
    fn longest_answered_active(freshness: Freshness) -> u64 {
        let kv = FakeKv::default();
        kv.write(&record_key(&license()), &record(None));
        assert!(
            active(&kv, &Remembered::new(10), freshness, REVOKED_AT - 1),
            "another isolate reads just before"
        );
        kv.write(&record_key(&license()), &record(Some(REVOKED_AT / 1000)));
        let edge_ms = Freshness::EDGE_SECONDS * 1000;
        let isolates: Vec<(u64, Remembered<LicenseStatus>)> =
            [0, 1, 10_000, edge_ms - 3, edge_ms - 2, edge_ms - 1, edge_ms]
                .into_iter()
                .map(|first| (first, Remembered::new(10)))
                .collect();
        // Every isolate's questions in the order they happen: the edge cache is shared.
        let mut asked: Vec<(u64, usize)> = isolates
            .iter()
            .enumerate()
            .flat_map(|(n, (first, _))| (*first..120_000).step_by(100).map(move |after| (after, n)))
            .collect();
        asked.sort();
        let mut longest = 0;
        for (after, n) in asked {
            if active(&kv, &isolates[n].1, freshness, REVOKED_AT + after) {
                longest = longest.max(after);
            }
        }
        longest
    }

    #[test]
    fn a_record_written_before_the_allow_list_reads_as_a_holder_without_entries() {
        let kv = FakeKv::default();
        kv.write(
            &record_key(&license()),
            br#"{"keyDigest":"d","createdAt":1,"revokedAt":null}"#,
        );
        let freshness = Freshness::new(60).unwrap();
        assert_eq!(
            held(&kv, &Remembered::new(10), freshness, 0),
            LicenseStatus {
                active: true,
                created_at: UnixTime(1),
                allow_list: false
            }
        );
        let mut marked: LicenseRecord = serde_json::from_slice(&record(None)).unwrap();
        marked.allow_list = true;
        kv.write(
            &record_key(&license()),
            &serde_json::to_vec(&marked).unwrap(),
        );
        // Past the edge cache's period, a fresh isolate reads the flag.
        let later = (Freshness::EDGE_SECONDS + 1) * 1000;
        assert!(held(&kv, &Remembered::new(10), freshness, later).allow_list);
    }

    fn known_owner() -> FeedTokenOwner {
        FeedTokenOwner {
            license: license().as_str().to_owned(),
            id: "ft_1".into(),
            scope: crate::domain::feed::feed_token::Scope::Personal,
            aggregate: false,
            max_items: None,
        }
    }

    #[test]
    fn an_unknown_feed_token_costs_one_kv_read_a_period_and_the_cache_is_capped() {
        let kv = FakeKv::default();
        let owners = TokenOwners::new(10, 2);
        let freshness = Freshness::new(60).unwrap();
        let owner = |digest: &str, at: u64| {
            owner_of(kv.at(Millis(at)), &owners, digest, freshness, Millis(at))
                .now_or_never()
                .expect("the fake never waits")
                .unwrap()
        };
        assert_eq!(owner("unknown", 0), None);
        assert_eq!(owner("unknown", 29_999), None);
        assert_eq!(kv.reads.get(), 1, "the second poll read nothing");
        assert_eq!(owner("unknown", 30_000), None);
        assert_eq!(kv.reads.get(), 2, "the isolate's period is over");
        let known = known_owner();
        kv.write(
            &feed_token_key("known"),
            &serde_json::to_vec(&known).unwrap(),
        );
        assert_eq!(owner("known", 30_001), Some(known));
        owner("other", 30_002);
        owner("another", 30_003);
        assert!(
            owners
                .refused
                .get("unknown", Millis(30_004), freshness)
                .is_none(),
            "past its capacity the cache of refused tokens starts afresh"
        );
    }

    #[test]
    fn a_flood_of_made_up_tokens_leaves_the_known_ones_remembered() {
        let kv = FakeKv::default();
        let owners = TokenOwners::new(10, 100);
        let freshness = Freshness::new(60).unwrap();
        let owner = |digest: &str, at: u64| {
            owner_of(kv.at(Millis(at)), &owners, digest, freshness, Millis(at))
                .now_or_never()
                .expect("the fake never waits")
                .unwrap()
        };
        let known = known_owner();
        kv.write(
            &feed_token_key("known"),
            &serde_json::to_vec(&known).unwrap(),
        );
        assert_eq!(owner("known", 0), Some(known.clone()));
        // Ten times as many made-up tokens as the known ones' whole room, each once.
        for n in 0..1000 {
            assert_eq!(owner(&format!("made-up-{n}"), 1 + n), None);
        }
        let reads = kv.reads.get();
        assert_eq!(owner("known", 2000), Some(known));
        assert_eq!(
            kv.reads.get(),
            reads,
            "the known token was read again: the flood pushed it out"
        );
    }

    #[test]
    fn a_revocation_shows_in_every_isolate_within_the_bound_for_every_accepted_setting() {
        for budget in 0..=60 {
            let freshness = Freshness::new(budget).unwrap();
            let longest = longest_answered_active(freshness);
            assert!(
                longest < freshness.worst_case_seconds() * 1000 && longest < 60_000,
                "CACHE_SECONDS={budget}: a revoked license still answered active {longest} ms after its revocation"
            );
        }
    }

    #[test]
    fn the_bound_is_reached_so_the_test_above_can_see_a_longer_one() {
        let freshness = Freshness::new(60).unwrap();
        assert!(
            longest_answered_active(freshness) >= 59_000,
            "the worst case is 30 s at the edge and 30 s in the isolate"
        );
    }

    #[test]
    fn an_isolate_reads_a_license_once_per_its_period() {
        let kv = FakeKv::default();
        kv.write(&record_key(&license()), &record(None));
        let isolate = Remembered::new(10);
        let freshness = Freshness::new(60).unwrap();
        for after in (0..30_000).step_by(1000) {
            assert!(active(&kv, &isolate, freshness, REVOKED_AT + after));
        }
        assert_eq!(kv.reads.get(), 1);
        let uncached = Freshness::new(0).unwrap();
        active(&kv, &isolate, uncached, REVOKED_AT + 30_000);
        active(&kv, &isolate, uncached, REVOKED_AT + 30_000);
        assert_eq!(
            kv.reads.get(),
            2,
            "CACHE_SECONDS=0: one request's two looks, at its one moment, read once"
        );
        active(&kv, &isolate, uncached, REVOKED_AT + 30_001);
        assert_eq!(kv.reads.get(), 3, "and the next moment reads again");
    }

    #[test]
    fn a_revoked_key_logs_in_no_longer_than_the_edge_keeps_it() {
        let kv = FakeKv::default();
        let key = "glk_abc";
        kv.write(&digest_key(&key_digest(key)), license().as_str().as_bytes());
        let owner = |at: u64| {
            key_owner(kv.at(Millis(at)), key)
                .now_or_never()
                .unwrap()
                .unwrap()
        };
        assert_eq!(owner(REVOKED_AT - 1), Some(license()));
        kv.delete(&digest_key(&key_digest(key)));
        assert_eq!(
            owner(REVOKED_AT + Freshness::EDGE_SECONDS * 1000 - 2),
            Some(license()),
            "the edge still has it"
        );
        assert_eq!(owner(REVOKED_AT + Freshness::EDGE_SECONDS * 1000), None);
    }
}
