//! The operator's routes under `/admin/`: the global challenge list and the allow
//! list (`lists`), the console: licenses, operator keys, the audit log and the
//! lookup (`console`), and the network: the reports behind an address, the
//! canaries, the promotions waiting for review, a license's standing (`network`).

pub mod console;
pub mod lists;
pub mod network;
