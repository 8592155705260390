//! How holders' reports make the network's consensus: an address is promoted to
//! the global challenge list when the licenses whose reports of it count come to
//! at least `holders`, from at least `networks` distinct reporter networks, within
//! `window`; it stays while the reports that count over the longer of `window`
//! and `delist_after` would still make it, and leaves when they no longer do.
//! A report counts while its license is neither suspended nor on probation.
//! Reports are counted in objects sharded by address (`shard_of`), so that no one
//! object takes every report.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::domain::net::address::Key;
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::network::standing::Standing;
use crate::domain::time::UnixTime;

/// The objects the reports are counted in. Fixed: an address's shard is where its
/// reports are, so a change of the number would split an address's reports.
pub const SHARDS: u32 = 16;

/// Whether a consensus promotes at once or waits for the operator (`PROMOTION_REVIEW`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Review {
    #[default]
    Off,
    On,
}

/// The settings of the consensus (`PROMOTION_HOLDERS`, `PROMOTION_NETWORKS`,
/// `PROMOTION_WINDOW_SECONDS`, `DELIST_AFTER_SECONDS`,
/// `PROMOTION_PROBATION_SECONDS`, `PROMOTION_REVIEW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consensus {
    /// Distinct licenses whose reports promote an address; 0 turns promotion off.
    pub holders: u32,
    /// Distinct reporter networks those licenses must report from; 1 turns the
    /// rule off.
    pub networks: u32,
    /// How far back a report counts towards a promotion.
    pub window: u64,
    /// How long a promoted entry stays without a new report.
    pub delist_after: u64,
    /// How old a license must be before its reports count.
    pub probation: u64,
    /// Whether a consensus waits for the operator's approval.
    pub review: Review,
}

impl Default for Consensus {
    fn default() -> Self {
        Self {
            holders: 4,
            networks: 4,
            window: 7 * 86_400,
            delist_after: 7 * 86_400,
            probation: 0,
            review: Review::Off,
        }
    }
}

/// One license's reports of one address, as the consensus weighs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vote {
    /// The network of its latest report; `None` for reports kept before networks
    /// were, each of which counts as a network of its own.
    pub network: Option<ReporterNetwork>,
    /// Its latest report.
    pub last_at: UnixTime,
    /// When its license was issued, which its probation counts from.
    pub licensed_at: UnixTime,
    /// Whether its license is suspended from the network.
    pub suspended: bool,
    /// Whether it names a canary: planted, it never counts, whoever reported it.
    pub planted: bool,
}

/// How many licenses, and how many distinct networks among them, vote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Voices {
    licenses: u64,
    networks: u64,
}

impl Voices {
    /// Counted elsewhere (by index): `licenses` licenses from `networks` networks.
    pub fn counted(licenses: u64, networks: u64) -> Self {
        Self { licenses, networks }
    }

    pub fn licenses(&self) -> u64 {
        self.licenses
    }

    pub fn networks(&self) -> u64 {
        self.networks
    }
}

/// The votes heard so far, one at a time: each another license's.
#[derive(Debug, Default)]
struct Hearing {
    licenses: u64,
    networks: HashSet<ReporterNetwork>,
    /// Votes from before networks were kept: a network each.
    networks_of_their_own: u64,
}

impl Hearing {
    fn hear(&mut self, network: Option<ReporterNetwork>) {
        self.licenses += 1;
        match network {
            Some(network) => {
                self.networks.insert(network);
            }
            None => self.networks_of_their_own += 1,
        }
    }

    fn voices(&self) -> Voices {
        Voices::counted(
            self.licenses,
            self.networks.len() as u64 + self.networks_of_their_own,
        )
    }
}

impl Consensus {
    /// What the consensus needs at most, licenses then networks, for a count
    /// that stops once it has them: nothing while promotion is off.
    pub fn needs(self) -> (u64, u64) {
        match self.holders {
            0 => (0, 0),
            holders => (u64::from(holders), u64::from(self.networks.max(1))),
        }
    }

    /// Whether these voices make the consensus.
    pub fn is_met(self, voices: &Voices) -> bool {
        self.holders > 0
            && voices.licenses() >= u64::from(self.holders)
            && voices.networks() >= u64::from(self.networks.max(1))
    }

    /// How long a report keeps counting towards a promotion that stands: the
    /// longer of the window and the delisting delay, so that nothing reached is
    /// let go at once.
    pub fn keeps_for(self) -> u64 {
        self.window.max(self.delist_after)
    }

    /// When a license issued at `licensed_at` is old enough for its reports to count.
    pub fn counts_from(self, licensed_at: UnixTime) -> UnixTime {
        licensed_at.plus(self.probation)
    }

    /// Whether `vote` counts at `now`: its license neither suspended nor on
    /// probation (`Standing::at`), and the vote not planted.
    pub fn admits(self, vote: &Vote, now: UnixTime) -> bool {
        let standing = Standing::at(vote.suspended, self.counts_from(vote.licensed_at), now);
        !vote.planted && standing == Standing::Counting
    }

    /// When the first vote of a license on probation comes of age while its
    /// report is still within the window: when the votes are to be weighed
    /// again, since they may make the consensus then with no new report.
    pub fn next_coming_of_age<E>(
        self,
        votes: impl IntoIterator<Item = Result<Vote, E>>,
        now: UnixTime,
    ) -> Result<Option<UnixTime>, E> {
        let mut next: Option<UnixTime> = None;
        for vote in votes {
            let vote = vote?;
            let of_age = self.counts_from(vote.licensed_at);
            let waiting = !vote.suspended && !vote.planted && of_age > now;
            if waiting && vote.last_at >= self.window_start(of_age) {
                next = Some(next.map_or(of_age, |next| next.min(of_age)));
            }
        }
        Ok(next)
    }

    /// The earliest report that counts towards reaching the consensus at `now`.
    pub fn window_start(self, now: UnixTime) -> UnixTime {
        now.minus(self.window)
    }

    /// Whether the votes make the consensus at `now`, counting the reports within
    /// the window. The votes come newest first, and are read only until the
    /// answer is known.
    pub fn reached<E>(
        self,
        votes_newest_first: impl IntoIterator<Item = Result<Vote, E>>,
        now: UnixTime,
    ) -> Result<bool, E> {
        let from = self.window_start(now);
        self.first_met(votes_newest_first, now, |vote| vote.last_at >= from)
            .map(|met| met.is_some())
    }

    /// Until when the votes keep a promotion at `now`, counting the reports of
    /// the last `keeps_for` seconds: the moment the oldest report it needs stops
    /// counting; `None` when they no longer make it. Newest first, read only until
    /// the answer is known.
    pub fn kept_until<E>(
        self,
        votes_newest_first: impl IntoIterator<Item = Result<Vote, E>>,
        now: UnixTime,
    ) -> Result<Option<UnixTime>, E> {
        let keep = self.keeps_for();
        let met = self.first_met(votes_newest_first, now, |vote| {
            vote.last_at.plus(keep) > now
        })?;
        Ok(met.map(|oldest| oldest.plus(keep)))
    }

    /// The licenses and networks whose reports count towards reaching the
    /// consensus at `now`, every vote read: the rule the stores' counts by index
    /// are held to.
    #[cfg(test)]
    pub fn voices<E>(
        self,
        votes: impl IntoIterator<Item = Result<Vote, E>>,
        now: UnixTime,
    ) -> Result<Voices, E> {
        let from = self.window_start(now);
        let mut hearing = Hearing::default();
        for vote in votes {
            let vote = vote?;
            if vote.last_at >= from && self.admits(&vote, now) {
                hearing.hear(vote.network);
            }
        }
        Ok(hearing.voices())
    }

    /// The latest report of the vote with which the votes `recent` admits first
    /// make the consensus at `now`, newest first; `None` if they never do.
    fn first_met<E>(
        self,
        votes_newest_first: impl IntoIterator<Item = Result<Vote, E>>,
        now: UnixTime,
        recent: impl Fn(&Vote) -> bool,
    ) -> Result<Option<UnixTime>, E> {
        if self.holders == 0 {
            return Ok(None);
        }
        let mut hearing = Hearing::default();
        for vote in votes_newest_first {
            let vote = vote?;
            if !recent(&vote) {
                break;
            }
            if !self.admits(&vote, now) {
                continue;
            }
            hearing.hear(vote.network);
            if self.is_met(&hearing.voices()) {
                return Ok(Some(vote.last_at));
            }
        }
        Ok(None)
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
    use std::convert::Infallible;

    use super::*;
    use crate::domain::net::address::Listed;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn from(client: &str) -> Option<ReporterNetwork> {
        Some(ReporterNetwork::of_client(Some(client)))
    }

    fn vote(network: Option<ReporterNetwork>, age: u64) -> Vote {
        Vote {
            network,
            last_at: NOW.minus(age),
            licensed_at: UnixTime(0),
            suspended: false,
            planted: false,
        }
    }

    fn ok(votes: &[Vote]) -> impl Iterator<Item = Result<Vote, Infallible>> + '_ {
        votes.iter().copied().map(Ok)
    }

    fn reached(consensus: Consensus, votes: &[Vote]) -> bool {
        consensus.reached(ok(votes), NOW).unwrap()
    }

    #[test]
    fn four_licenses_from_four_networks_promote_and_from_one_network_do_not() {
        let consensus = Consensus::default();
        let apart: Vec<Vote> = (1..=4)
            .map(|n| vote(from(&format!("198.51.{n}.7")), 0))
            .collect();
        assert!(reached(consensus, &apart));
        assert!(
            !reached(consensus, &apart[..3]),
            "three licenses never make the consensus"
        );
        let together: Vec<Vote> = (1..=4)
            .map(|n| vote(from(&format!("198.51.100.{n}")), 0))
            .collect();
        assert!(
            !reached(consensus, &together),
            "four licenses from one /24 are one network, never a consensus"
        );
        let v6: Vec<Vote> = (1..=4)
            .map(|n| vote(from(&format!("2001:db8:7:{n}::1")), 0))
            .collect();
        assert!(!reached(consensus, &v6), "four /64s of one /48");
        let off = Consensus {
            networks: 1,
            ..consensus
        };
        assert!(reached(off, &together), "PROMOTION_NETWORKS 1 turns it off");
        assert!(
            !reached(off, &together[..3]),
            "three licenses never make the consensus, the network rule off"
        );
        let none = Consensus {
            holders: 0,
            ..consensus
        };
        assert!(
            !reached(none, &apart),
            "PROMOTION_HOLDERS 0 turns promotion off"
        );
        assert_eq!(
            (consensus.needs(), off.needs(), none.needs()),
            ((4, 4), (4, 1), (0, 0))
        );
        // Reports kept before networks were: each a network of its own.
        assert!(
            reached(consensus, &[vote(None, 0); 4]),
            "reports kept before networks count as a network each"
        );
        // Two networks of three: not enough with networks 3, enough with 2.
        let mixed = [
            vote(from("203.0.113.1"), 0),
            vote(from("203.0.113.2"), 0),
            vote(from("198.51.100.1"), 0),
            vote(from("198.51.100.2"), 0),
        ];
        let three = Consensus {
            networks: 3,
            ..consensus
        };
        assert!(!reached(three, &mixed));
        let two = Consensus {
            networks: 2,
            ..consensus
        };
        assert!(reached(two, &mixed));
    }

    #[test]
    fn only_reports_within_the_window_of_licenses_that_count_reach_it() {
        let consensus = Consensus {
            probation: 86_400,
            ..Consensus::default()
        };
        let mut votes: Vec<Vote> = (1..=4)
            .map(|n| vote(from(&format!("198.51.{n}.7")), 10))
            .collect();
        assert!(reached(consensus, &votes));
        votes[3].last_at = NOW.minus(consensus.window + 1);
        assert!(!reached(consensus, &votes), "one report is past the window");
        votes[3].last_at = NOW;
        votes[2].suspended = true;
        assert!(
            !reached(consensus, &votes),
            "a suspended license counts for nothing"
        );
        votes[2].suspended = false;
        votes[2].planted = true;
        assert!(
            !reached(consensus, &votes),
            "a planted vote counts for nothing"
        );
        votes[2].planted = false;
        votes[1].licensed_at = NOW.minus(86_399);
        assert!(
            !reached(consensus, &votes),
            "a license on probation counts for nothing yet"
        );
        assert!(
            consensus.reached(ok(&votes), NOW.plus(1)).unwrap(),
            "counts once it is old enough, its report still within the window"
        );
        let voices = consensus.voices(ok(&votes), NOW).unwrap();
        assert_eq!((voices.licenses(), voices.networks()), (3, 3));
    }

    #[test]
    fn the_votes_are_weighed_again_when_the_first_license_on_probation_comes_of_age() {
        let consensus = Consensus {
            probation: 1_000,
            window: 500,
            ..Consensus::default()
        };
        let young = |age: u64, issued: u64| Vote {
            licensed_at: NOW.minus(issued),
            ..vote(from("198.51.1.7"), age)
        };
        let next = |votes: &[Vote]| consensus.next_coming_of_age(ok(votes), NOW).unwrap();
        // Of age in 100 and in 300 seconds: the sooner first; once it passed, the later.
        let votes = [young(0, 900), young(0, 700), young(0, 2_000)];
        assert_eq!(next(&votes), Some(NOW.plus(100)));
        assert_eq!(
            consensus
                .next_coming_of_age(ok(&votes), NOW.plus(100))
                .unwrap(),
            Some(NOW.plus(300))
        );
        // A report that will have left the window by then never counts: nothing to wait for.
        assert_eq!(next(&[young(450, 900)]), None);
        assert_eq!(next(&[young(400, 900)]), Some(NOW.plus(100)));
        let suspended = Vote {
            suspended: true,
            ..young(0, 900)
        };
        assert_eq!(next(&[suspended]), None);
    }

    #[test]
    fn a_promotion_is_kept_while_the_reports_that_count_still_make_it() {
        let consensus = Consensus {
            window: 100,
            delist_after: 1_000,
            ..Consensus::default()
        };
        // Newest first: reports 10, 20, 30, 40 and 500 seconds old.
        let votes: Vec<Vote> = [10, 20, 30, 40, 500]
            .iter()
            .enumerate()
            .map(|(n, &age)| vote(from(&format!("198.51.{n}.7")), age))
            .collect();
        let kept = |votes: &[Vote], now| consensus.kept_until(ok(votes), now).unwrap();
        // The fourth newest is what it needs: kept until 1 000 seconds after it.
        assert_eq!(
            kept(&votes, NOW),
            Some(NOW.minus(40).plus(1_000)),
            "a promotion is kept as long after the vote that makes it, not the newest"
        );
        // Past that, the next one down is 500 seconds old and already gone by then.
        assert_eq!(kept(&votes, NOW.minus(40).plus(1_000)), None);
        let mut suspended = votes.clone();
        suspended[0].suspended = true;
        assert_eq!(
            kept(&suspended, NOW),
            Some(NOW.minus(500).plus(1_000)),
            "one license suspended: the fifth takes its place"
        );
        suspended[1].suspended = true;
        assert_eq!(kept(&suspended, NOW), None, "two: no longer made");
        // One license alone never keeps it, however often it reports.
        let alone = [vote(from("198.51.1.7"), 0)];
        assert_eq!(kept(&alone, NOW), None);
        assert_eq!(consensus.keeps_for(), 1_000);
    }

    #[test]
    fn the_votes_are_read_only_until_the_answer_is_known() {
        let consensus = Consensus::default();
        let mut read = 0;
        let votes = (0..1_000u64).map(|n| {
            read += 1;
            Ok::<_, Infallible>(vote(from(&format!("10.{}.{}.1", n / 256, n % 256)), n))
        });
        assert!(consensus.reached(votes, NOW).unwrap());
        assert_eq!(read, 4);
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
