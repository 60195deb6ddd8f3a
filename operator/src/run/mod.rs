//! The StudioRun controller's pure parts:
//! - [`builders`]: the plan document, the plan Secret and the runner Pod;
//! - [`network`]: the run's NetworkPolicy;
//! - [`status`]: phase and conditions from the pod and the runner's summary;
//! - [`admission`]: budget overrides, the relay check, the queue, the daily token budget;
//! - [`prepare`]: what a run executes and whether it may start, compiled into its plan;
//! - [`reconcile`]: the controller that acts on them.

pub mod admission;
pub mod builders;
pub mod network;
pub mod prepare;
pub mod reconcile;
pub mod status;
