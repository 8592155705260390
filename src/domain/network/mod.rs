//! The network: holders' reports of attackers (`report`), where each came from
//! (`reporter`), the consensus that turns independent holders' reports into global
//! entries and lets them go (`consensus`), each license's standing in it
//! (`standing`), and the canaries that catch planted reports (`canary`).

pub mod canary;
pub mod consensus;
pub mod report;
pub mod reporter;
pub mod standing;
