//! A license holder's routes: the specified operations, one address or many
//! (`operations`), and reading their own list, history, quota and activity
//! (`browse`).

pub mod browse;
pub mod operations;
