//! End-to-end tests: the built worker under `wrangler dev`, driven over HTTP.
//! `make test` builds the worker first; every test uses its own license.

mod admin;
mod agents;
mod allow_list;
mod allow_list_feeds;
mod appliances;
mod auth;
mod bounded;
mod concurrency;
mod console;
mod costs;
mod crowdsec;
mod crowdsec_engine;
mod decisions;
mod fail2ban;
mod faults;
mod features;
mod firewall_bouncer;
mod floods;
mod global_lists;
mod hardening;
mod helpers;
mod inputs;
mod ipset_agent;
mod ipv6;
mod limits;
mod list_operations;
mod machines;
mod network;
mod persistence;
mod readme;
mod reports;
mod requests;
mod revocation;
mod security;
mod usage_metrics;
