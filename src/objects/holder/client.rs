//! The Worker's way to a license holder's Durable Object.

use worker::Env;

use super::protocol::HolderProtocol;
use crate::domain::access::license::LicenseId;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding of the holders' objects.
pub const BINDING: &str = "HOLDERS";

/// The object of the holder of `license`: one per license, named by its id.
pub fn holder(env: &Env, license: &LicenseId) -> Result<Object<HolderProtocol>, StoreError> {
    Object::named(env, BINDING, license.as_str())
}
