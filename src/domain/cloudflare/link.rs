//! What a holder's object keeps of their Cloudflare connection: where the list
//! is, the token sealed, and how the sync stands. The holder sees all of it but
//! the token, of which only its last four characters.

use serde::{Deserialize, Serialize};

use super::connection::{AccountId, ListName, ZoneId};
use crate::domain::feed::feed_token::Scope;
use crate::domain::time::UnixTime;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub account: AccountId,
    pub list_name: ListName,
    pub list_id: String,
    pub zone: Option<ZoneId>,
    pub rule_id: Option<String>,
    /// The token as `seal` sealed it; empty once forgotten.
    pub token: Vec<u8>,
    pub token_last_four: String,
    pub scope: Scope,
    pub max_items: u32,
    pub connected_at: UnixTime,
    pub sync: SyncState,
}

/// How the sync stands. Fields default, so that a record of an older shape reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncState {
    /// What the holder challenges may differ from what the list holds.
    pub dirty: bool,
    /// When the next push or poll is due.
    pub due: Option<UnixTime>,
    pub pending: Option<Pending>,
    /// When the last bulk operation was sent.
    pub last_sent: Option<UnixTime>,
    pub last_push: Option<LastPush>,
    pub last_error: Option<CloudflareError>,
    /// Refusals in a row (a 429 or a 5xx), for the next wait.
    pub attempts: u32,
    /// Stopped by a 401 or a 403, until the holder gives a token that works.
    pub stopped: bool,
    /// Items wanted in the list at the last comparison, and those the cap left out.
    pub items: u64,
    pub left_out: u64,
    /// When the list's items were last read whole from Cloudflare.
    pub compared_at: Option<UnixTime>,
    /// The list's `modified_on` as Cloudflare said it after the last change this
    /// service made or read: the hourly comparison reads the items only when
    /// it moved (someone changed the list by hand).
    pub list_modified_on: Option<String>,
    /// A reading of the list's items is under way, a few pages an alarm; the
    /// cursor of its next page.
    pub reading: bool,
    pub read_after: Option<String>,
    /// A total of items in the list that Cloudflare refused for the account's
    /// cap (its items across all its lists): the list grows towards it by halves
    /// (`push::room`). Forgotten at each full comparison, when room may have come.
    pub refused_at: Option<u64>,
    /// The versions of the operator's lists the last comparison weighed: a
    /// look that finds others makes the list dirty.
    pub weighed: Option<OperatorVersions>,
}

impl SyncState {
    /// When the alarm must run for this sync: at its next step, or at the next
    /// look at the operator's lists (`next_look`) if that comes first; never
    /// while it is stopped.
    pub fn wakes_at(&self, next_look: UnixTime) -> Option<UnixTime> {
        match self.due {
            _ if self.stopped => None,
            Some(due) => Some(due.min(next_look)),
            None => Some(next_look),
        }
    }
}

/// Versions of the operator's published lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorVersions {
    /// The global challenge list's; 0 for a list of the personal scope, which does not hold it.
    pub global: u64,
    pub allow: u64,
}

/// A bulk operation Cloudflare runs: one at a time per account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub operation_id: String,
    pub kind: PushKind,
    /// The items it adds, or the ids it removes.
    pub items: Vec<String>,
    pub since: UnixTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PushKind {
    Add,
    Remove,
}

/// The last bulk operation that ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastPush {
    pub at: UnixTime,
    pub added: u64,
    pub removed: u64,
    pub operation_id: String,
    /// `completed` or `failed`, as Cloudflare said.
    pub status: String,
}

/// A failure in Cloudflare's own words: its error code (none for a network
/// fault) and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudflareError {
    pub code: Option<i64>,
    pub message: String,
    pub at: UnixTime,
}

/// What `GET /api/cloudflare` answers: the connection and how its sync stands,
/// the token by its last four characters only. Every field is written, null
/// when there is none: the answer crosses from the object in a format that
/// skips no field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub connected: bool,
    pub account_id: Option<String>,
    pub list_name: Option<String>,
    pub list_id: Option<String>,
    pub zone_id: Option<String>,
    pub rule_id: Option<String>,
    pub token_ends_with: Option<String>,
    pub scope: Option<Scope>,
    pub max_items: Option<u32>,
    pub connected_at: Option<String>,
    /// `syncing`, `in sync` or `stopped`.
    pub state: Option<String>,
    pub items: u64,
    pub left_out: u64,
    /// A total of items Cloudflare refused for the account's cap, if it did.
    pub account_refused_at: Option<u64>,
    pub last_push: Option<PushShown>,
    pub pending: Option<PendingShown>,
    pub last_error: Option<ErrorShown>,
    pub next_attempt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushShown {
    pub at: String,
    pub added: u64,
    pub removed: u64,
    pub operation_id: String,
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingShown {
    pub operation_id: String,
    pub kind: PushKind,
    pub items: u64,
    pub since: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorShown {
    pub code: Option<i64>,
    pub message: String,
    pub at: String,
}

impl Link {
    pub fn status(&self) -> Status {
        let sync = &self.sync;
        let state = if sync.stopped {
            "stopped"
        } else if sync.dirty || sync.pending.is_some() {
            "syncing"
        } else {
            "in sync"
        };
        Status {
            connected: true,
            account_id: Some(self.account.as_str().to_owned()),
            list_name: Some(self.list_name.as_str().to_owned()),
            list_id: Some(self.list_id.clone()),
            zone_id: self.zone.as_ref().map(|zone| zone.as_str().to_owned()),
            rule_id: self.rule_id.clone(),
            token_ends_with: Some(self.token_last_four.clone()),
            scope: Some(self.scope),
            max_items: Some(self.max_items),
            connected_at: Some(self.connected_at.to_rfc3339()),
            state: Some(state.to_owned()),
            items: sync.items,
            left_out: sync.left_out,
            account_refused_at: sync.refused_at,
            last_push: sync.last_push.as_ref().map(|push| PushShown {
                at: push.at.to_rfc3339(),
                added: push.added,
                removed: push.removed,
                operation_id: push.operation_id.clone(),
                status: push.status.clone(),
            }),
            pending: sync.pending.as_ref().map(|pending| PendingShown {
                operation_id: pending.operation_id.clone(),
                kind: pending.kind,
                items: pending.items.len() as u64,
                since: pending.since.to_rfc3339(),
            }),
            last_error: sync.last_error.as_ref().map(|error| ErrorShown {
                code: error.code,
                message: error.message.clone(),
                at: error.at.to_rfc3339(),
            }),
            next_attempt: sync.due.filter(|_| !sync.stopped).map(UnixTime::to_rfc3339),
        }
    }
}

/// Why a connection was not made: nothing of it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConnectRefusal {
    /// `CLOUDFLARE_TOKEN_KEY` is not set: the feature is off.
    Off,
    /// Cloudflare refused a call, in its own words.
    Cloudflare {
        status: u16,
        code: Option<i64>,
        message: String,
    },
    /// A list of that name is not an IP list.
    NotAnIpList,
    /// A list of that name holds items the holder did not put there.
    Taken { items: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_wakes_at_its_next_step_or_look_and_never_while_stopped() {
        let sync = |due: Option<u64>, stopped| SyncState {
            due: due.map(UnixTime),
            stopped,
            ..SyncState::default()
        };
        let look = UnixTime(180);
        assert_eq!(sync(Some(5), false).wakes_at(look), Some(UnixTime(5)));
        assert_eq!(sync(Some(900), false).wakes_at(look), Some(look));
        assert_eq!(sync(None, false).wakes_at(look), Some(look));
        assert_eq!(
            sync(Some(5), true).wakes_at(look),
            None,
            "stopped: no alarm"
        );
    }
}
