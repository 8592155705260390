//! The way to a report shard.

use worker::Env;

use super::protocol::ReportShardProtocol;
use crate::domain::net::address::Listed;
use crate::domain::network::consensus::shard_of;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding of the report shards.
pub const BINDING: &str = "REPORTS";

/// The shard numbered `index`.
pub fn report_shard(env: &Env, index: u32) -> Result<Object<ReportShardProtocol>, StoreError> {
    Object::named(env, BINDING, &format!("shard-{index}"))
}

/// The shard that counts the reports of `ip`.
pub fn report_shard_for(env: &Env, ip: Listed) -> Result<Object<ReportShardProtocol>, StoreError> {
    report_shard(env, shard_of(&ip.key()))
}
