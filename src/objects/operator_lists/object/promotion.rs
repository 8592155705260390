//! The entries the holders' reports promote to the global list. A report shard
//! sends, in batches, the addresses whose consensus it saw form and those whose
//! reports it let decay; the operator lists' object keeps them in the global list's chunks marked
//! promoted (`chunk::PROMOTED`), published like any other entry but apart from the
//! operator's own: an edit or an import never removes one, the operator's export
//! leaves them out, and the operator takes one off by name (`removePromoted`).
//! Which shard may promote an address again, and when, is the shards' to say.

use std::net::Ipv6Addr;

use super::import::{change_chunks, Way};
use super::{Answered, OperatorLists};
use crate::domain::access::audit::Record;
use crate::domain::net::address::{Ipv6, Listed};
use crate::domain::net::family::Addr;
use crate::domain::net::ipv6::PublicIpv6;
use crate::domain::net::range::{Cidr, Ipv4Range, Ipv6Range};
use crate::domain::network::consensus::Review;
use crate::domain::operator_lists::list::{
    Changes, EntrySet, FamilyEntries, ListEntry, ListKind, MAX_IPV6_LIST_ENTRIES, MAX_LIST_ENTRIES,
};
use crate::objects::operator_lists::protocol::{Promote, Promoted};
use crate::platform::clock;
use crate::store::operator_lists::edits::{Provenance, Source};
use crate::store::sql::{SqlError, Transactional};

/// The entries of `texts` the global list takes, and how many it refused.
fn parse(texts: &[String]) -> (Vec<ListEntry>, usize) {
    let mut refused = 0;
    let entries: Vec<ListEntry> = texts
        .iter()
        .filter_map(|text| {
            let entry = ListKind::Global.parse_entry(text.trim(), Ipv6::On).ok();
            refused += usize::from(entry.is_none());
            entry
        })
        .collect();
    (entries, refused)
}

/// Whether one of the entries that cover `range`'s first address (`covering`)
/// holds all of it: ranges are CIDR blocks, so such an entry either holds the
/// whole range or lies inside it.
fn held_whole<A: Addr>(covering: &[(Cidr<A>, Provenance)], range: Cidr<A>) -> bool {
    covering
        .iter()
        .any(|(entry, _)| entry.first() <= range.first() && range.last() <= entry.last())
}

/// The IPv4 address a promoted IPv6 address carries (NAT64's and its kin's),
/// which is allowed wherever that address is.
fn carried(range: Ipv6Range) -> Option<Ipv4Range> {
    if range.prefix() != 128 {
        return None;
    }
    let v4 = PublicIpv6::from_addr(Ipv6Addr::from(range.first()))?.carried_ipv4()?;
    Ipv4Range::from_parts(u32::from(v4.addr()), 32)
}

impl OperatorLists {
    /// Applies a batch of promotions and decays to the global list, as one change:
    /// each entry as the list takes it (`refused` otherwise), none the allow list
    /// holds promoted (`allowed`; in every form: an IPv6 address that carries an
    /// IPv4 one is allowed where that address is; an allow entry inside a promoted
    /// /64 governs its own addresses anyway, the allow list coming first), an
    /// entry already listed left as it is (the operator's stays the operator's),
    /// and only promoted entries let go of. Under review, a promotion waits in
    /// the queue instead (`queued`), and a decay takes it off the queue too.
    /// Answered once saved: the alarm set for it publishes it, at most a second
    /// after the publication before, so that batches arriving together go out
    /// together.
    pub(super) async fn promote(&self, Promote { add, remove }: Promote) -> Answered<Promoted> {
        let (add, refused_adds) = parse(&add);
        let (remove, refused_removes) = parse(&remove);
        let mut answer = Promoted {
            refused: refused_adds + refused_removes,
            ..Promoted::default()
        };
        let mut promoted = Vec::with_capacity(add.len());
        for entry in add {
            if self.allowed(entry)? {
                answer.allowed += 1;
            } else {
                promoted.push(entry);
            }
        }
        let tables = self.tables();
        let now = clock::now().unix();
        if self.review.get() == Review::On {
            for entry in promoted.drain(..) {
                let Some(ip) = listed(entry) else { continue };
                answer.queued += usize::from(self.or_reload(tables.queue(ip, now))?);
            }
        }
        let unqueue = |entries: &[ListEntry]| {
            entries
                .iter()
                .filter_map(|&entry| listed(entry))
                .try_for_each(|ip| tables.unqueue(ip).map(drop))
        };
        let changes = self
            .change_promoted((promoted, remove.clone()), None, || unqueue(&remove))
            .await?;
        answer.refused += changes.refused;
        answer.added = changes.added;
        answer.removed = changes.removed;
        Ok(answer)
    }

    /// Whether the allow list holds all of `entry`, in any form.
    pub(super) fn allowed(&self, entry: ListEntry) -> Answered<bool> {
        let tables = self.tables();
        let allow = self.with_list(ListKind::Allow, |list| list.chunks.clone());
        let v4 = |range: Ipv4Range| -> Answered<bool> {
            Ok(held_whole(
                &tables.covering(ListKind::Allow, &allow.v4, range.first())?,
                range,
            ))
        };
        match entry {
            ListEntry::V4(range) => v4(range),
            ListEntry::V6(range) => Ok(held_whole(
                &tables.covering(ListKind::Allow, &allow.v6, range.first())?,
                range,
            ) || carried(range).map(v4).transpose()?.unwrap_or(false)),
        }
    }

    /// Adds promoted entries to the global list and lets promoted ones go, as
    /// one change, with `also` (what else the change does in the operator lists' object's
    /// database) and its audit row, in one transaction; answers what it changed,
    /// and the promotions refused for a family at its bound.
    pub(super) async fn change_promoted(
        &self,
        (add, remove): (Vec<ListEntry>, Vec<ListEntry>),
        audit: Option<&Record>,
        also: impl FnOnce() -> std::result::Result<(), SqlError>,
    ) -> Answered<Promoted> {
        let kind = ListKind::Global;
        let tables = self.tables();
        let mut answer = Promoted::default();
        if add.is_empty() && remove.is_empty() && audit.is_none() {
            // Nothing to change of the list: `also` alone, one stretch without a wait.
            self.or_reload(also())?;
            return Ok(answer);
        }
        let mut add: EntrySet = add.into_iter().collect();
        let remove: EntrySet = remove.into_iter().collect();
        let chunks = self.with_list(kind, |list| list.chunks.clone());
        // Promoted entries count towards the list's bounds as the operator's do: the
        // isolates hold them in the snapshot like any other. A family at its bound
        // takes no more.
        let (v4, v6) = chunks.sizes();
        if v4 + add.v4.len() > MAX_LIST_ENTRIES {
            answer.refused += add.v4.len();
            add.v4 = FamilyEntries::default();
        }
        if v6 + add.v6.len() > MAX_IPV6_LIST_ENTRIES {
            answer.refused += add.v6.len();
            add.v6 = FamilyEntries::default();
        }
        // A number of its own, so that the publication sees the chunks it rewrites as changed.
        let id = self.next_edit();
        let saved = self.sql.atomically(|| {
            also()?;
            let (changes, chunks) =
                change_chunks(&tables, kind, &chunks, (&add, &remove), (Way::Promote, id))?;
            if changes == Changes::default() {
                if let Some(record) = audit {
                    tables.keep_audit(id, clock::now().0, record)?;
                }
                return Ok((changes, None));
            }
            let by = audit.and_then(|record| record.by.actor.as_deref());
            let stored =
                self.count_change(kind, (id, Source::Promoted, changes), (by, audit), &chunks)?;
            Ok((changes, Some((chunks, stored))))
        });
        let (changes, made) = self.or_reload(saved)?;
        if let Some((chunks, stored)) = made {
            self.install(kind, chunks, stored).await?;
        }
        answer.added = changes.added;
        answer.removed = changes.removed;
        Ok(answer)
    }
}

/// The address or /64 a promoted entry is, as the shards and the queue name it.
pub(super) fn listed(entry: ListEntry) -> Option<Listed> {
    entry.to_string().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|text| text.to_string()).collect()
    }

    #[test]
    fn a_batch_takes_what_the_global_list_takes_and_counts_the_rest_refused() {
        let (entries, refused) = parse(&texts(&[
            "45.67.89.10",
            " 45.67.89.11 ",
            "2a00:1450:4001:81c::/64",
            "2a00:1450::1",
            "::ffff:45.67.89.12",
            "10.0.0.1",
            "not an address",
            "8.0.0.0/7",
            "fe80::1",
        ]));
        let v4 = |text: &str| ListEntry::V4(Ipv4Range::parse(text).unwrap());
        let v6 = |text: &str| ListEntry::V6(Ipv6Range::parse(text).unwrap());
        assert_eq!(
            entries,
            [
                v4("45.67.89.10"),
                v4("45.67.89.11"),
                v6("2a00:1450:4001:81c::/64"),
                v6("2a00:1450::1"),
                v4("45.67.89.12"),
            ]
        );
        assert_eq!(refused, 4, "private, not an address, too wide, link-local");
    }

    #[test]
    fn an_address_is_allowed_only_where_an_allow_entry_holds_all_of_it() {
        let range = |text: &str| Ipv6Range::parse(text).unwrap();
        let covering = |texts: &[&str]| -> Vec<(Ipv6Range, Provenance)> {
            texts
                .iter()
                .map(|&text| (range(text), Provenance::default()))
                .collect()
        };
        let promoted = range("2a00:1450:4001:81c::/64");
        assert!(held_whole(&covering(&["2a00:1450::/32"]), promoted));
        assert!(held_whole(
            &covering(&["2a00:1450::/32", "2a00:1450:4001:81c::"]),
            promoted
        ));
        assert!(
            !held_whole(&covering(&["2a00:1450:4001:81c::"]), promoted),
            "one address of the /64 allowed: the others are promoted"
        );
        assert!(!held_whole(&covering(&[]), promoted));
        let address = Ipv4Range::parse("45.67.89.10").unwrap();
        assert!(held_whole(&[(address, Provenance::default())], address));
    }

    #[test]
    fn a_promoted_ipv6_address_that_carries_an_ipv4_one_is_weighed_as_it_too() {
        let range = |text: &str| Ipv6Range::parse(text).unwrap();
        assert_eq!(
            carried(range("64:ff9b::6810:101")),
            Ipv4Range::parse("104.16.1.1"),
            "a promoted IPv6 address is weighed as the IPv4 address it carries"
        );
        assert_eq!(
            carried(range("::ffff:0:6810:101")),
            Ipv4Range::parse("104.16.1.1")
        );
        assert_eq!(carried(range("2a00:1450::1")), None);
        assert_eq!(carried(range("2a00:1450:4001:81c::/64")), None);
    }
}
