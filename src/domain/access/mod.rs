//! Who may call: licenses and their keys, access tokens, operator keys and their
//! roles, and the audit log of what the operator did and was refused.

pub mod audit;
pub mod license;
pub mod operator;
pub mod token;
