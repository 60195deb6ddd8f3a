//! The Orrery Studio operator: one controller per resource (Compositions, RegistryEntries,
//! StudioRuns), each a thin reconciler over the pure builders of its module (object
//! construction and status computation are plain functions, tested without a cluster).
//!
//! - [`config`]: the deployment config (`--config FILE`).
//! - [`composition`]: status from the validator, the spec digest, ControllerRevisions.
//! - [`registry`]: a RegistryEntry's static checks, its probe pod and NetworkPolicy, and the
//!   conditions and pins they lead to (`PinChanged` and its acceptance).
//! - [`run`]: a StudioRun's Secret, NetworkPolicy and runner Pod; its phase from the pod; the
//!   queue and the daily token budget.
//! - [`sandbox`]: the restricted security contexts and volumes every pod it starts shares.
//! - [`controller`]: the context every reconciler shares; running the controllers.
//! - [`kstatus`]: the `Ready`/`Reconciling`/`Stalled` conditions every kind carries.
//! - [`error`]: the error type, whose variants are metric labels.
//! - [`metrics`]: what `/metrics` shows; [`http`]: `/metrics`, `/healthz`, `/readyz`.
//! - [`leader`]: leader election on a Lease (only the leader runs the controllers).
//! - [`sidecar`]: the sidecar's event store and HTTP API.

pub mod composition;
pub mod config;
pub mod controller;
pub mod error;
pub mod http;
pub mod kstatus;
pub mod leader;
pub mod metrics;
pub mod names;
pub mod registry;
pub mod run;
pub mod sandbox;
pub mod sidecar;

pub use config::Config;
pub use error::{Error, Result};

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "orrery-operator";
