//! A holder's CrowdSec engines, "machines" as CrowdSec's Local API names them:
//! their credentials, settings and counts (`credentials`), and what the alerts
//! they send do to the holder's lists (`alert`), and the array they send them
//! in, read as it streams (`posted`).

pub mod alert;
pub mod credentials;
pub mod posted;
