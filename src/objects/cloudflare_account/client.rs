//! The way to a Cloudflare account's object.

use worker::Env;

use super::protocol::CloudflareAccountProtocol;
use crate::domain::cloudflare::connection::AccountId;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding; an instance per account, by its id.
pub const BINDING: &str = "CLOUDFLARE_ACCOUNTS";

pub fn cloudflare_account(
    env: &Env,
    account: &AccountId,
) -> Result<Object<CloudflareAccountProtocol>, StoreError> {
    Object::named(env, BINDING, account.as_str())
}
