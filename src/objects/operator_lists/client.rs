//! The Worker's way to the lists' writer (`writer`), and to the snapshots it
//! publishes (`published`).

use worker::Env;

use super::protocol::ListsProtocol;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding of the writer, and the name of its one instance.
pub const BINDING: &str = "LISTS";
pub const NAME: &str = "lists";

pub mod published;

pub fn writer(env: &Env) -> Result<Object<ListsProtocol>, StoreError> {
    Object::named(env, BINDING, NAME)
}
