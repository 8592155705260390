//! A license holder's routes: the specified operations, one address or many
//! (`operations`), their own allow list (`allow`), reports of attackers
//! (`report`), what the network says of an address (`network`), their CrowdSec
//! engines (`machines`), their own Cloudflare edge (`cloudflare`), and reading
//! their own list, history, quota and activity (`browse`).

pub mod allow;
pub mod browse;
pub mod cloudflare;
pub mod machines;
pub mod network;
pub mod operations;
pub mod report;
pub mod settle;
