//! A2A 1.0: wire types and our own server.

pub mod client;
pub mod server;
pub mod types;
