//! Orrery Studio resources (`Composition`, `RegistryEntry`, `StudioRun`), the composition
//! validator and the execution plan. One home for every rule: the operator, the `orrery` CLI
//! and the sidecar all call [`validate::validate`].

pub mod common;
pub mod composition;
pub mod registry;
pub mod run;

pub use common::{Condition, ConditionStatus, Loc, PathSegment, ValidationIssue, loc_to_string};
pub use composition::{
    Budgets, Composition, CompositionSpec, CompositionStatus, Edge, Node, NodeKind, NodeOutput,
    Pattern,
};
pub use registry::{RegistryEntry, RegistryEntrySpec, RegistryEntryStatus};
pub use run::{StudioRun, StudioRunSpec, StudioRunStatus};
pub mod capabilities;
pub mod codes;
pub mod crd_yaml;
pub mod host;
pub mod import;
pub mod manifest;
pub mod plan;
pub mod schema;
pub mod unique_keys;
pub mod validate;
