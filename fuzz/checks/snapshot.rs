//! What an isolate reads back from KV: a shard, a manifest, a list's stored
//! entries. Anything `encode` could not have written is refused; what decodes
//! encodes back to the same bytes.

use greylist::domain::operator_lists::list::FamilyEntries;
use std::rc::Rc;

use greylist::domain::operator_lists::snapshot::{Manifest, Shard, Shards};

/// Panics when `data` breaks what this target promises.
pub fn check(data: &[u8]) {
    if let Some(shard) = Shard::<u128>::decode(data) {
        assert_eq!(shard.encode(), data);
    }
    if let Some(shard) = Shard::<u32>::decode(data) {
        assert_eq!(shard.encode(), data);
        let intervals: Vec<(u32, u32)> = Shards::new(vec![0], vec![Rc::new(shard.clone())])
            .read_from(0)
            .collect();
        assert!(intervals.windows(2).all(|w| w[0].0 <= w[1].0));
        for &(first, last) in intervals.iter().take(64) {
            assert!(shard.contains(first) && shard.contains(last));
        }
    }
    if let Some(entries) = FamilyEntries::<u32>::decode(data) {
        assert_eq!(FamilyEntries::decode(&entries.encode()), Some(entries));
    }
    if let Some(entries) = FamilyEntries::<u128>::decode(data) {
        assert_eq!(FamilyEntries::decode(&entries.encode()), Some(entries));
    }
    if let Ok(manifest) = serde_json::from_slice::<Manifest>(data) {
        let _ = manifest.part().shard_of(u32::MAX);
        let _ = manifest.part().shard_of(u128::MAX);
        let _ = manifest.keys().count();
        let _ = manifest.promoted_keys().count();
    }
}
