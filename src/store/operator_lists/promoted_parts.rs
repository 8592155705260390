//! The global list's promoted parts as an isolate holds them beside a version's
//! shards: read from KV the first time a feed reaches a block of their shard,
//! or all at once for a holder's Cloudflare list, which ranks every block.

use std::rc::Rc;

use crate::domain::feed::item::{FeedBlock, FeedItem, Source};
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{Shard, Shards};
use crate::store::kv::KvRead;
use crate::store::operator_lists::version::{HeldFamily, Version};
use crate::store::StoreError;

/// The promoted parts of the shards of one version of the global list, read
/// from KV the first time a feed reaches a block of their shard, then held with
/// the version (and the versions after it that share the shard): what the JSON
/// feed and CrowdSec's decisions read to say which global blocks were promoted.
/// Always the version the feed's shards are of.
#[derive(Clone)]
pub struct PromotedParts<K> {
    pub(super) version: Rc<Version>,
    pub(super) kv: K,
    pub(super) kind: ListKind,
}

impl<K: KvRead> PromotedParts<K> {
    /// The promoted part of the shard of family `A` that holds `addr`, `None`
    /// when it has none.
    async fn holding<A: HeldFamily>(&self, addr: A) -> Result<Option<Rc<Shard<A>>>, StoreError> {
        let part = self.version.manifest.part::<A>();
        if part.is_empty() {
            return Ok(None);
        }
        self.version
            .promoted::<A>(&self.kv, self.kind, part.shard_of(addr))
            .await
    }

    /// Every promoted part of the version, each family's beside its shards (an
    /// empty one for a shard that has none): what weighs a whole list's blocks
    /// without waiting on each.
    pub async fn whole(&self) -> Result<(Shards, Shards<u128>), StoreError> {
        Ok((self.family::<u32>().await?, self.family::<u128>().await?))
    }

    async fn family<A: HeldFamily>(&self) -> Result<Shards<A>, StoreError> {
        let part = self.version.manifest.part::<A>();
        let mut parts = Vec::with_capacity(part.len());
        for index in 0..part.len() {
            let held = self
                .version
                .promoted::<A>(&self.kv, self.kind, index)
                .await?;
            parts.push(held.unwrap_or_default());
        }
        Ok(Shards::new(part.starts.to_vec(), parts))
    }

    /// Marks `item` promoted when it is a global block every address of which
    /// the holders' reports promoted (`Source::of_global`): a block never
    /// reaches across two shards, so the one part of the shard it begins in says.
    pub async fn label(&self, item: &mut FeedItem) -> Result<(), StoreError> {
        if item.source != Source::Operator {
            return Ok(());
        }
        item.source = match item.block {
            FeedBlock::V4(range) => {
                Source::of_global(range, self.holding(range.first()).await?.as_deref())
            }
            FeedBlock::V6Range(range) => {
                Source::of_global(range, self.holding(range.first()).await?.as_deref())
            }
            // Only a holder's entry is written as an address or a /64 of its own.
            FeedBlock::V6(_) | FeedBlock::V6Net64(_) => return Ok(()),
        };
        Ok(())
    }
}
