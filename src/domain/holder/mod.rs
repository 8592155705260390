//! A license holder's own lists: its challenge list (`list`: the three
//! operations and their rules; `entry`: its entries and history), its allow list
//! (`allow`, `allow_range`), what every call of the holder comes to for an
//! address and its specified text (`outcome`), the day's quota and the chart of
//! the last 30 days.

pub mod activity;
pub mod allow;
pub mod allow_range;
pub mod entry;
pub mod list;
pub mod outcome;
pub mod quota;
