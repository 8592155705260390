//! A holder's own challenge list: the three operations and their rules, its
//! entries and history, the answers and their specified texts, the day's quota and
//! the chart of the last 30 days; and the holder's own allow list.

pub mod activity;
pub mod allow;
pub mod allow_range;
pub mod entry;
pub mod holder;
pub mod outcome;
pub mod quota;
