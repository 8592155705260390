//! The operator's routes under `/admin/`: the global challenge list and the allow
//! list (`lists`), and the console: licenses, operator keys, the audit log and the
//! lookup (`console`).

pub mod console;
pub mod lists;
