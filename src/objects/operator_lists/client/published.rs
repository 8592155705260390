//! The operator's lists as this isolate holds their published snapshots (read
//! from KV, asked of the operator lists' object only for a first manifest KV does not have yet):
//! whether a list holds an address, the lists whole as intervals or shards, what
//! changed between two versions, and the precedence's verdict over them.

use std::net::IpAddr;
use std::rc::Rc;

use worker::Env;

use crate::domain::net::address::{PublicIp, SubmittedIp};
use crate::domain::net::intervals::Intervals;
use crate::domain::operator_lists::delta::VersionChange;
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::{Manifest, Shards};
use crate::domain::precedence::{self, Verdict, Weighing};
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::PublishedManifest;
use crate::objects::protocol::Failure;
use crate::store::kv::Binding;
use crate::store::operator_lists::promoted_parts::PromotedParts;
use crate::store::operator_lists::snapshots::{
    binding, ListSource, OperatorListSnapshots, Versioned,
};
use crate::store::StoreError;

/// The lists of a deployment: KV, and the operator lists' object behind it.
pub struct Deployed<'a>(pub &'a Env);

impl ListSource for Deployed<'_> {
    type Kv = Binding<Env>;

    /// The namespace, looked up only if a read is not answered from the
    /// isolate's memory.
    fn kv(&self, kind: ListKind) -> Result<Binding<Env>, StoreError> {
        Ok(Binding {
            env: self.0.clone(),
            name: binding(kind),
        })
    }

    async fn first_manifest(&self, kind: ListKind) -> Result<Manifest, StoreError> {
        operator_lists(self.0)?
            .ask(PublishedManifest(kind))
            .await
            .map(|manifest| manifest.0)
            .map_err(|failure| match failure {
                Failure::Fault(fault) => fault,
                Failure::Refused(refusal) => StoreError::Corrupt(format!(
                    "the operator lists' object refused its manifest: {refusal:?}"
                )),
            })
    }
}

/// Whether `addr` is on the list, as this isolate holds its published snapshot.
pub async fn contains(
    env: &Env,
    kind: ListKind,
    addr: IpAddr,
    freshness: Freshness,
    now: Millis,
) -> Result<bool, StoreError> {
    OperatorListSnapshots::isolate()
        .contains(&Deployed(env), kind, addr, freshness, now)
        .await
}

/// The whole list as sorted disjoint intervals, each family apart, with its version.
pub async fn intervals(
    env: &Env,
    kind: ListKind,
    freshness: Freshness,
    now: Millis,
) -> Result<Versioned<Rc<Intervals>, Rc<Intervals<u128>>>, StoreError> {
    OperatorListSnapshots::isolate()
        .intervals(&Deployed(env), kind, freshness, now)
        .await
}

/// The list's version as this isolate holds it.
pub async fn version(
    env: &Env,
    kind: ListKind,
    freshness: Freshness,
    now: Millis,
) -> Result<u64, StoreError> {
    OperatorListSnapshots::isolate()
        .version(&Deployed(env), kind, freshness, now)
        .await
}

/// The promoted parts of a deployment's global list (`PromotedParts`).
pub type Promoted = PromotedParts<Binding<Env>>;

/// The whole list as the shards the isolate holds, each family apart, with its
/// version, and the promoted parts of the same version, which a feed reads only
/// as it labels its blocks.
pub async fn shards(
    env: &Env,
    kind: ListKind,
    freshness: Freshness,
    now: Millis,
) -> Result<(Versioned<Shards, Shards<u128>>, Promoted), StoreError> {
    OperatorListSnapshots::isolate()
        .shards(&Deployed(env), kind, freshness, now)
        .await
}

/// The addresses of each family whose membership in the list changed between two
/// versions, when the published pieces say (`OperatorListSnapshots::changes`).
pub async fn changes(
    env: &Env,
    kind: ListKind,
    span: (u64, u64),
    freshness: Freshness,
    now: Millis,
) -> Result<Option<Rc<VersionChange>>, StoreError> {
    OperatorListSnapshots::isolate()
        .changes(&Deployed(env), kind, span, freshness, now)
        .await
}

/// Which list governs `ip` for `weighing`, and its answer, as far as the
/// operator's lists this isolate holds can tell (`precedence::verdict`);
/// `own_allow_list`: the holder has allow-list entries (the license's flag).
pub async fn verdict(
    env: &Env,
    weighing: impl Into<Weighing>,
    ip: SubmittedIp,
    own_allow_list: bool,
    freshness: Freshness,
    now: Millis,
) -> Result<Verdict, StoreError> {
    let holds = async |kind, ip: PublicIp| contains(env, kind, ip.addr(), freshness, now).await;
    precedence::verdict(weighing, ip, own_allow_list, holds).await
}
