//! The Worker's way to the operator lists' object (`writer`), and to the snapshots it
//! publishes (`published`).

use worker::Env;

use super::protocol::OperatorListsProtocol;
use crate::objects::protocol::Object;
use crate::store::StoreError;

/// The Durable Object binding of the operator lists' object, and the name of its one instance.
pub const BINDING: &str = "LISTS";
pub const NAME: &str = "lists";

pub mod published;

pub fn operator_lists(env: &Env) -> Result<Object<OperatorListsProtocol>, StoreError> {
    Object::named(env, BINDING, NAME)
}
