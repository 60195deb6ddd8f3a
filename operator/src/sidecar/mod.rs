//! The sidecar (`orrery-operator sidecar`): what runners, the console, approvers and scripts
//! talk to. It stores each run's trace events ([`store`]) and serves them.
//!
//! - [`store`]: the event store: SQLite by default, PostgreSQL when several replicas serve.

pub mod store;
