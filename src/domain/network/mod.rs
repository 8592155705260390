//! The network: holders' reports of attackers (`report`) and the consensus that
//! turns many holders' reports into global entries and lets them decay (`consensus`).

pub mod consensus;
pub mod report;
