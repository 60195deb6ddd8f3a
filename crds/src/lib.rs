//! Orrery Studio's API: the resources (`Composition`, `RegistryEntry`, `StudioRun`), the
//! composition validator, the execution plan, budgets, conditions and the trace-event contract.
//! One home for every rule: the operator, the `orrery` CLI and the sidecar all call
//! [`validate::validate`].
//!
//! This crate does no I/O and runs nothing: kube's `derive` only, no client, runtime, TLS or
//! tokio. Reading manifests from disk ([`manifest`]), writing the CRD YAML ([`crd_yaml`]) and
//! an imported seed spec's manifest ([`import::to_manifest_yaml`]) are the CLI's, behind the
//! `files` feature (the seed import's conversion itself, [`import`], is not: the sidecar
//! imports too); the one logging set-up of every binary ([`logging`]) is behind the `logging`
//! feature.

pub mod approval;
pub mod budget;
pub mod capabilities;
pub mod codes;
pub mod common;
pub mod composition;
pub mod conditions;
#[cfg(feature = "files")]
pub mod crd_yaml;
pub mod events;
pub mod fuzzing;
pub mod host;
pub mod import;
pub mod jwks;
#[cfg(feature = "logging")]
pub mod logging;
#[cfg(feature = "files")]
pub mod manifest;
pub mod plan;
pub mod plan_document;
pub mod probe;
pub mod registry;
pub mod relay;
pub mod run;
pub mod schema;
pub mod tool_names;
pub mod unique_keys;
pub mod validate;

pub use budget::{BudgetKey, BudgetLimits, Budgets};
pub use common::{Condition, ConditionStatus, Loc, PathSegment, ValidationIssue, loc_to_string};
pub use composition::{
    Composition, CompositionSpec, CompositionStatus, Edge, Node, NodeKind, NodeOutput, Pattern,
};
pub use registry::{RegistryEntry, RegistryEntrySpec, RegistryEntryStatus};
pub use run::{StudioRun, StudioRunSpec, StudioRunStatus};
