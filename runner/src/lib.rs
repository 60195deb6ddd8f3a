//! The Orrery Studio runner: executes one composition run (graph engine, model providers,
//! tools, ledger, trace events) in a runner pod or locally (`orrery run`, `orrery demo`).

pub mod model;
pub mod tools;
