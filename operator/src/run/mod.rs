//! The StudioRun controller's pure parts:
//! - [`builders`]: the plan document, the plan Secret and the runner Pod;
//! - [`network`]: the run's NetworkPolicy;
//! - [`status`]: phase and conditions from the pod and the runner's summary;
//! - [`admission`]: budget overrides, the relay check, the queue, the daily token budget;
//! - [`prepare`]: what a run executes and whether it may start, compiled into its plan;
//! - [`reconcile`]: the controller that acts on them, with its queue (`queue`: admitting a
//!   run, waking the queued) and its children in the cluster (`children`: creating,
//!   stopping and recovering them; `policies`: the admission policies a run that can ask a
//!   person waits for).

pub mod admission;
pub mod builders;
mod children;
pub mod network;
mod policies;
pub mod prepare;
mod queue;
pub mod reconcile;
pub mod status;
