//! One published version of an operator's list as an isolate holds it: its
//! manifest, and each family's shards and promoted parts, each read from KV once
//! however many requests ask (`shared_load`). `snapshots` keeps the versions;
//! `promoted_parts` reads a version's promoted parts.

use std::cell::Cell;
use std::rc::Rc;

use crate::domain::code::Coded;
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::Intervals;
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{Manifest, Shard, Sharded, Shards};
use crate::domain::time::Millis;
use crate::store::kv::KvRead;
use crate::store::operator_lists::shared_load::SharedLoad;
use crate::store::StoreError;

/// One version of a list, each family's shards loaded as lookups need them.
pub struct Version {
    pub(super) manifest: Manifest,
    /// When the manifest was last read.
    pub(super) checked: Cell<Millis>,
    v4: Loaded<u32>,
    v6: Loaded<u128>,
}

/// One family's shards of a version, each loaded once, and its intervals
/// flattened once if asked for; beside each shard, its promoted part, loaded
/// once if a feed asks for it and the manifest names one.
pub struct Loaded<A> {
    shards: Vec<SharedLoad<Rc<Shard<A>>>>,
    promoted: Vec<SharedLoad<Rc<Shard<A>>>>,
    intervals: SharedLoad<Rc<Intervals<A>>>,
}

/// A family an isolate holds shards of.
pub trait HeldFamily: Sharded {
    fn loaded(version: &Version) -> &Loaded<Self>;
}

impl HeldFamily for u32 {
    fn loaded(version: &Version) -> &Loaded<Self> {
        &version.v4
    }
}

impl HeldFamily for u128 {
    fn loaded(version: &Version) -> &Loaded<Self> {
        &version.v6
    }
}

impl Version {
    /// A version whose shards are loaded as they are needed, but for those the
    /// version `before` holds loaded under the same key: a version after an edit
    /// shares every shard the edit left alone.
    pub(super) fn new(manifest: Manifest, now: Millis, before: Option<&Version>) -> Self {
        let v4 = Loaded::new(&manifest, before);
        let v6 = Loaded::new(&manifest, before);
        Self {
            manifest,
            checked: Cell::new(now),
            v4,
            v6,
        }
    }

    pub(super) fn family<A: HeldFamily>(&self) -> &Loaded<A> {
        A::loaded(self)
    }

    pub(super) async fn contains<A: HeldFamily>(
        &self,
        kv: &impl KvRead,
        kind: ListKind,
        addr: A,
    ) -> Result<bool, StoreError> {
        let part = self.manifest.part::<A>();
        if part.is_empty() {
            return Ok(false);
        }
        Ok(self
            .shard::<A>(kv, kind, part.shard_of(addr))
            .await?
            .contains(addr))
    }

    /// Every shard's intervals in order, flattened once per version: the allow
    /// list, which every feed cuts out of the global list it reads shard by shard.
    pub(super) async fn intervals<A: HeldFamily>(
        &self,
        kv: &impl KvRead,
        kind: ListKind,
    ) -> Result<Rc<Intervals<A>>, StoreError> {
        self.family::<A>()
            .intervals
            .get_or_load(
                || async {
                    Ok(Rc::new(
                        self.all_shards::<A>(kv, kind)
                            .await?
                            .read_from(A::default())
                            .collect(),
                    ))
                },
                || kv.pause(),
            )
            .await
    }

    /// Every shard of a family, loaded.
    pub(super) async fn all_shards<A: HeldFamily>(
        &self,
        kv: &impl KvRead,
        kind: ListKind,
    ) -> Result<Shards<A>, StoreError> {
        let count = self.family::<A>().shards.len();
        let mut shards = Vec::with_capacity(count);
        for index in 0..count {
            shards.push(self.shard::<A>(kv, kind, index).await?);
        }
        Ok(Shards::new(
            self.manifest.part::<A>().starts.to_vec(),
            shards,
        ))
    }

    pub(super) async fn shard<A: HeldFamily>(
        &self,
        kv: &impl KvRead,
        kind: ListKind,
        index: usize,
    ) -> Result<Rc<Shard<A>>, StoreError> {
        let (slot, key) = self
            .family::<A>()
            .shards
            .get(index)
            .zip(self.manifest.part::<A>().key(index))
            .ok_or_else(|| {
                StoreError::Corrupt(format!("{} list: no shard {index}", kind.code()))
            })?;
        load(slot, kv, kind, key).await
    }

    /// The promoted part of shard `index`, `None` when the manifest names none:
    /// no read is made for a shard without one. A feed asks once a block, so
    /// the part held is answered without naming its key.
    pub(super) async fn promoted<A: HeldFamily>(
        &self,
        kv: &impl KvRead,
        kind: ListKind,
        index: usize,
    ) -> Result<Option<Rc<Shard<A>>>, StoreError> {
        let part = self.manifest.part::<A>();
        if !part.has_promoted(index) {
            return Ok(None);
        }
        let slot = self.family::<A>().promoted.get(index);
        if let Some(held) = slot.and_then(SharedLoad::get) {
            return Ok(Some(held));
        }
        let (slot, key) = slot.zip(part.promoted_key(index)).ok_or_else(|| {
            StoreError::Corrupt(format!("{} list: no shard {index}", kind.code()))
        })?;
        load(slot, kv, kind, key).await.map(Some)
    }
}

/// A shard or promoted part read from KV under `key` into `slot`, once however
/// many requests ask. One that is not visible yet is an error, never an empty list.
async fn load<A: Addr>(
    slot: &SharedLoad<Rc<Shard<A>>>,
    kv: &impl KvRead,
    kind: ListKind,
    key: String,
) -> Result<Rc<Shard<A>>, StoreError> {
    slot.get_or_load(
        || async {
            let bytes = kv.read(&key).await?.ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "{} list: shard {key} is not in KV yet",
                    kind.code()
                ))
            })?;
            Shard::decode(&bytes).map(Rc::new).ok_or_else(|| {
                StoreError::Corrupt(format!("{} list: shard {key} does not decode", kind.code()))
            })
        },
        || kv.pause(),
    )
    .await
}

impl<A: HeldFamily> Loaded<A> {
    /// Slots for the shards of `manifest`'s part of this family and their
    /// promoted parts, filled with those `before` holds loaded under the same
    /// key: a shard a version shares keeps its promoted part.
    pub(super) fn new(manifest: &Manifest, before: Option<&Version>) -> Self {
        let part = manifest.part::<A>();
        let slots = |promoted: bool| -> Vec<SharedLoad<Rc<Shard<A>>>> {
            (0..part.len())
                .map(|index| {
                    before
                        .zip(part.key(index))
                        .and_then(|(before, key)| before.family::<A>().held(before, &key, promoted))
                        .map_or_else(SharedLoad::default, SharedLoad::ready)
                })
                .collect()
        };
        Self {
            shards: slots(false),
            promoted: slots(true),
            intervals: SharedLoad::default(),
        }
    }

    /// The shard read under `key`, or (`promoted`) its promoted part, if this
    /// version (`of`) holds it loaded.
    pub(super) fn held(&self, of: &Version, key: &str, promoted: bool) -> Option<Rc<Shard<A>>> {
        let part = of.manifest.part::<A>();
        let index =
            (0..self.shards.len()).find(|&index| part.key(index).as_deref() == Some(key))?;
        match promoted {
            true => self.promoted[index].get(),
            false => self.shards[index].get(),
        }
    }
}
