//! The operator's lists as an isolate holds them: the published snapshots, read
//! from KV, and lookups answered from memory; the global list's promoted parts
//! are read through `promoted_parts`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::rc::Rc;

use crate::domain::code::Coded;
use crate::domain::net::intervals::Intervals;
use crate::domain::operator_lists::delta::{self, Piece, VersionChange, MAX_DELTA_INTERVALS};
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{Manifest, Shards};
use crate::domain::precedence::PublishedLists;
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::platform::log;
use crate::store::kv::{is_fresh, read_json, KvRead};
use crate::store::operator_lists::promoted_parts::PromotedParts;
use crate::store::operator_lists::version::Version;
use crate::store::StoreError;

/// The KV namespace a list's snapshots are published to.
pub fn binding(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Global => "GLOBAL_LIST",
        ListKind::Allow => "ALLOW_LIST",
    }
}

/// Where an isolate finds the published lists.
#[allow(async_fn_in_trait)]
pub trait ListSource {
    type Kv: KvRead;
    fn kv(&self, kind: ListKind) -> Result<Self::Kv, StoreError>;
    /// The manifest when KV has none yet: the operator lists' object publishes first if it never did.
    async fn first_manifest(&self, kind: ListKind) -> Result<Manifest, StoreError>;
}

/// A whole version of a list: its number, and each family as `T4` and `T6` hold it.
#[derive(Debug, Clone, Default)]
pub struct Versioned<T4, T6> {
    pub version: u64,
    pub v4: T4,
    pub v6: T6,
}

/// The operator's lists as the precedence weighs a holder's entries against them:
/// the global list's shards (empty for a personal feed) and the allow list's
/// intervals, each family apart.
pub fn published(
    global: Versioned<Shards, Shards<u128>>,
    allow: Versioned<Rc<Intervals>, Rc<Intervals<u128>>>,
) -> PublishedLists {
    PublishedLists::new((global.v4, global.v6), (allow.v4, allow.v6))
}

/// What one isolate holds of the published lists.
#[derive(Default)]
pub struct OperatorListSnapshots {
    lists: RefCell<HashMap<ListKind, Rc<Version>>>,
    /// A newer version being loaded: the requests that find it share its loads.
    loading: RefCell<HashMap<ListKind, Rc<Version>>>,
    /// Changes composed for feeds, by list and span of versions: agents polling
    /// one service mostly hold the same few cursors.
    composed: RefCell<HashMap<(ListKind, u64, u64), Rc<VersionChange>>>,
}

thread_local! {
    /// Workers isolates are single-threaded.
    static HELD: Rc<OperatorListSnapshots> = Rc::new(OperatorListSnapshots::default());
}

/// Composed changes an isolate keeps at most.
const COMPOSED_KEPT: usize = 16;

/// The KV key of the manifest of a list's current version.
pub const MANIFEST_KEY: &str = "manifest";

/// The KV key of the piece of a list's changes that ends at `version`, at `level` (`delta`).
pub fn piece_key(version: u64, level: u8) -> String {
    format!("d{version}.{level}")
}

impl OperatorListSnapshots {
    /// What this isolate holds.
    pub fn isolate() -> Rc<OperatorListSnapshots> {
        HELD.with(Rc::clone)
    }

    /// Whether `addr` is on the list, as its published snapshot says. Once an isolate
    /// holds the part of the snapshot an address falls in, the answer needs no I/O
    /// until the manifest is due to be read again (`Freshness::isolate_seconds`).
    pub async fn contains(
        &self,
        source: &impl ListSource,
        kind: ListKind,
        addr: IpAddr,
        freshness: Freshness,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let kv = source.kv(kind)?;
        let kv = &kv;
        self.answer(source, kind, freshness, now, |version| async move {
            match addr {
                IpAddr::V4(v4) => version.contains(kv, kind, u32::from(v4)).await,
                IpAddr::V6(v6) => version.contains(kv, kind, u128::from(v6)).await,
            }
        })
        .await
    }

    /// The whole list as sorted disjoint intervals, each family apart, with its
    /// version: every shard loaded.
    pub async fn intervals(
        &self,
        source: &impl ListSource,
        kind: ListKind,
        freshness: Freshness,
        now: Millis,
    ) -> Result<Versioned<Rc<Intervals>, Rc<Intervals<u128>>>, StoreError> {
        let kv = source.kv(kind)?;
        let kv = &kv;
        self.answer(source, kind, freshness, now, |version| async move {
            Ok(Versioned {
                version: version.manifest.version,
                v4: version.intervals(kv, kind).await?,
                v6: version.intervals(kv, kind).await?,
            })
        })
        .await
    }

    /// The whole list as its shards, each family apart, with its version: every
    /// shard loaded, none copied; and the promoted parts of the same version,
    /// read only as a feed that says which blocks were promoted reaches them
    /// (`PromotedParts::label`), nothing before.
    pub async fn shards<S: ListSource>(
        &self,
        source: &S,
        kind: ListKind,
        freshness: Freshness,
        now: Millis,
    ) -> Result<(Versioned<Shards, Shards<u128>>, PromotedParts<S::Kv>), StoreError>
    where
        S::Kv: Clone,
    {
        let kv = source.kv(kind)?;
        let kv = &kv;
        self.answer(source, kind, freshness, now, |version| async move {
            let shards = Versioned {
                version: version.manifest.version,
                v4: version.all_shards(kv, kind).await?,
                v6: version.all_shards(kv, kind).await?,
            };
            let promoted = PromotedParts {
                version,
                kv: kv.clone(),
                kind,
            };
            Ok((shards, promoted))
        })
        .await
    }

    /// The list's version as the isolate holds it: no I/O until its manifest is
    /// due to be read again.
    pub async fn version(
        &self,
        source: &impl ListSource,
        kind: ListKind,
        freshness: Freshness,
        now: Millis,
    ) -> Result<u64, StoreError> {
        self.answer(source, kind, freshness, now, |version| async move {
            Ok(version.manifest.version)
        })
        .await
    }

    /// The addresses of each family whose membership changed from version `from`
    /// to `to`, from the published pieces; `None` when the pieces no longer reach back that far, one
    /// says the change is too large or unknown, or one is not visible yet: the
    /// caller then answers with the whole list.
    pub async fn changes(
        &self,
        source: &impl ListSource,
        kind: ListKind,
        (from, to): (u64, u64),
        freshness: Freshness,
        now: Millis,
    ) -> Result<Option<Rc<VersionChange>>, StoreError> {
        let deltas_from = self
            .answer(source, kind, freshness, now, |version| async move {
                Ok(version.manifest.deltas_from)
            })
            .await?;
        if deltas_from == 0 || from < deltas_from || from >= to {
            return Ok(None);
        }
        if let Some(kept) = self.composed.borrow().get(&(kind, from, to)) {
            return Ok(Some(kept.clone()));
        }
        let kv = source.kv(kind)?;
        let mut change = VersionChange::default();
        for (version, level) in delta::cover(from, to) {
            let key = piece_key(version, level);
            let Some(bytes) = kv.read(&key).await? else {
                return Ok(None);
            };
            match Piece::decode(&bytes) {
                Some(Piece::Changed(piece)) => change = change.then(&piece),
                Some(Piece::Reset) => return Ok(None),
                None => {
                    return Err(StoreError::Corrupt(format!(
                        "{} list: piece {key} does not decode",
                        kind.code()
                    )))
                }
            }
            if change.len() > MAX_DELTA_INTERVALS {
                return Ok(None);
            }
        }
        let change = Rc::new(change);
        let mut composed = self.composed.borrow_mut();
        if composed.len() >= COMPOSED_KEPT {
            composed.clear();
        }
        composed.insert((kind, from, to), change.clone());
        Ok(Some(change))
    }

    /// The version `manifest` names, shared with the requests already loading it.
    fn candidate(
        &self,
        kind: ListKind,
        manifest: Manifest,
        now: Millis,
        held: Option<&Version>,
    ) -> Rc<Version> {
        let mut loading = self.loading.borrow_mut();
        match loading.get(&kind) {
            Some(version) if version.manifest.version == manifest.version => version.clone(),
            _ => {
                let version = Rc::new(Version::new(manifest, now, held));
                loading.insert(kind, version.clone());
                version
            }
        }
    }

    /// Answers from the version of the list this isolate should use. A newer
    /// version is swapped in only once it answered; until then, and when KV fails,
    /// the version held answers.
    async fn answer<T, F, Fut>(
        &self,
        source: &impl ListSource,
        kind: ListKind,
        freshness: Freshness,
        now: Millis,
        ask: F,
    ) -> Result<T, StoreError>
    where
        F: Fn(Rc<Version>) -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let held = self.lists.borrow().get(&kind).cloned();
        if let Some(held) = held
            .as_ref()
            .filter(|held| is_fresh(held.checked.get(), now, freshness))
        {
            return ask(held.clone()).await;
        }
        let read = read_manifest(source, kind).await;
        // What is held now: another request may have loaded a version while this one read.
        let held = self.lists.borrow().get(&kind).cloned();
        let candidate = match (read, &held) {
            (Ok(manifest), Some(held)) if manifest.version == held.manifest.version => {
                // Never back: a request that began earlier may finish its read later.
                held.checked.set(held.checked.get().max(now));
                return ask(held.clone()).await;
            }
            (Ok(manifest), held) => self.candidate(kind, manifest, now, held.as_deref()),
            (Err(error), Some(held)) => {
                log::error(&format!(
                    "{} list: keeping version {}: {error:?}",
                    kind.code(),
                    held.manifest.version
                ));
                return ask(held.clone()).await;
            }
            (Err(error), None) => return Err(error),
        };
        let answer = ask(candidate.clone()).await;
        {
            let mut loading = self.loading.borrow_mut();
            if loading
                .get(&kind)
                .is_some_and(|l| Rc::ptr_eq(l, &candidate))
            {
                loading.remove(&kind);
            }
        }
        match (answer, held) {
            (Ok(answer), _) => {
                // Another request may have swapped in a newer version meanwhile; never go back.
                let mut lists = self.lists.borrow_mut();
                if lists
                    .get(&kind)
                    .is_none_or(|current| current.manifest.version <= candidate.manifest.version)
                {
                    lists.insert(kind, candidate);
                }
                Ok(answer)
            }
            (Err(error), Some(held)) => {
                log::error(&format!(
                    "{} list: keeping version {}: {error:?}",
                    kind.code(),
                    held.manifest.version
                ));
                ask(held).await
            }
            (Err(error), None) => Err(error),
        }
    }
}

/// The current manifest. When KV has none yet (the operator lists' object never ran, or this
/// location read the key before it was first written and KV remembers that for
/// its edge period), the operator lists' object is asked: it publishes first if it never did,
/// taking over what an earlier version of the service kept in KV.
async fn read_manifest(source: &impl ListSource, kind: ListKind) -> Result<Manifest, StoreError> {
    match read_json::<Manifest>(&source.kv(kind)?, MANIFEST_KEY).await? {
        Some(manifest) => Ok(manifest),
        None => source.first_manifest(kind).await,
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;
    use crate::domain::feed::item::{FeedBlock, FeedItem, Source};
    use crate::domain::net::range::{Cidr, Ipv4Range};
    use crate::domain::operator_lists::list::FamilyEntries;
    use crate::domain::operator_lists::snapshot::Ipv6Shards;
    use crate::domain::operator_lists::snapshot::{Shard, Sharded};
    use std::net::Ipv4Addr;

    fn shard_key(version: u64, index: usize) -> String {
        u32::shard_key(version, index)
    }
    use crate::store::kv::fake::FakeKv;

    const PUBLISHED_AT: u64 = 1_795_262_400_000;

    /// Both lists in fake KV namespaces; the operator lists' object is never asked in these tests.
    #[derive(Default)]
    struct Fake {
        global: Rc<FakeKv>,
        allow: Rc<FakeKv>,
    }

    impl ListSource for Fake {
        type Kv = Rc<FakeKv>;

        fn kv(&self, kind: ListKind) -> Result<Rc<FakeKv>, StoreError> {
            Ok(match kind {
                ListKind::Global => self.global.clone(),
                ListKind::Allow => self.allow.clone(),
            })
        }

        async fn first_manifest(&self, kind: ListKind) -> Result<Manifest, StoreError> {
            Err(StoreError::Corrupt(format!(
                "the {} list was never published",
                kind.code()
            )))
        }
    }

    /// Writes a version as the operator lists' object does: its shards, then its manifest. IPv6
    /// entries make a shard of their own, named in the manifest's IPv6 part.
    fn publish(kv: &FakeKv, version: u64, entries: &[&str]) {
        let list = FamilyEntries::new(entries.iter().filter_map(|e| Ipv4Range::parse(e)).collect());
        let shard = Shard::of_intervals(list.intervals().collect());
        kv.write(&shard_key(version, 0), &shard.encode());
        let list6 = FamilyEntries::new(entries.iter().filter_map(|e| Cidr::parse(e)).collect());
        let mut ipv6 = Ipv6Shards::default();
        if !list6.is_empty() {
            let key = u128::shard_key(version, 0);
            kv.write(
                &key,
                &Shard::<u128>::of_intervals(list6.intervals().collect()).encode(),
            );
            ipv6 = Ipv6Shards {
                starts: vec![0],
                keys: vec![key],
                promoted: None,
            };
        }
        let manifest = Manifest {
            version,
            published_at: 0,
            entries: entries.len(),
            shards: vec![0],
            keys: vec![shard_key(version, 0)],
            promoted: None,
            deltas_from: 0,
            ipv6,
        };
        kv.write(MANIFEST_KEY, &serde_json::to_vec(&manifest).unwrap());
    }

    #[test]
    fn ipv6_entries_are_looked_up_in_shards_of_their_own() {
        let fake = Fake::default();
        let top = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        publish(&fake.global, 1, &["8.8.8.8", "2a00:1450::/32", top]);
        let (held, freshness) = (OperatorListSnapshots::default(), Freshness::new(0).unwrap());
        let at = PUBLISHED_AT;
        for ip in [
            "8.8.8.8",
            "2a00:1450::",
            "2a00:1450:ffff:ffff:ffff:ffff:ffff:ffff",
            top,
        ] {
            assert!(listed(&fake, &held, freshness, at, ip), "{ip}");
        }
        for ip in [
            "8.8.8.9",
            "2a00:1451::",
            "2a00:144f:ffff:ffff:ffff:ffff:ffff:ffff",
            "::",
        ] {
            assert!(!listed(&fake, &held, freshness, at, ip), "{ip}");
        }
        // A version without IPv6 entries answers IPv6 addresses from its manifest alone.
        publish(&fake.allow, 1, &["8.8.8.8"]);
        let allow = |ip: &str| answers(&fake, &held, ListKind::Allow, (freshness, at), ip);
        assert!(!allow("2a00:1450::1"));
        assert_eq!(fake.allow.reads.get(), 1, "the manifest, and no shard");
        assert!(allow("8.8.8.8"));
    }

    #[test]
    fn a_request_reads_each_manifest_once_however_many_addresses_it_asks_about() {
        let fake = Fake::default();
        publish(&fake.global, 1, &["8.8.8.8", "200.1.1.1"]);
        let (held, every_time) = (OperatorListSnapshots::default(), Freshness::new(0).unwrap());
        assert!(listed(&fake, &held, every_time, PUBLISHED_AT, "8.8.8.8"));
        let reads = fake.global.reads.get();
        for n in 0..100 {
            let ip = format!("200.1.1.{n}");
            assert_eq!(listed(&fake, &held, every_time, PUBLISHED_AT, &ip), n == 1);
        }
        assert_eq!(
            fake.global.reads.get(),
            reads,
            "a request's addresses are answered from one manifest read of its moment"
        );
        listed(&fake, &held, every_time, PUBLISHED_AT + 1, "8.8.8.8");
        assert_eq!(
            fake.global.reads.get(),
            reads + 1,
            "the next moment reads again"
        );
    }

    fn listed(
        fake: &Fake,
        held: &OperatorListSnapshots,
        freshness: Freshness,
        at: u64,
        ip: &str,
    ) -> bool {
        answers(fake, held, ListKind::Global, (freshness, at), ip)
    }

    /// Whether `kind` holds `ip`, as `held` answers at `at`.
    fn answers(
        fake: &Fake,
        held: &OperatorListSnapshots,
        kind: ListKind,
        (freshness, at): (Freshness, u64),
        ip: &str,
    ) -> bool {
        fake.kv(kind).unwrap().at(Millis(at));
        held.contains(fake, kind, ip.parse().unwrap(), freshness, Millis(at))
            .now_or_never()
            .expect("the fake never waits")
            .unwrap()
    }

    /// The last moment, in ms after a new version was published, that an isolate
    /// still answered from the version before (see `licenses::tests` for the schedule).
    fn longest_answered_from_the_old_version(freshness: Freshness) -> u64 {
        let fake = Fake::default();
        publish(&fake.global, 1, &["8.8.8.8"]);
        assert!(
            !listed(
                &fake,
                &OperatorListSnapshots::default(),
                freshness,
                PUBLISHED_AT - 1,
                "9.9.9.9"
            ),
            "another isolate reads just before"
        );
        publish(&fake.global, 2, &["8.8.8.8", "9.9.9.9"]);
        let edge_ms = Freshness::EDGE_SECONDS * 1000;
        let isolates: Vec<(u64, OperatorListSnapshots)> = [0, 1, 10_000, edge_ms - 2, edge_ms - 1]
            .into_iter()
            .map(|first| (first, OperatorListSnapshots::default()))
            .collect();
        let mut asked: Vec<(u64, usize)> = isolates
            .iter()
            .enumerate()
            .flat_map(|(n, (first, _))| (*first..120_000).step_by(100).map(move |after| (after, n)))
            .collect();
        asked.sort();
        let mut longest = 0;
        for (after, n) in asked {
            if !listed(
                &fake,
                &isolates[n].1,
                freshness,
                PUBLISHED_AT + after,
                "9.9.9.9",
            ) {
                longest = longest.max(after);
            }
        }
        longest
    }

    #[test]
    fn a_new_version_shows_in_every_isolate_within_the_bound_for_every_accepted_setting() {
        for budget in 0..=60 {
            let freshness = Freshness::new(budget).unwrap();
            let longest = longest_answered_from_the_old_version(freshness);
            assert!(
                longest < freshness.worst_case_seconds() * 1000 && longest < 60_000,
                "CACHE_SECONDS={budget}: the old version still answered {longest} ms after the new one was published"
            );
        }
        assert!(
            longest_answered_from_the_old_version(Freshness::new(60).unwrap()) >= 59_000,
            "the worst case is reached"
        );
    }

    #[test]
    fn an_isolate_holds_a_version_and_reads_its_manifest_once_per_period() {
        let fake = Fake::default();
        publish(&fake.global, 1, &["8.8.8.8", "198.51.99.0/24"]);
        let held = OperatorListSnapshots::default();
        let freshness = Freshness::new(60).unwrap();
        for (after, ip, expected) in [
            (0, "8.8.8.8", true),
            (1_000, "198.51.99.7", true),
            (29_000, "8.8.4.4", false),
        ] {
            assert_eq!(
                listed(&fake, &held, freshness, PUBLISHED_AT + after, ip),
                expected,
                "{ip}"
            );
        }
        assert_eq!(
            fake.global.reads.get(),
            2,
            "one manifest and one shard in 30 s"
        );
    }

    #[test]
    fn requests_that_meet_a_new_version_together_load_it_once() {
        let fake = Fake::default();
        publish(&fake.global, 1, &["8.8.8.8", "198.51.99.0/24"]);
        fake.global.at(Millis(PUBLISHED_AT));
        let held = OperatorListSnapshots::default();
        let freshness = Freshness::new(0).unwrap();
        fake.global.slow.set(true);
        let mut checks: Vec<_> = (0..8)
            .map(|n| {
                Box::pin(held.contains(
                    &fake,
                    ListKind::Global,
                    IpAddr::V4(Ipv4Addr::new(8, 8, 8, 8 - n)),
                    freshness,
                    Millis(PUBLISHED_AT),
                ))
            })
            .collect();
        let mut feeds: Vec<_> = (0..8)
            .map(|_| {
                Box::pin(held.shards(&fake, ListKind::Global, freshness, Millis(PUBLISHED_AT)))
            })
            .collect();
        // Polled in turn, as the runtime would: each waits on KV while the others start.
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        let mut listed: Vec<Option<bool>> = vec![None; 8];
        let mut versions: Vec<Option<usize>> = vec![None; 8];
        while listed.contains(&None) || versions.contains(&None) {
            for (check, answer) in checks
                .iter_mut()
                .zip(&mut listed)
                .filter(|(_, a)| a.is_none())
            {
                if let std::task::Poll::Ready(found) = check.as_mut().poll(&mut context) {
                    *answer = Some(found.unwrap());
                }
            }
            for (feed, answer) in feeds
                .iter_mut()
                .zip(&mut versions)
                .filter(|(_, a)| a.is_none())
            {
                if let std::task::Poll::Ready(found) = feed.as_mut().poll(&mut context) {
                    *answer = Some(found.unwrap().0.v4.read_from(0).count());
                }
            }
        }
        assert_eq!(listed[..2], [Some(true), Some(false)]);
        assert_eq!(versions, vec![Some(2); 8]);
        assert_eq!(
            fake.global.reads.get(),
            16 + 1,
            "one manifest read a request, and the version's one shard read once for all of them"
        );
    }

    #[test]
    fn a_new_version_reads_only_the_shards_it_does_not_share_with_the_one_held() {
        let fake = Fake::default();
        let ip = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        let shard = |address: &str| Shard::of_intervals(vec![(ip(address), ip(address))]).encode();
        let version = |version, keys: [String; 2]| {
            let manifest = Manifest {
                version,
                published_at: 0,
                entries: 2,
                shards: vec![0, ip("128.0.0.0")],
                keys: keys.to_vec(),
                promoted: None,
                deltas_from: 0,
                ipv6: Default::default(),
            };
            serde_json::to_vec(&manifest).unwrap()
        };
        fake.global.write(&shard_key(1, 0), &shard("8.8.8.8"));
        fake.global.write(&shard_key(1, 1), &shard("200.1.1.1"));
        fake.global.write(
            MANIFEST_KEY,
            &version(1, [shard_key(1, 0), shard_key(1, 1)]),
        );
        let (held, every_time) = (OperatorListSnapshots::default(), Freshness::new(0).unwrap());
        assert!(listed(&fake, &held, every_time, PUBLISHED_AT, "8.8.8.8"));
        assert!(listed(&fake, &held, every_time, PUBLISHED_AT, "200.1.1.1"));
        fake.global.write(&shard_key(2, 1), &shard("200.1.1.2"));
        fake.global.write(
            MANIFEST_KEY,
            &version(2, [shard_key(1, 0), shard_key(2, 1)]),
        );
        // Gone from KV: only the shard the isolate holds can still answer for it.
        fake.global.delete(&shard_key(1, 0));
        // Past the edge cache's period, which would still answer with version 1.
        let later = PUBLISHED_AT + Freshness::EDGE_SECONDS * 1000;
        let reads = fake.global.reads.get();
        assert!(listed(&fake, &held, every_time, later, "8.8.8.8"));
        assert_eq!(fake.global.reads.get(), reads + 1, "the manifest only");
        assert!(!listed(&fake, &held, every_time, later + 1, "200.1.1.1"));
        assert!(listed(&fake, &held, every_time, later + 2, "200.1.1.2"));
        assert_eq!(
            fake.global.reads.get(),
            reads + 4,
            "the manifest at each moment, and the new shard once"
        );
    }

    #[test]
    fn a_promoted_part_is_read_only_to_label_a_block_and_a_shared_shard_keeps_it() {
        use crate::domain::feed::item::global_item;
        use crate::domain::operator_lists::snapshot::promoted_key;
        let fake = Fake::default();
        let range = |s: &str| Ipv4Range::parse(s).unwrap();
        let shard = |intervals: &[&str]| {
            let intervals = intervals
                .iter()
                .map(|s| (range(s).first(), range(s).last()));
            Shard::of_intervals(intervals.collect()).encode()
        };
        let manifest = |version, keys: [String; 2]| {
            let manifest = Manifest {
                version,
                published_at: 0,
                entries: 3,
                shards: vec![0, range("128.0.0.0").first()],
                keys: keys.to_vec(),
                promoted: Some(vec![0]),
                deltas_from: 0,
                ipv6: Default::default(),
            };
            serde_json::to_vec(&manifest).unwrap()
        };
        fake.global
            .write(&shard_key(1, 0), &shard(&["8.8.8.0/24", "8.8.10.0/24"]));
        fake.global
            .write(&promoted_key(&shard_key(1, 0)), &shard(&["8.8.10.0/24"]));
        fake.global.write(&shard_key(1, 1), &shard(&["200.1.1.1"]));
        fake.global.write(
            MANIFEST_KEY,
            &manifest(1, [shard_key(1, 0), shard_key(1, 1)]),
        );
        let held = OperatorListSnapshots::default();
        let every_time = Freshness::new(0).unwrap();
        // The labels of global blocks, as a feed reading the list at `at` gives them.
        let labels = |at: u64, blocks: &[&str]| -> Vec<Source> {
            fake.global.at(Millis(at));
            let (_, promoted) = held
                .shards(&fake, ListKind::Global, every_time, Millis(at))
                .now_or_never()
                .expect("the fake never waits")
                .unwrap();
            blocks
                .iter()
                .map(|block| {
                    let mut item = global_item(FeedBlock::V4(range(block)));
                    promoted.label(&mut item).now_or_never().unwrap().unwrap();
                    item.source
                })
                .collect()
        };
        assert_eq!(labels(PUBLISHED_AT, &[]), Vec::<Source>::new());
        let reads = fake.global.reads.get();
        assert_eq!(reads, 3, "the manifest and both shards, no promoted part");
        assert_eq!(
            labels(PUBLISHED_AT, &["8.8.8.0/24", "8.8.10.0/24", "200.1.1.1"]),
            [Source::Operator, Source::Promoted, Source::Operator]
        );
        assert_eq!(
            fake.global.reads.get(),
            reads + 1,
            "the first shard's promoted part, once; none for the shard without one"
        );
        let mut personal = FeedItem {
            source: Source::Personal,
            ..global_item(FeedBlock::V4(range("8.8.10.1")))
        };
        held.shards(&fake, ListKind::Global, every_time, Millis(PUBLISHED_AT))
            .now_or_never()
            .unwrap()
            .unwrap()
            .1
            .label(&mut personal)
            .now_or_never()
            .unwrap()
            .unwrap();
        assert_eq!(
            personal.source,
            Source::Personal,
            "never a promoted personal entry"
        );
        // All the parts at once, as a holder's Cloudflare list ranks the blocks:
        // an empty one where a shard has none.
        let (parts, parts6) = held
            .shards(&fake, ListKind::Global, every_time, Millis(PUBLISHED_AT))
            .now_or_never()
            .unwrap()
            .unwrap()
            .1
            .whole()
            .now_or_never()
            .unwrap()
            .unwrap();
        let promoted = |ip: &str| {
            let ip = u32::from(ip.parse::<Ipv4Addr>().unwrap());
            parts.holding(ip).is_some_and(|part| part.contains(ip))
        };
        assert!(promoted("8.8.10.7") && !promoted("8.8.8.7") && !promoted("200.1.1.1"));
        assert!(parts6.holding(1).is_none(), "no IPv6 shard, no part");

        // Version 2 shares the first shard, whose promoted part is gone from KV:
        // only the copy the isolate holds can still label its blocks.
        fake.global.write(&shard_key(2, 1), &shard(&["200.1.1.2"]));
        fake.global.write(
            MANIFEST_KEY,
            &manifest(2, [shard_key(1, 0), shard_key(2, 1)]),
        );
        fake.global.delete(&promoted_key(&shard_key(1, 0)));
        let later = PUBLISHED_AT + Freshness::EDGE_SECONDS * 1000;
        let reads = fake.global.reads.get();
        assert_eq!(
            labels(later, &["8.8.10.0/24", "200.1.1.2"]),
            [Source::Promoted, Source::Operator]
        );
        assert_eq!(
            fake.global.reads.get(),
            reads + 2,
            "the manifest and the new shard"
        );
    }

    #[test]
    fn a_shard_missing_from_kv_is_an_error_never_an_empty_list() {
        let fake = Fake::default();
        let manifest = Manifest {
            version: 3,
            published_at: 0,
            entries: 1,
            shards: vec![0],
            keys: vec![],
            promoted: None,
            deltas_from: 0,
            ipv6: Default::default(),
        };
        fake.global
            .write(MANIFEST_KEY, &serde_json::to_vec(&manifest).unwrap());
        let held = OperatorListSnapshots::default();
        let answer = held.contains(
            &fake,
            ListKind::Global,
            "8.8.8.8".parse().unwrap(),
            Freshness::new(0).unwrap(),
            Millis(PUBLISHED_AT),
        );
        assert!(
            matches!(answer.now_or_never().unwrap(), Err(StoreError::Corrupt(detail)) if detail.contains("v3/0"))
        );
    }
}
