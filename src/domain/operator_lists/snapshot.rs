//! A published, immutable version of one of the operator's lists, as every
//! isolate holds it: entries merged into sorted disjoint intervals, cut into
//! shards that each fit in one KV value, and a manifest that names them.
//! A lookup is a binary search in one shard. Beside a shard of the global list
//! that holds entries the holders' reports promoted, its promoted part: those
//! entries' intervals alone, in the same encoding, which the feeds that say
//! whose a block is read (`promoted_key`).

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::domain::net::family::Addr;
use crate::domain::net::intervals::Seek;

/// Entries in one shard at most: 4 MB of spans, well under KV's 25 MiB a value,
/// and small enough that an isolate loads only the part of a large list it touches.
pub const SHARD_ENTRIES: usize = 500_000;

/// Names a version's shards; written after them, so it never names one that is not there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub version: u64,
    /// Seconds since the epoch.
    pub published_at: u64,
    /// The entries as the operator wrote them.
    pub entries: usize,
    /// The first address each shard covers, ascending, the first always 0; a
    /// shard covers every address up to the next one's first.
    pub shards: Vec<u32>,
    /// The KV key of each shard: a shard the version before holds unchanged keeps
    /// its key (`cut`). Empty in manifests written before, whose shards are keyed
    /// by their version and index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// The IPv4 shards, by index, ascending, that have a promoted part
    /// (`promoted_key`): named in every manifest of the global list, even when
    /// none has, and in none of the allow list's, which promotes nothing. A
    /// manifest written before promoted parts names none: it reads as one with
    /// no promoted part, and the next version writes anew each shard that holds
    /// promoted entries rather than share it without its part (`cut::plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted: Option<Vec<u32>>,
    /// The oldest version a feed's cursor may hold and still get the changes since
    /// it (`delta`): every piece after it is published. 0 in manifests written
    /// before there were pieces, which no cursor can use (version 0 has none).
    #[serde(default)]
    pub deltas_from: u64,
    /// The IPv6 entries' shards, apart from the IPv4 ones (`shards`, `keys`), so
    /// that each family is held in its own width. Left out while the list has
    /// never held an IPv6 entry: such a manifest reads as it did before IPv6.
    #[serde(default, skip_serializing_if = "Ipv6Shards::is_empty")]
    pub ipv6: Ipv6Shards,
}

/// A manifest's IPv6 shards: where each begins (as text: JSON numbers stop at
/// 2^53), its KV key, and those that have a promoted part, as `Manifest::promoted`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ipv6Shards {
    #[serde(with = "ipv6_text")]
    pub starts: Vec<u128>,
    pub keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted: Option<Vec<u32>>,
}

impl Ipv6Shards {
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}

mod ipv6_text {
    use std::net::Ipv6Addr;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(starts: &[u128], serializer: S) -> Result<S::Ok, S::Error> {
        let text: Vec<Ipv6Addr> = starts.iter().map(|&start| Ipv6Addr::from(start)).collect();
        text.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u128>, D::Error> {
        let text = Vec::<Ipv6Addr>::deserialize(deserializer)?;
        Ok(text.into_iter().map(u128::from).collect())
    }
}

/// One family's shards in a manifest.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a, A> {
    version: u64,
    /// The first address each shard covers, ascending.
    pub starts: &'a [A],
    /// Empty in IPv4 parts written before shards were shared between versions.
    keys: &'a [String],
    /// The shards that have a promoted part, by index, ascending; `None` when
    /// the manifest does not say.
    promoted: Option<&'a [u32]>,
}

impl<A: Sharded> Part<'_, A> {
    /// Which shard holds `addr`.
    pub fn shard_of(&self, addr: A) -> usize {
        shard_of(self.starts, addr)
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The KV key of shard `index`, if the part has that shard.
    pub fn key(&self, index: usize) -> Option<String> {
        if index >= self.starts.len() {
            return None;
        }
        match self.keys.is_empty() {
            true => Some(A::shard_key(self.version, index)),
            false => self.keys.get(index).cloned(),
        }
    }

    /// Every shard's key, in order.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.len()).filter_map(|index| self.key(index))
    }

    /// How many of its shards this version wrote: the others it shares with the
    /// version before.
    pub fn written(&self) -> usize {
        (0..self.len())
            .filter(|&index| self.key(index) == Some(A::shard_key(self.version, index)))
            .count()
    }

    /// Whether the manifest says which of these shards have a promoted part:
    /// not one written before promoted parts, nor one of the allow list.
    pub fn names_promoted(&self) -> bool {
        self.promoted.is_some()
    }

    /// Whether shard `index` has a promoted part.
    pub fn has_promoted(&self, index: usize) -> bool {
        let Ok(index) = u32::try_from(index) else {
            return false;
        };
        self.promoted
            .is_some_and(|promoted| promoted.binary_search(&index).is_ok())
    }

    /// The KV key of shard `index`'s promoted part, if it has one.
    pub fn promoted_key(&self, index: usize) -> Option<String> {
        self.has_promoted(index)
            .then(|| self.key(index))
            .flatten()
            .map(|key| promoted_key(&key))
    }

    /// The keys of the shards themselves that have a promoted part, in order.
    pub fn keys_with_promoted(&self) -> impl Iterator<Item = String> + '_ {
        self.promoted
            .unwrap_or_default()
            .iter()
            .filter_map(|&index| self.key(index as usize))
    }
}

/// The KV key of the promoted part of the shard read under `shard_key`: it goes
/// with its shard, shared by the versions that share the shard, and retired with it.
pub fn promoted_key(shard_key: &str) -> String {
    format!("{shard_key}.p")
}

/// A family whose shards a manifest names.
pub trait Sharded: Addr {
    fn part(manifest: &Manifest) -> Part<'_, Self>;

    /// The KV key of a shard first written by version `version` as its shard
    /// `index` of this family.
    fn shard_key(version: u64, index: usize) -> String;
}

impl Sharded for u32 {
    fn part(manifest: &Manifest) -> Part<'_, Self> {
        Part {
            version: manifest.version,
            starts: &manifest.shards,
            keys: &manifest.keys,
            promoted: manifest.promoted.as_deref(),
        }
    }

    fn shard_key(version: u64, index: usize) -> String {
        format!("v{version}/{index}")
    }
}

impl Sharded for u128 {
    fn part(manifest: &Manifest) -> Part<'_, Self> {
        Part {
            version: manifest.version,
            starts: &manifest.ipv6.starts,
            keys: &manifest.ipv6.keys,
            promoted: manifest.ipv6.promoted.as_deref(),
        }
    }

    fn shard_key(version: u64, index: usize) -> String {
        format!("v{version}/ipv6/{index}")
    }
}

impl Manifest {
    /// The shards of one family.
    pub fn part<A: Sharded>(&self) -> Part<'_, A> {
        A::part(self)
    }

    /// How many of its shards, of both families, this version wrote.
    pub fn written(&self) -> usize {
        self.part::<u32>().written() + self.part::<u128>().written()
    }

    /// How many shards it names, of both families.
    pub fn shard_count(&self) -> usize {
        self.shards.len() + self.ipv6.starts.len()
    }

    /// Every shard's key, of both families.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        let ipv4 = self.part::<u32>();
        let ipv6 = self.part::<u128>();
        (0..ipv4.len())
            .filter_map(move |index| ipv4.key(index))
            .chain((0..ipv6.len()).filter_map(move |index| ipv6.key(index)))
    }

    /// The key of every promoted part, of both families.
    pub fn promoted_keys(&self) -> impl Iterator<Item = String> + '_ {
        let ipv4 = self.part::<u32>();
        let ipv6 = self.part::<u128>();
        (0..ipv4.len())
            .filter_map(move |index| ipv4.promoted_key(index))
            .chain((0..ipv6.len()).filter_map(move |index| ipv6.promoted_key(index)))
    }
}

/// Which of the shards beginning at `starts` (ascending, the first the family's
/// lowest address) holds `addr`.
pub fn shard_of<A: Addr>(starts: &[A], addr: A) -> usize {
    starts
        .partition_point(|&first| first <= addr)
        .saturating_sub(1)
}

/// Part of a snapshot: single addresses and wider intervals of one family, each
/// sorted, disjoint and never adjacent. A single address costs its width (4 bytes
/// IPv4, 16 IPv6), an interval twice that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard<A = u32> {
    singles: Vec<A>,
    spans: Vec<(A, A)>,
}

impl<A> Default for Shard<A> {
    fn default() -> Self {
        Self {
            singles: Vec::new(),
            spans: Vec::new(),
        }
    }
}

impl<A: Addr> Shard<A> {
    /// A shard of sorted, disjoint, never adjacent intervals.
    pub fn of_intervals(intervals: Vec<(A, A)>) -> Self {
        let mut shard = Self::default();
        for (first, last) in intervals {
            if first == last {
                shard.singles.push(first);
            } else {
                shard.spans.push((first, last));
            }
        }
        shard
    }

    pub fn contains(&self, addr: A) -> bool {
        if self.singles.binary_search(&addr).is_ok() {
            return true;
        }
        covers(&self.spans, addr)
    }

    /// Whether it holds every address from `first` to `last`: they lie in one of
    /// its intervals, since two of them never touch, and more than one address
    /// only in a span.
    pub fn holds_all(&self, first: A, last: A) -> bool {
        if first == last && self.singles.binary_search(&first).is_ok() {
            return true;
        }
        let after = self.spans.partition_point(|&(start, _)| start <= first);
        after > 0 && first <= self.spans[after - 1].1 && last <= self.spans[after - 1].1
    }

    /// The interval after the single address `single` and the span `span`, in
    /// address order, and the positions moved past it.
    fn next_at(&self, single: &mut usize, span: &mut usize) -> Option<(A, A)> {
        match (self.singles.get(*single), self.spans.get(*span)) {
            (Some(&address), Some(&(first, _))) if address < first => {
                *single += 1;
                Some((address, address))
            }
            (_, Some(&interval)) => {
                *span += 1;
                Some(interval)
            }
            (Some(&address), None) => {
                *single += 1;
                Some((address, address))
            }
            (None, None) => None,
        }
    }

    /// Its intervals, in order.
    pub fn intervals(&self) -> Vec<(A, A)> {
        let (mut single, mut span) = (0, 0);
        std::iter::from_fn(|| self.next_at(&mut single, &mut span)).collect()
    }

    /// Bytes the shard holds in memory, as in KV.
    pub fn size(&self) -> usize {
        8 + (self.singles.len() + self.spans.len() * 2) * A::BYTES
    }

    /// Little-endian: the two counts, then the single addresses, then the intervals.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.size());
        bytes.extend_from_slice(&(self.singles.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&(self.spans.len() as u32).to_le_bytes());
        for &single in &self.singles {
            single.write_le(&mut bytes);
        }
        for &(first, last) in &self.spans {
            first.write_le(&mut bytes);
            last.write_le(&mut bytes);
        }
        bytes
    }

    /// `None` for anything `encode` could not have written: a value cut short or
    /// tampered with is an error, never an empty list.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let count = |i: usize| {
            let word = bytes.get(i * 4..i * 4 + 4)?;
            Some(u32::from_le_bytes(word.try_into().ok()?) as usize)
        };
        let (singles, spans) = (count(0)?, count(1)?);
        let expected = singles
            .checked_add(spans.checked_mul(2)?)?
            .checked_mul(A::BYTES)?
            .checked_add(8)?;
        if bytes.len() != expected {
            return None;
        }
        let mut addresses = bytes[8..].chunks_exact(A::BYTES).map(A::read_le);
        let singles: Vec<A> = addresses.by_ref().take(singles).collect::<Option<_>>()?;
        let spans: Vec<(A, A)> = (0..spans)
            .map(|_| Some((addresses.next()??, addresses.next()??)))
            .collect::<Option<_>>()?;
        let sorted = singles.windows(2).all(|w| w[0] < w[1])
            && spans.iter().all(|(a, b)| a <= b)
            && spans.windows(2).all(|w| w[0].1 < w[1].0);
        sorted.then_some(Self { singles, spans })
    }
}

/// A version of a list as the shards an isolate holds, read in order or from any
/// address on, never flattened into a copy beside them: what a feed streams.
#[derive(Debug, Clone)]
pub struct Shards<A = u32> {
    /// The first address each shard covers, as the manifest says.
    starts: Rc<[A]>,
    shards: Rc<[Rc<Shard<A>>]>,
}

impl<A> Default for Shards<A> {
    fn default() -> Self {
        Self {
            starts: Rc::new([]),
            shards: Rc::new([]),
        }
    }
}

impl<A: Addr> Shards<A> {
    pub fn new(starts: Vec<A>, shards: Vec<Rc<Shard<A>>>) -> Self {
        Self {
            starts: starts.into(),
            shards: shards.into(),
        }
    }

    /// The shard that covers `addr`, if there is any.
    pub fn holding(&self, addr: A) -> Option<&Shard<A>> {
        self.shards
            .get(shard_of(&self.starts, addr))
            .map(Rc::as_ref)
    }

    /// The intervals from the first that ends at or after `low`, in order; the
    /// cursor holds the shards, so a feed's stream can own it.
    pub fn read_from(&self, low: A) -> ShardCursor<A> {
        let shard = shard_of(&self.starts, low);
        let (single, span) = self.shards.get(shard).map_or((0, 0), |held| {
            (
                held.singles.partition_point(|&address| address < low),
                held.spans.partition_point(|&(_, last)| last < low),
            )
        });
        ShardCursor {
            shards: self.shards.clone(),
            shard,
            single,
            span,
        }
    }
}

impl<A: Addr> Seek<A> for Shards<A> {
    fn from(&self, low: A) -> impl Iterator<Item = (A, A)> + '_ {
        self.read_from(low)
    }
}

/// Where a reading of `Shards` is.
pub struct ShardCursor<A = u32> {
    shards: Rc<[Rc<Shard<A>>]>,
    shard: usize,
    single: usize,
    span: usize,
}

impl<A: Addr> Iterator for ShardCursor<A> {
    type Item = (A, A);

    fn next(&mut self) -> Option<(A, A)> {
        loop {
            let shard = self.shards.get(self.shard)?;
            if let Some(interval) = shard.next_at(&mut self.single, &mut self.span) {
                return Some(interval);
            }
            (self.shard, self.single, self.span) = (self.shard + 1, 0, 0);
        }
    }
}

/// Whether one of `intervals` (sorted, disjoint, inclusive) holds `addr`: a binary search.
pub fn covers<A: Addr>(intervals: &[(A, A)], addr: A) -> bool {
    let after = intervals.partition_point(|&(first, _)| first <= addr);
    after > 0 && addr <= intervals[after - 1].1
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use proptest::prelude::*;

    use super::*;
    use crate::domain::net::range::Ipv4Range;
    use crate::domain::operator_lists::list::FamilyEntries;

    fn entries(list: &[&str]) -> FamilyEntries {
        FamilyEntries::new(list.iter().map(|s| Ipv4Range::parse(s).unwrap()).collect())
    }

    /// A list cut into shards of `FILL` intervals, as a first version is.
    fn build(entries: &FamilyEntries) -> (Vec<u32>, Vec<Shard>) {
        let merged: Vec<(u32, u32)> = entries.intervals().collect();
        let mut starts = vec![0];
        let mut shards = Vec::new();
        for (index, part) in merged
            .chunks(crate::domain::operator_lists::cut::FILL)
            .enumerate()
        {
            if index > 0 {
                starts.push(part[0].0);
            }
            shards.push(Shard::of_intervals(part.to_vec()));
        }
        if shards.is_empty() {
            shards.push(Shard::default());
        }
        (starts, shards)
    }

    fn lookup(starts: &[u32], shards: &[Shard], addr: u32) -> bool {
        let manifest = Manifest {
            version: 1,
            published_at: 0,
            entries: 0,
            shards: starts.to_vec(),
            keys: vec![],
            promoted: None,
            deltas_from: 0,
            ipv6: Default::default(),
        };
        shards[manifest.part().shard_of(addr)].contains(addr)
    }

    #[test]
    fn a_manifest_written_before_promoted_parts_reads_as_one_with_none() {
        let old = r#"{"version":7,"publishedAt":9,"entries":3,"shards":[0,134217728],"keys":["v6/0","v7/1"],"deltasFrom":5,"ipv6":{"starts":["::","2a00::"],"keys":["v6/ipv6/0","v7/ipv6/1"]}}"#;
        let manifest: Manifest = serde_json::from_str(old).unwrap();
        assert!(manifest.promoted.is_none() && manifest.ipv6.promoted.is_none());
        let v4 = manifest.part::<u32>();
        assert!(!v4.names_promoted() && !v4.has_promoted(0));
        assert_eq!(manifest.promoted_keys().count(), 0);
        assert_eq!(
            serde_json::to_string(&manifest).unwrap(),
            old,
            "and is written as before: the allow list's manifests are"
        );
    }

    #[test]
    fn a_manifest_names_the_promoted_parts_of_its_shards_by_their_keys() {
        let manifest = Manifest {
            version: 7,
            published_at: 9,
            entries: 3,
            shards: vec![0, 0x0800_0000, 0x0900_0000],
            keys: vec!["v6/0".into(), "v7/1".into(), "v6/2".into()],
            promoted: Some(vec![0, 2]),
            deltas_from: 5,
            ipv6: Ipv6Shards {
                starts: vec![0],
                keys: vec!["v7/ipv6/0".into()],
                promoted: Some(vec![0]),
            },
        };
        let json = serde_json::to_string(&manifest).unwrap();
        assert!(json.contains(r#""promoted":[0,2]"#), "{json}");
        assert_eq!(serde_json::from_str::<Manifest>(&json).unwrap(), manifest);
        let none = Manifest {
            promoted: Some(vec![]),
            ..manifest.clone()
        };
        let json = serde_json::to_string(&none).unwrap();
        assert!(
            json.contains(r#""promoted":[]"#),
            "named even empty: {json}"
        );
        assert!(none.part::<u32>().names_promoted());
        let v4 = manifest.part::<u32>();
        assert_eq!(
            (0..4).map(|i| v4.promoted_key(i)).collect::<Vec<_>>(),
            [
                Some("v6/0.p".to_owned()),
                None,
                Some("v6/2.p".to_owned()),
                None
            ]
        );
        assert_eq!(
            v4.keys_with_promoted().collect::<Vec<_>>(),
            ["v6/0", "v6/2"]
        );
        assert_eq!(
            manifest.promoted_keys().collect::<Vec<_>>(),
            ["v6/0.p", "v6/2.p", "v7/ipv6/0.p"]
        );
    }

    #[test]
    fn a_shard_holds_a_block_whole_only_inside_one_of_its_intervals() {
        let shard = Shard::of_intervals(vec![(4u32, 4), (8, 15), (17, 17)]);
        for (first, last, whole) in [
            (4, 4, true),
            (8, 15, true),
            (8, 11, true),
            (12, 15, true),
            (17, 17, true),
            (16, 17, false),
            (4, 7, false),
            (8, 16, false),
            (0, 0, false),
            (18, 18, false),
            (0, u32::MAX, false),
        ] {
            assert_eq!(shard.holds_all(first, last), whole, "{first}..={last}");
        }
        assert!(!Shard::<u32>::default().holds_all(0, 0));
    }

    #[test]
    fn addresses_and_ranges_are_found_at_their_edges_only() {
        let (starts, shards) = build(&entries(&[
            "0.0.0.0/8",
            "8.8.8.8",
            "198.51.99.0/24",
            "255.255.255.255",
            "8.8.8.9",
            "9.0.0.0/8",
        ]));
        let ip = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        for inside in [
            "0.0.0.0",
            "0.255.255.255",
            "8.8.8.8",
            "8.8.8.9",
            "198.51.99.0",
            "198.51.99.255",
            "255.255.255.255",
            "9.0.0.0",
        ] {
            assert!(lookup(&starts, &shards, ip(inside)), "{inside}");
        }
        for outside in [
            "1.0.0.0",
            "8.8.8.7",
            "8.8.8.10",
            "198.51.98.255",
            "198.51.100.0",
            "255.255.255.254",
            "10.0.0.0",
        ] {
            assert!(!lookup(&starts, &shards, ip(outside)), "{outside}");
        }
    }

    #[test]
    fn the_encoding_round_trips_and_refuses_anything_else() {
        let (_, shards) = build(&entries(&["1.2.3.4", "5.6.7.0/24", "255.255.255.255"]));
        let bytes = shards[0].encode();
        assert_eq!(bytes.len(), shards[0].size());
        assert_eq!(Shard::<u32>::decode(&bytes), Some(shards[0].clone()));
        assert_eq!(
            Shard::<u32>::decode(&bytes[..bytes.len() - 1]),
            None,
            "cut short"
        );
        assert_eq!(Shard::<u32>::decode(&[]), None);
        let mut unsorted = Shard {
            singles: vec![5u32, 3],
            spans: vec![],
        }
        .encode();
        assert_eq!(Shard::<u32>::decode(&unsorted), None);
        unsorted.truncate(8);
        assert_eq!(Shard::<u32>::decode(&unsorted), None);
    }

    #[test]
    fn a_shard_gives_back_its_intervals_in_order() {
        let (_, shards) = build(&entries(&[
            "9.0.0.0/8",
            "8.8.8.8",
            "1.2.3.0/24",
            "255.255.255.255",
        ]));
        let ip = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        assert_eq!(
            Shards::new(vec![0], vec![Rc::new(shards[0].clone())])
                .read_from(0)
                .collect::<Vec<_>>(),
            [
                (ip("1.2.3.0"), ip("1.2.3.255")),
                (ip("8.8.8.8"), ip("8.8.8.8")),
                (ip("9.0.0.0"), ip("9.255.255.255")),
                (u32::MAX, u32::MAX)
            ]
        );
    }

    proptest! {
        #[test]
        fn shards_read_from_any_address_as_the_list_they_cut(
            mut spans in proptest::collection::vec((any::<u32>(), 0u32..4), 0..40),
            per_shard in 1usize..5,
            low in any::<u32>(),
        ) {
            spans.sort();
            let list = crate::domain::net::intervals::union_of_sorted(
                spans.into_iter().map(|(first, len)| (first, first.saturating_add(len))),
            );
            let (mut starts, mut shards) = (vec![0], vec![]);
            for (index, part) in list.chunks(per_shard).enumerate() {
                if index > 0 {
                    starts.push(part[0].0);
                }
                shards.push(Rc::new(Shard::of_intervals(part.to_vec())));
            }
            let held = Shards::new(starts, shards);
            prop_assert_eq!(held.read_from(0).collect::<Vec<_>>(), list.clone());
            let after: Vec<(u32, u32)> = list.iter().copied().filter(|&(_, last)| last >= low).collect();
            prop_assert_eq!(held.read_from(low).collect::<Vec<_>>(), after);
            for addr in list.iter().flat_map(|&(first, last)| [first, last, last.wrapping_add(1)]).chain([low]) {
                prop_assert_eq!(held.interval_of(addr), list.as_slice().interval_of(addr), "{:#x}", addr);
            }
        }
    }

    #[test]
    fn an_empty_list_is_one_empty_shard() {
        let (starts, shards) = build(&FamilyEntries::default());
        assert_eq!((starts, shards), (vec![0], vec![Shard::default()]));
    }

    #[test]
    fn large_lists_are_cut_into_shards_that_each_hold_their_addresses() {
        let many: Vec<Ipv4Range> = (0..(SHARD_ENTRIES as u32 * 2 + 7))
            .map(|n| Ipv4Range::from_parts(0x0800_0000 + n * 2, 32).unwrap())
            .collect();
        let (starts, shards) = build(&FamilyEntries::new(many));
        assert_eq!(
            shards.len(),
            (SHARD_ENTRIES * 2 + 7).div_ceil(crate::domain::operator_lists::cut::FILL)
        );
        assert_eq!(starts[0], 0);
        for probe in [
            0x0800_0000,
            0x0800_0000 + SHARD_ENTRIES as u32 * 2,
            0x0800_0000 + (SHARD_ENTRIES as u32 * 2 + 6) * 2,
        ] {
            assert!(lookup(&starts, &shards, probe), "{probe:#x}");
            assert!(!lookup(&starts, &shards, probe + 1), "{:#x}", probe + 1);
        }
        assert!(shards
            .iter()
            .all(|shard| shard.size() <= 8 + SHARD_ENTRIES * 8));
    }

    fn range_strategy() -> impl Strategy<Value = Ipv4Range> {
        // Addresses near both ends of the space as well as anywhere, and every prefix.
        let addr = prop_oneof![any::<u32>(), 0u32..64, (u32::MAX - 64)..=u32::MAX];
        (addr, 0u8..=32).prop_map(|(addr, prefix)| {
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix)
            };
            Ipv4Range::from_parts(addr & mask, prefix).unwrap()
        })
    }

    proptest! {
        #[test]
        fn lookups_agree_with_a_brute_force_model(
            ranges in proptest::collection::vec(range_strategy(), 0..40),
            probes in proptest::collection::vec(prop_oneof![any::<u32>(), 0u32..64, (u32::MAX - 64)..=u32::MAX], 0..64),
        ) {
            let (starts, shards) = build(&FamilyEntries::new(ranges.clone()));
            let shards: Vec<Shard> = shards.iter().map(|s| Shard::decode(&s.encode()).unwrap()).collect();
            let edges = ranges.iter().flat_map(|r| [r.first(), r.last(), r.first().wrapping_sub(1), r.last().wrapping_add(1)]);
            for addr in probes.into_iter().chain(edges) {
                let expected = ranges.iter().any(|r| r.first() <= addr && addr <= r.last());
                prop_assert_eq!(lookup(&starts, &shards, addr), expected, "{:#x}", addr);
            }
        }
    }

    fn ipv6_range_strategy() -> impl Strategy<Value = crate::domain::net::range::Ipv6Range> {
        // Both ends of the space as well as anywhere, and every prefix from ::/0 to /128.
        let addr = prop_oneof![any::<u128>(), 0u128..64, (u128::MAX - 64)..=u128::MAX];
        (addr, 0u8..=128).prop_map(|(addr, prefix)| {
            let network = addr & !<u128 as Addr>::host_mask(prefix);
            crate::domain::net::range::Ipv6Range::from_parts(network, prefix).unwrap()
        })
    }

    proptest! {
        #[test]
        fn ipv6_lookups_agree_with_a_brute_force_model_through_their_encoding(
            mut ranges in proptest::collection::vec(ipv6_range_strategy(), 0..40),
            per_shard in 1usize..5,
            probes in proptest::collection::vec(prop_oneof![any::<u128>(), 0u128..64, (u128::MAX - 64)..=u128::MAX], 0..64),
        ) {
            ranges.sort();
            let list = crate::domain::net::intervals::union_of_sorted(ranges.iter().map(|r| (r.first(), r.last())));
            let (mut starts, mut shards) = (vec![0u128], vec![]);
            for (index, part) in list.chunks(per_shard).enumerate() {
                if index > 0 {
                    starts.push(part[0].0);
                }
                let shard = Shard::of_intervals(part.to_vec());
                let bytes = shard.encode();
                prop_assert_eq!(bytes.len(), shard.size());
                prop_assert_eq!(Shard::<u128>::decode(&bytes[..bytes.len() - 1]), None, "cut short");
                prop_assert_eq!(Shard::<u32>::decode(&bytes), None, "read as the other family");
                shards.push(Rc::new(Shard::<u128>::decode(&bytes).unwrap()));
            }
            if shards.is_empty() {
                shards.push(Rc::new(Shard::default()));
            }
            let edges = ranges.iter().flat_map(|r| [r.first(), r.last(), r.first().wrapping_sub(1), r.last().wrapping_add(1)]);
            for addr in probes.into_iter().chain(edges).chain([0, u128::MAX]) {
                let expected = ranges.iter().any(|r| r.holds(addr));
                prop_assert_eq!(shards[shard_of(&starts, addr)].contains(addr), expected, "{:#x}", addr);
            }
            let held = Shards::new(starts, shards);
            prop_assert_eq!(held.read_from(0).collect::<Vec<_>>(), list);
        }
    }

    #[test]
    fn the_whole_ipv6_space_and_its_top_address_are_held() {
        let whole = Shard::of_intervals(vec![(0u128, u128::MAX)]);
        assert!(whole.contains(0) && whole.contains(u128::MAX));
        assert_eq!(Shard::<u128>::decode(&whole.encode()), Some(whole));
        let top = Shard::of_intervals(vec![(1u128, 1), (u128::MAX, u128::MAX)]);
        assert!(top.contains(u128::MAX) && !top.contains(u128::MAX - 1) && !top.contains(0));
        assert_eq!(top.size(), 8 + 2 * 16, "16 bytes an address");
    }
}
