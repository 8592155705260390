//! The Worker's way to the directory's object.

use worker::Env;

use super::protocol::DirectoryProtocol;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding, and the name of its one instance.
pub const BINDING: &str = "DIRECTORY";
pub const NAME: &str = "directory";

pub fn directory(env: &Env) -> Result<Object<DirectoryProtocol>, StoreError> {
    Object::named(env, BINDING, NAME)
}
