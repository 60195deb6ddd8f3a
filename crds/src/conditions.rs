//! The condition types and reasons of the three resources, as constants: the operator sets
//! them, the sidecar and the console read them, GitOps tools wait on them. A condition's `type`
//! or `reason` is never written as a bare string elsewhere.
//!
//! Every kind carries the kstatus conditions ([`READY`], [`RECONCILING`], [`STALLED`]) so Flux
//! health checks and `kubectl wait --for=condition=Ready` work without custom code, besides its
//! domain conditions ([`VALID`] on a Composition, [`PINNED`] on a RegistryEntry, [`SUCCEEDED`] on
//! a StudioRun).

/// kstatus: the object is reconciled and usable.
pub const READY: &str = "Ready";
/// kstatus: the controller is working towards the desired state (True while it works).
pub const RECONCILING: &str = "Reconciling";
/// kstatus: the controller cannot make progress without a change to the object (True when stuck).
pub const STALLED: &str = "Stalled";
/// Composition: the spec passed the validator.
pub const VALID: &str = "Valid";
/// RegistryEntry: its card or tools are pinned and match what the remote serves.
pub const PINNED: &str = "Pinned";
/// StudioRun: the run ended `Succeeded` (False for any other outcome, Unknown while it runs).
pub const SUCCEEDED: &str = "Succeeded";

/// Machine-readable reasons (CamelCase) of the conditions above.
pub mod reasons {
    /// The composition has no errors.
    pub const VALID: &str = "Valid";
    /// The composition has at least one error; `status.errors` lists them.
    pub const INVALID: &str = "Invalid";
    /// The controller has not looked at this generation yet.
    pub const PROGRESSING: &str = "Progressing";
    /// The entry was probed and everything it serves matches its pins.
    pub const PROBED: &str = "Probed";
    /// A static check of the entry's spec failed (scheme, allowlist, acting, secrets).
    pub const SPEC_REFUSED: &str = "SpecRefused";
    /// The remote could not be reached or answered badly; the entry is probed again later.
    pub const PROBE_FAILED: &str = "ProbeFailed";
    /// The remote now serves something other than what was pinned; a person must accept it.
    pub const PIN_CHANGED: &str = "PinChanged";
    /// The entry passed its static checks; its probe (card, tools, addresses) has not
    /// reported yet.
    pub const PROBING: &str = "Probing";
    /// The entry reaches no network (a Scripted model): nothing to probe or pin.
    pub const NOTHING_TO_PROBE: &str = "NothingToProbe";
    /// A run's pod is created and not running yet.
    pub const STARTING: &str = "Starting";
    /// The runner exited without a readable summary (a crash, OOM kill, a bad exit).
    pub const RUNNER_CRASHED: &str = "RunnerCrashed";
    /// The runner pod disappeared before the run ended.
    pub const POD_DELETED: &str = "PodDeleted";
    /// The runner pod was evicted (the Eviction API, a node drain, preemption, the kubelet
    /// under node pressure) before the run ended; the run is never started again on its own.
    pub const EVICTED: &str = "Evicted";
    /// The runner pod is being evicted: the run fails `Evicted` once its runner has stopped.
    pub const EVICTING: &str = "Evicting";
    /// The kubelet killed the runner pod past its `activeDeadlineSeconds`.
    pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
    /// A run was refused: its owner's runs used the daily token budget.
    pub const DAILY_BUDGET_EXCEEDED: &str = "DailyBudgetExceeded";
    /// A run whose owner is not a person (a service account, e.g. a GitOps pipeline) names no
    /// approvers, but its composition can ask a person (a HumanApproval node, an A2A tool):
    /// nobody could decide, so it is refused before it starts (rule 4.54).
    pub const APPROVERS_REQUIRED: &str = "ApproversRequired";
    /// A run waits for a free slot under a concurrency limit.
    pub const QUEUED: &str = "Queued";
    /// A run is executing in its runner pod.
    pub const RUNNING: &str = "Running";
    /// A run waits for a person's decision.
    pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
    /// A run ended: the reason is its outcome (`Succeeded`, `Failed`, `Cancelled`,
    /// `BudgetExhausted`, `Rejected`), so only this one is not listed as its own constant.
    pub const FINISHED: &str = "Finished";
    /// A run was refused before it started (invalid composition, entry not ready, over the
    /// owner's daily budget).
    pub const REFUSED: &str = "Refused";
    /// A run names a Composition (or a revision of one) that does not exist yet; it starts
    /// when it appears.
    pub const WAITING_FOR_COMPOSITION: &str = "WaitingForComposition";
    /// A run's entries have not been probed yet; it starts when they are `Ready`.
    pub const WAITING_FOR_ENTRIES: &str = "WaitingForEntries";
    /// A run uses an entry that is `Ready=False` (refused, probe failed, pin changed and not
    /// accepted): it is refused.
    pub const ENTRY_NOT_READY: &str = "EntryNotReady";
    /// A run was cancelled before its runner pod started.
    pub const CANCELLED: &str = "Cancelled";
    /// The apiserver refused a run's Secret, NetworkPolicy or Pod: forbidden (a quota, an
    /// admission policy) is retried with the run `Pending`; invalid fails the run.
    pub const CREATE_REFUSED: &str = "CreateRefused";
    /// An admission policy the deployment relies on (or its binding) is missing or does not
    /// deny: a run that can ask a person waits `Pending` until it is back, since a decision
    /// written by `kubectl patch` would go unchecked.
    pub const ADMISSION_POLICY_MISSING: &str = "AdmissionPolicyMissing";
    /// A kind the operator reads (Composition, RegistryEntry) is not served: its
    /// CustomResourceDefinition was deleted. The run waits `Pending` until it is installed again.
    pub const CRD_MISSING: &str = "CustomResourceDefinitionMissing";
    /// A run's child name is taken by an object that is not its own, or a child left by an
    /// earlier attempt holds another plan: the run fails, saying which.
    pub const CHILD_CONFLICT: &str = "ChildConflict";
    /// A run's child name is still held by a child of an earlier run of the same name, deleted
    /// since: the operator removes it and the run starts once it is gone.
    pub const WAITING_FOR_PREVIOUS_RUN: &str = "WaitingForPreviousRun";
    /// A run's pod did not start within `runner.startTimeoutSeconds` (unschedulable, image not
    /// pulled, a Secret missing): it is deleted and the run fails with what it waited on.
    pub const POD_NOT_STARTED: &str = "PodNotStarted";
}
