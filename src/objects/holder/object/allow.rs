//! The holder's own allow list in its object: the set kept in memory and equal
//! to its rows, its operations, and the license's record told whether the
//! holder has entries.

use super::{Answered, HolderList};
use crate::domain::holder::allow::{perform_allow, AllowAnswer, AllowSet};
use crate::domain::holder::list::{Limits, Operation};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::objects::holder::protocol::AllowPerform;
use crate::objects::protocol::Failure;
use crate::objects::revocations::client::revocations;
use crate::objects::revocations::protocol::MarkAllowList;
use crate::store::holder::list::HolderTables;
use crate::store::StoreError;

impl HolderList {
    /// The holder's allow list, read once per instance and kept equal to its rows.
    pub(super) fn allow_set(&self) -> Answered<std::cell::Ref<'_, AllowSet>> {
        if self.allow.borrow().is_none() {
            let set = HolderTables::new(&self.sql).allow_set()?;
            *self.allow.borrow_mut() = Some(set);
        }
        Ok(std::cell::Ref::map(self.allow.borrow(), |set| {
            set.as_ref().expect("loaded above")
        }))
    }
    /// One operation of the allow list, then the license's record told whether
    /// the holder has entries, when it does not know yet: the Worker answers an
    /// address the global challenge list holds without this object for a holder
    /// without entries. A telling that fails is a fault, and the next operation
    /// of the allow list tells it again.
    pub(super) async fn allow_perform(
        &self,
        AllowPerform { license, call }: AllowPerform,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AllowAnswer> {
        let mut store = HolderTables::new(&self.sql);
        let mut set = self.allow_set()?.clone();
        let answer = perform_allow(&mut store, &mut set, &call, now, limits);
        // A fault may have left some of the change written: the rows are read again.
        *self.allow.borrow_mut() = answer.is_ok().then_some(set);
        let answer = answer?;
        if call.operation != Operation::Check {
            self.schedule_sweep(now.plus(SECONDS_PER_DAY))
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
            self.cloudflare_changed(now).await?;
        }
        // The flag as the list stands now, and again after each telling: while one
        // waits on the revocations' object, another operation may change the list
        // and, finding the flag not yet written, tell nothing.
        loop {
            let allow_list = !self.allow_set()?.is_empty();
            if store.published_allow_flag()? == allow_list {
                break;
            }
            let version = store.next_allow_flag_version()?;
            // The one writer of licenses' records, which also revokes them.
            let told = revocations(&self.env)?
                .ask(MarkAllowList {
                    license: license.clone(),
                    allow_list,
                    version,
                })
                .await;
            match told {
                Ok(()) => store.allow_flag_published(allow_list)?,
                Err(Failure::Fault(fault)) => return Err(Failure::Fault(fault)),
                Err(Failure::Refused(refusal)) => {
                    return Err(Failure::Fault(StoreError::Corrupt(format!(
                        "the revocations' object refused the allow-list flag: {refusal:?}"
                    ))))
                }
            }
        }
        Ok(answer)
    }
}
