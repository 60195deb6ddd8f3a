//! The Orrery Studio runner: executes one composition run (graph engine, model providers,
//! tools, ledger, trace events) in a runner pod or locally (`orrery run`, `orrery demo`).

pub mod a2a;
pub mod approval;
pub mod bench;
pub mod demo;
pub mod engine;
pub mod events;
pub mod fuzzing;
pub mod launch;
pub mod ledger;
pub mod mcp;
pub mod model;
pub mod net;
pub mod pin;
/// The old path of [`pin::store`], kept while `tests/tests/` (interop) still name it; use
/// `pin::store`.
pub use pin::store as pinstore;
pub mod probe;
pub mod remote;
pub mod safety;
pub mod secrets;
pub mod sidecar_client;
pub mod tools;

#[cfg(test)]
mod fuzz_tests;
