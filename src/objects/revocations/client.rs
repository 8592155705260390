//! The Worker's way to the revocations' object.

use worker::Env;

use super::protocol::RevocationsProtocol;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding, and the name of its one instance.
pub const BINDING: &str = "REVOCATIONS";
pub const NAME: &str = "revocations";

pub fn revocations(env: &Env) -> Result<Object<RevocationsProtocol>, StoreError> {
    Object::named(env, BINDING, NAME)
}
