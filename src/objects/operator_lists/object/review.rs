//! The operator's review of the network's promotions (`PROMOTION_REVIEW`): while
//! it is on, a consensus queues its address here instead of promoting it
//! (`object/promotion.rs`); the operator approves, and it joins the global list as
//! any promotion does, or rejects, and it leaves the queue (the handler tells its
//! shard to forget the reports made until then). A consensus lost takes its
//! address off the queue. Turned off, the queue drains into the list, a batch an
//! alarm.

use super::{Answered, OperatorLists};
use crate::domain::access::audit::{Action, Record};
use crate::domain::net::address::{Ipv6, Listed};
use crate::domain::network::consensus::Review as ReviewSetting;
use crate::domain::operator_lists::list::{ListEntry, ListKind};
use crate::objects::operator_lists::protocol::{
    OperatorListsRefusal, PendingPage, PendingPromotions, Review, Reviewed,
};
use crate::objects::protocol::Failure;

/// Promotions one alarm moves from the queue to the list once review is off.
const DRAINED_AT_ONCE: u64 = 1_000;

/// A promoted address as the global list takes it.
fn entry(ip: Listed) -> Option<ListEntry> {
    ListKind::Global.parse_entry(&ip.to_string(), Ipv6::On).ok()
}

impl OperatorLists {
    /// A page of the queue, in address order.
    pub(super) fn pending_promotions(
        &self,
        PendingPromotions { after, limit }: PendingPromotions,
    ) -> Answered<PendingPage> {
        let limit = u64::from(limit);
        let mut pending = self.tables().queued(after, limit + 1)?;
        let cursor = (pending.len() as u64 > limit).then(|| {
            pending.truncate(limit as usize);
            pending.last().map(|queued| queued.ip)
        });
        Ok(PendingPage {
            pending,
            cursor: cursor.flatten(),
        })
    }

    /// Approves and rejects, as one change with its audit row: every address
    /// named must be waiting (the first that is not refuses the whole review).
    /// An approved address the allow list now holds leaves the queue unpromoted.
    pub(super) async fn review(&self, call: Review) -> Answered<Reviewed> {
        let tables = self.tables();
        let named = |texts: &[String]| -> Answered<Vec<Listed>> {
            texts
                .iter()
                .map(|text| {
                    let not_pending = || {
                        Failure::Refused(OperatorListsRefusal::NotPending(format!(
                            "{text} is not a promotion waiting for review"
                        )))
                    };
                    let ip: Listed = text.trim().parse().map_err(|_| not_pending())?;
                    match tables.is_queued(ip)? {
                        true => Ok(ip),
                        false => Err(not_pending()),
                    }
                })
                .collect()
        };
        let (approved, rejected) = (named(&call.approve)?, named(&call.reject)?);
        // Approved and rejected at once would promote it and make its shard forget
        // the consensus that lets it go: never both.
        if let Some(both) = approved.iter().find(|ip| rejected.contains(ip)) {
            return Err(Failure::Refused(OperatorListsRefusal::NotPending(format!(
                "{both} is named to approve and to reject"
            ))));
        }
        let mut add = Vec::with_capacity(approved.len());
        for &ip in &approved {
            if let Some(entry) = entry(ip) {
                if !self.allowed(entry)? {
                    add.push(entry);
                }
            }
        }
        let answer = Reviewed {
            approved: approved.len(),
            rejected: rejected.len(),
        };
        let record = Record {
            action: Action::PromotionsReviewed,
            target: "promotions".to_owned(),
            detail: format!("approved {}, rejected {}", answer.approved, answer.rejected),
            by: call.stamp,
        };
        let unqueue = || {
            approved
                .iter()
                .chain(&rejected)
                .try_for_each(|&ip| tables.unqueue(ip).map(drop))
        };
        self.change_promoted((add, Vec::new()), Some(&record), unqueue)
            .await?;
        self.forward_audit_now().await;
        Ok(answer)
    }

    /// With review off, a batch of what still waits joins the list; answers
    /// whether more waits.
    pub(super) async fn drain_review(&self) -> Answered<bool> {
        if self.review.get() == ReviewSetting::On {
            return Ok(false);
        }
        let tables = self.tables();
        let queued = tables.queued(None, DRAINED_AT_ONCE)?;
        if queued.is_empty() {
            return Ok(false);
        }
        let mut add = Vec::with_capacity(queued.len());
        for queued in &queued {
            if let Some(entry) = entry(queued.ip) {
                if !self.allowed(entry)? {
                    add.push(entry);
                }
            }
        }
        let unqueue = || {
            queued
                .iter()
                .try_for_each(|queued| tables.unqueue(queued.ip).map(drop))
        };
        self.change_promoted((add, Vec::new()), None, unqueue)
            .await?;
        Ok(queued.len() as u64 == DRAINED_AT_ONCE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::operator_lists::object::promotion::listed;

    #[test]
    fn a_queued_address_is_the_entry_the_global_list_takes() {
        let ip = |text: &str| text.parse::<Listed>().unwrap();
        assert_eq!(entry(ip("8.8.8.8")).unwrap().to_string(), "8.8.8.8");
        let net = entry(ip("2a00:1450:4001:81b::/64")).unwrap();
        assert_eq!(net.to_string(), "2a00:1450:4001:81b::/64");
        assert_eq!(listed(net), Some(ip("2a00:1450:4001:81b::/64")));
    }
}
