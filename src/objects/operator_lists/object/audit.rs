//! The audit rows of the operator's changes: each written in its change's own
//! transaction (`object/import.rs`), since this object and the directory share
//! none, then sent to the directory, oldest first, until it has them. A change
//! is never without its row: a failure leaves the rows kept, and the alarm sends
//! them again.

use worker::console_error;

use super::{fault, OperatorLists};
use crate::domain::access::audit::{Forwarded, FORWARDED_AT_ONCE, FORWARD_RETRY_SECONDS};
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::RecordForwarded;
use crate::platform::clock;

impl OperatorLists {
    /// `forward_audit` after a change, before its answer: the change is made, so
    /// a fault here is logged and left to the alarm, never the operator's answer.
    pub(super) async fn forward_audit_now(&self) {
        if let Err(error) = self.forward_audit().await {
            console_error!("lists: audit rows kept for the alarm: {error}");
        }
    }

    /// Sends the audit rows kept to the directory, a batch a call, each batch let
    /// go of once the directory has it. One call sends at a time, so that the
    /// directory meets them in order (it writes none older than the last it
    /// wrote); another finds its rows sent by the one under way, which reads
    /// the table again until it is empty.
    pub(super) async fn forward_audit(&self) -> worker::Result<()> {
        if self.forwarding.replace(true) {
            return Ok(());
        }
        let sent = self.send_kept().await;
        self.forwarding.set(false);
        sent
    }

    async fn send_kept(&self) -> worker::Result<()> {
        loop {
            let kept = self.tables().audit_kept(FORWARDED_AT_ONCE).map_err(fault)?;
            let (Some(last), count) = (kept.last().map(|row| row.seq), kept.len()) else {
                self.audit_retry_at.set(None);
                return Ok(());
            };
            if let Err(why) = self.send(kept).await {
                console_error!(
                    "lists: the directory took none of {count} audit rows ({why}); trying again"
                );
                let retry = clock::now().0 + FORWARD_RETRY_SECONDS * 1000;
                self.audit_retry_at.set(Some(retry));
                return self.schedule().await;
            }
            self.tables().audit_forwarded(last).map_err(fault)?;
        }
    }

    async fn send(&self, rows: Vec<Forwarded>) -> Result<(), String> {
        if self.failing_forwards.get() {
            return Err("the directory failed, made by the test hook".to_owned());
        }
        directory(&self.env)
            .map_err(|error| error.to_string())?
            .ask(RecordForwarded(rows))
            .await
            .map_err(|failure| format!("{failure:?}"))
    }
}
