//! The Orrery Studio operator: one controller per resource (Compositions, RegistryEntries,
//! StudioRuns), each a thin reconciler over the pure builders of its module (object
//! construction and status computation are plain functions, tested without a cluster).
//!
//! - [`config`]: the deployment config (`--config FILE`): its settings and their checks.
//! - [`composition`]: status from the validator, the spec digest, ControllerRevisions.
//! - [`registry`]: a RegistryEntry's static checks, its probe pod and NetworkPolicy, and the
//!   conditions and pins they lead to (`PinChanged` and its acceptance).
//! - [`run`]: a StudioRun's Secret, NetworkPolicy and runner Pod; its phase from the pod; the
//!   queue and the daily token budget.
//! - [`sandbox`]: every pod it starts (runner and probe), built in one place: the restricted
//!   security contexts, volumes and environment, the pod ([`sandbox::pod`]) and its
//!   NetworkPolicy ([`sandbox::network`]).
//! - [`controller`]: the context every reconciler shares (it imports no controller);
//!   [`manager`]: running the three controllers until a shutdown signal.
//! - [`kstatus`]: the `Ready`/`Reconciling`/`Stalled` conditions every kind carries.
//! - [`error`]: the error type, whose variants are metric labels.
//! - [`metrics`]: what `/metrics` shows; [`http`]: `/metrics`, `/healthz`, `/readyz`.
//! - [`leader`]: leader election on a Lease (only the leader runs the controllers).
//! - [`sidecar`]: the sidecar's event store and HTTP API.
//!
//! Shared by controllers and sidecar, owned by neither (they meet through the API server and
//! never import each other's modules; `operator/tests/modules.rs` checks it):
//! - [`run_token`]: the run-scoped token, its claims, minting and checking;
//! - [`registry_view`]: the registry as the validator sees it;
//! - [`revisions`]: a Composition revision's ControllerRevision name, its spec, the spec digest;
//! - [`endpoints`]: what a RegistryEntry reaches (its URLs and secret references);
//! - [`admission_policies`]: whether the admission policies that check decisions are in place;
//! - [`kstatus`] and [`config`] above.
//!
//! No module depends on itself through others (the same test checks it).

pub mod admission_policies;
pub mod card_keys;
pub mod composition;
pub mod config;
pub mod controller;
pub mod endpoints;
pub mod error;
pub mod http;
pub mod kstatus;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod names;
pub mod otel;
pub mod registry;
pub mod registry_view;
pub mod retry;
pub mod revisions;
pub mod run;
pub mod run_token;
pub mod sandbox;
pub mod sidecar;
#[cfg(test)]
mod testing;

pub use config::Config;
pub use error::{Error, Result};

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "orrery-operator";
