//! How many holders' reports make the network's consensus: an address reported by
//! at least `holders` distinct licenses within `window` is promoted to the global
//! challenge list, and leaves it once `delist_after` passes with no new report.
//! Reports are counted in objects sharded by address (`shard_of`), so that no one
//! object takes every report.

use serde::{Deserialize, Serialize};

use crate::domain::net::address::Key;
use crate::domain::time::UnixTime;

/// The objects the reports are counted in. Fixed: an address's shard is where its
/// reports are, so a change of the number would split an address's reports.
pub const SHARDS: u32 = 16;

/// The settings of the consensus (`PROMOTION_HOLDERS`, `PROMOTION_WINDOW_SECONDS`,
/// `DELIST_AFTER_SECONDS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consensus {
    /// Distinct licenses whose reports promote an address; 0 turns promotion off.
    pub holders: u32,
    /// How far back a report counts towards a promotion.
    pub window: u64,
    /// How long a promoted entry stays without a new report.
    pub delist_after: u64,
}

impl Default for Consensus {
    fn default() -> Self {
        Self {
            holders: 4,
            window: 7 * 86_400,
            delist_after: 7 * 86_400,
        }
    }
}

impl Consensus {
    /// Whether `reporters` distinct licenses reporting within the window promote.
    pub fn promotes(self, reporters: u64) -> bool {
        self.holders > 0 && reporters >= u64::from(self.holders)
    }

    /// The earliest report that still counts towards a promotion at `now`.
    pub fn counts_from(self, now: UnixTime) -> UnixTime {
        now.minus(self.window)
    }

    /// When a promoted entry last reported at `last_report` leaves the list.
    pub fn decays_at(self, last_report: UnixTime) -> UnixTime {
        last_report.plus(self.delist_after)
    }
}

/// The shard whose object counts the reports of the address or /64 keyed `key`:
/// FNV-1a of its bytes, so that it is the same in every isolate and every version.
pub fn shard_of(key: &Key) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &byte in key.as_bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::Listed;

    #[test]
    fn four_distinct_holders_within_the_window_promote_and_none_when_off() {
        let consensus = Consensus::default();
        assert!(!consensus.promotes(3));
        assert!(consensus.promotes(4));
        let off = Consensus {
            holders: 0,
            ..consensus
        };
        assert!(!off.promotes(1_000));
        let now = UnixTime(1_795_262_400);
        assert_eq!(consensus.counts_from(now), now.minus(604_800));
        assert_eq!(consensus.decays_at(now), now.plus(604_800));
    }

    #[test]
    fn an_address_has_one_shard_and_the_shards_share_addresses_evenly() {
        let key = |text: &str| text.parse::<Listed>().unwrap().key();
        assert_eq!(shard_of(&key("8.8.8.8")), shard_of(&key("8.8.8.8")));
        let mut counts = [0u32; SHARDS as usize];
        for n in 0..16_000u32 {
            let ip = std::net::Ipv4Addr::from(0x0800_0000 + n * 7);
            counts[shard_of(&key(&ip.to_string())) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&n| (800..1200).contains(&n)),
            "{counts:?}"
        );
    }
}
