//! The demo fleet, our own code: `demo-tools` (an MCP server on rmcp) and `demo-writer` (an
//! A2A 1.0 agent on our own server), started in-process on loopback by [`start_fleet`].

pub mod articles;
pub mod clock;
pub mod draft;
pub mod fleet;
pub mod tools;
pub mod units;
pub mod writer;

pub use fleet::{Fleet, FleetConfig, FleetError, start_fleet};
