//! CrowdSec's Local API as its engines call it ("machines", or "watchers"):
//! the login that turns a machine's name and password into a machine token
//! (`watchers`), the alerts the engine posts with it (`alerts`), its heartbeat
//! beside the Local API's allow lists this service does not offer
//! (`heartbeat`), and the usage metrics engines and bouncers both report
//! (`usage_metrics`).

pub mod alerts;
pub mod heartbeat;
pub mod usage_metrics;
pub mod watchers;
