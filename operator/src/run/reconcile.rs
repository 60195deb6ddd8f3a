//! The StudioRun controller. A run goes once through: resolve what it runs (its Composition at
//! a revision, or inline) → [`super::prepare`] (refuse or wait) → the daily budget and the
//! queue ([`super::admission`], one decision at a time per process) → create its plan Secret,
//! NetworkPolicy and runner Pod (all owned by it) → follow the pod ([`super::status`]) → delete
//! it a TTL after it ended. Cancel (`spec.cancel`) lowers the pod's `activeDeadlineSeconds` so
//! the kubelet stops the runner with SIGTERM and the pod (with the runner's summary) stays to be
//! read; deleting the run deletes its children through their ownerReferences (the pod gets
//! SIGTERM). Status is written only when it changed; Events mark the transitions.
//!
//! The queue and admission are in [`super::queue`], the children in the cluster (creating,
//! stopping, recovering them) in [`super::children`].

use super::builders::{RUNNER_APP, child_names, identity};
use super::children::{
    CREATE_RETRY, check_pod_owner, create_refusal, of_predecessor, start_time_left, stuck_starting,
};
use super::prepare::{Prepared, Source, prepare};
use super::queue::{reason_of, waiting_runs};
use super::status::{
    cancelled_status, disruption, gone_status, is_final, refused_status, run_status, ttl_remaining,
    waiting_status,
};
use crate::composition::builders::current_revision;
use crate::controller::{Context, apply_status, drain, scoped};
use crate::error::{Error, Result};
use crate::kstatus::find;
use crate::revisions::{revision_name, spec_of};
use crate::run_token::RunTokenSigner;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, PropagationPolicy};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use orrery_crds::conditions::{SUCCEEDED, reasons};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RunPhase;
use orrery_crds::{Composition, StudioRun, StudioRunStatus};
use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A run waiting for its entries or its composition is looked at again this often besides
/// the watches that wake it (a missed event costs at most this).
const WAIT_RECHECK: Duration = Duration::from_secs(60);
/// A run waiting for an earlier run's children to go looks again this often.
const PREDECESSOR_RECHECK: Duration = Duration::from_secs(2);
/// A finished run is looked at again at least this often until its TTL deletes it.
const TTL_RECHECK_MAX: Duration = Duration::from_secs(6 * 3600);

/// What the StudioRun reconciler is given besides the shared [`Context`].
pub struct RunContext {
    /// The shared context (client, config, Events).
    pub base: Arc<Context>,
    /// Signs each run's token.
    pub signer: Arc<RunTokenSigner>,
    /// Every StudioRun the controller watches (its reflector).
    pub(super) runs: Store<StudioRun>,
    /// One admission decision at a time; the UIDs of runs admitted whose stored status does
    /// not show their pod yet (so two runs never take the same last slot).
    pub(super) admitted: tokio::sync::Mutex<HashSet<String>>,
    /// Namespaces already told (by an Event) that they do not enforce Pod Security
    /// `restricted`.
    pub(super) warned: std::sync::Mutex<HashSet<String>>,
    /// The last status written per run UID (forgotten when the run is deleted).
    pub(super) written: std::sync::Mutex<std::collections::HashMap<String, StudioRunStatus>>,
    /// Why each run's pod was being evicted, per run UID, as this process saw it (forgotten
    /// when the run is deleted): the pod can be gone by the next look.
    pub(super) evicted: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// The last look at the admission policies a run that can ask a person needs.
    pub(super) policies: super::policies::PolicyLook,
    /// Asks the controller to reconcile queued runs a freed slot lets start.
    pub(super) wake:
        futures::channel::mpsc::UnboundedSender<kube::runtime::reflector::ObjectRef<StudioRun>>,
}

/// Whether two statuses say the same, transition times aside.
fn same_state(a: &StudioRunStatus, b: &StudioRunStatus) -> bool {
    let timeless = |s: &StudioRunStatus| {
        let mut s = s.clone();
        for c in s.conditions.iter_mut() {
            c.last_transition_time = None;
        }
        s
    };
    timeless(a) == timeless(b)
}

impl RunContext {
    pub(super) fn api<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.base.client.clone(), namespace)
    }

    /// Writes `status` if it differs from the run's; returns whether it wrote.
    pub(super) async fn write(&self, run: &StudioRun, status: &StudioRunStatus) -> Result<bool> {
        if run.status.as_ref() == Some(status) {
            return Ok(false);
        }
        let id = identity(run)?;
        // The watched copy can lag behind what this process just wrote: the same state
        // computed again from it (only transition times differ) is not written twice.
        let repeat = self
            .written
            .lock()
            .ok()
            .and_then(|w| w.get(&id.uid).map(|last| same_state(last, status)))
            .unwrap_or(false);
        if repeat {
            return Ok(false);
        }
        let mut body = status.clone();
        // Decisions are appended by approvers, pending approvals and the event count written
        // by the sidecar;
        // the operator owns neither (an apply that carried them would take them over, and one
        // that dropped them later would delete them).
        body.decisions.clear();
        body.pending_approvals.clear();
        body.event_count = None;
        apply_status(&self.api::<StudioRun>(&id.namespace), run, &body).await?;
        if let Ok(mut w) = self.written.lock() {
            w.insert(id.uid, status.clone());
        }
        Ok(true)
    }

    /// The reason of the last status this process wrote for the run, else the copy's.
    fn last_reason(&self, run: &StudioRun) -> Option<String> {
        let uid = run.metadata.uid.clone().unwrap_or_default();
        self.written
            .lock()
            .ok()
            .and_then(|w| {
                w.get(&uid)
                    .and_then(|s| find(&s.conditions, SUCCEEDED))
                    .map(|c| c.reason.clone())
            })
            .or_else(|| reason_of(run).map(str::to_owned))
    }

    /// How long a run under way waits for a look that no watch event asked for.
    fn resync(&self) -> Duration {
        Duration::from_secs(self.base.config.resync_seconds.max(1))
    }

    /// Writes `status` and, if the `Succeeded` reason changed, publishes an Event with it.
    async fn transition(&self, run: &StudioRun, status: StudioRunStatus) -> Result<()> {
        let before = self.last_reason(run);
        if !self.write(run, &status).await? {
            return Ok(());
        }
        let Some(now) = find(&status.conditions, SUCCEEDED) else {
            return Ok(());
        };
        if before.as_deref() == Some(now.reason.as_str()) {
            return Ok(());
        }
        if let Some(phase) = status.phase.filter(|p| p.is_terminal()) {
            let tokens = status.totals.as_ref().map_or(0, |t| t.tokens);
            let namespace = run.metadata.namespace.as_deref().unwrap_or_default();
            self.base
                .metrics
                .run_ended(namespace, phase, &now.reason, tokens);
        }
        let failed = status.phase.is_some_and(RunPhase::is_terminal)
            && status.phase != Some(RunPhase::Succeeded);
        // Progress inside a pod that is already running (Starting → Running) is in the status;
        // Events mark where a person looks: refusals, waits, the start and the end.
        if now.reason == reasons::RUNNING || now.reason == reasons::STARTING {
            return Ok(());
        }
        let type_ = if failed {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.base
            .event(run, type_, &now.reason, now.message.clone())
            .await;
        Ok(())
    }

    /// Resolves the composition the run names: `Err` is the wait or refusal to record.
    async fn source(
        &self,
        run: &StudioRun,
        namespace: &str,
    ) -> Result<std::result::Result<Source, Prepared>> {
        if let Some(inline) = Source::inline(run) {
            return Ok(Ok(inline));
        }
        let Some(reference) = &run.spec.composition_ref else {
            return Ok(Err(Prepared::Refused {
                reason: reasons::REFUSED,
                message: "the run names no composition: set spec.compositionRef.name or write spec.composition".into(),
            }));
        };
        let compositions = self.api::<Composition>(namespace);
        let Some(composition) = compositions.get_opt(&reference.name).await? else {
            return Ok(Err(Prepared::Waiting {
                reason: reasons::WAITING_FOR_COMPOSITION,
                message: format!(
                    "Composition {} does not exist in namespace {namespace}; the run starts when it is created",
                    reference.name
                ),
            }));
        };
        let current = current_revision(&composition)?;
        let wanted = reference.revision.unwrap_or(current);
        if wanted == current {
            return Ok(Ok(Source {
                name: reference.name.clone(),
                revision: Some(current),
                spec: composition.spec.clone(),
            }));
        }
        let name = revision_name(&reference.name, wanted);
        let revisions = self.api::<ControllerRevision>(namespace);
        let owned = |r: &ControllerRevision| {
            r.revision == wanted
                && r.owner_references()
                    .iter()
                    .any(|o| Some(&o.uid) == composition.metadata.uid.as_ref())
        };
        match revisions.get_opt(&name).await? {
            Some(revision) if owned(&revision) => Ok(Ok(Source {
                name: reference.name.clone(),
                revision: Some(wanted),
                spec: spec_of(&revision)?,
            })),
            _ => Ok(Err(Prepared::Refused {
                reason: reasons::REFUSED,
                message: format!(
                    "revision {wanted} of Composition {} is not kept (the current one is {current}; the newest {} are kept): name a kept revision in spec.compositionRef.revision or leave it out for the current one",
                    reference.name,
                    crate::composition::builders::REVISION_HISTORY_LIMIT
                ),
            })),
        }
    }

    /// A finished run: deleted (with its children) once its TTL has passed.
    async fn after_finish(&self, run: &StudioRun, now: Timestamp) -> Result<Action> {
        // Its slot is free (it may have ended a moment ago).
        self.wake_queue(run);
        // A finished run's spec may still change (a GitOps re-apply setting `cancel`): the
        // outcome stands, and the status says it saw the new generation.
        if let Some(status) = super::status::observed(run) {
            self.write(run, &status).await?;
        }
        let ttl = self.base.config.ttl_seconds_after_finished;
        match ttl_remaining(run, ttl, now) {
            Some(0) => {
                let id = identity(run)?;
                let params = DeleteParams {
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..DeleteParams::default()
                };
                match self
                    .api::<StudioRun>(&id.namespace)
                    .delete(&id.name, &params)
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
                if let Ok(mut w) = self.written.lock() {
                    w.remove(&id.uid);
                }
                Ok(Action::await_change())
            }
            Some(left) => Ok(Action::requeue(
                Duration::from_secs(left.max(1)).min(TTL_RECHECK_MAX),
            )),
            None => Ok(Action::await_change()),
        }
    }
}

/// Reconciles one StudioRun.
pub async fn reconcile(run: Arc<StudioRun>, ctx: Arc<RunContext>) -> Result<Action> {
    let id = identity(&run)?;
    let now = Timestamp::now();
    ctx.count_phases();
    if is_final(run.status.as_ref()) {
        return ctx.after_finish(&run, now).await;
    }
    let names = child_names(&id.name);
    let pod = ctx.api::<Pod>(&id.namespace).get_opt(&names.pod).await?;
    // The image is checked only for a pod the run has not recorded yet: one it recorded was
    // created by this operator, perhaps before an upgrade changed `runner.image`.
    let recorded =
        run.status.as_ref().and_then(|s| s.runner_pod.as_deref()) == Some(names.pod.as_str());
    let image = (!recorded).then_some(ctx.base.config.runner.image.as_str());
    if let Some(pod) = &pod
        && of_predecessor(&pod.metadata, &id.name, &id.uid)
    {
        let error = Error::Predecessor {
            kind: "Pod".into(),
            name: pod.name_any(),
            namespace: id.namespace.clone(),
        };
        return wait_for_predecessor(&ctx, &run, &error, now).await;
    }
    if let Some(pod) = &pod
        && let Err(e) = check_pod_owner(pod, &id.uid, image)
    {
        return record(&ctx, &run, conflict(&e), now).await;
    }
    let cancelled = run.spec.cancel || run.metadata.deletion_timestamp.is_some();
    let started = run.status.as_ref().is_some_and(|s| s.runner_pod.is_some());
    if let Some(pod) = &pod {
        return ctx.follow(&run, pod, cancelled, now).await;
    }
    if started {
        // The pod is gone: run_status says how the run ended (evicted, if it was seen so).
        let evicted = ctx
            .evicted
            .lock()
            .ok()
            .and_then(|e| e.get(&id.uid).cloned());
        ctx.transition(&run, gone_status(&run, evicted.as_deref(), now))
            .await?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    // From here the run may start. Decide on the stored run, not on a cached copy that can
    // lag behind a status just written (a run refused a moment ago must not start).
    let Some(run) = ctx
        .api::<StudioRun>(&id.namespace)
        .get_opt(&id.name)
        .await?
    else {
        return Ok(Action::await_change());
    };
    if run.metadata.uid.as_deref() != Some(id.uid.as_str())
        || is_final(run.status.as_ref())
        || run.status.as_ref().is_some_and(|s| s.runner_pod.is_some())
    {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    if run.spec.cancel || run.metadata.deletion_timestamp.is_some() {
        ctx.transition(&run, cancelled_status(&run, now)).await?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    // The queue first: a waiting run costs no reads of its composition or entries.
    if let Some((status, recheck)) = ctx.admit(&run, now).await? {
        ctx.transition(&run, status).await?;
        return Ok(Action::requeue(recheck));
    }
    let started = ctx.prepare_and_start(&run, &id.namespace, now).await;
    if matches!(started, Ok(Started::Yes)) {
        // It holds a slot now: the runs behind it that still fit start too.
        let mut holding = run.clone();
        holding
            .status
            .get_or_insert_with(Default::default)
            .runner_pod = Some(names.pod.clone());
        ctx.wake_queue(&holding);
    } else {
        ctx.release(&id.uid).await;
        ctx.wake_queue(&run);
    }
    match started {
        Ok(Started::Yes) => Ok(Action::requeue(ctx.resync())),
        Ok(Started::No(outcome)) => record(&ctx, &run, outcome, now).await,
        Err(Error::Kube(kube::Error::Api(refusal))) if matches!(refusal.code, 403 | 422) => {
            let outcome = create_refusal(refusal.code, &refusal.message);
            record(&ctx, &run, outcome, now).await?;
            Ok(Action::requeue(CREATE_RETRY))
        }
        Err(Error::Kube(kube::Error::Api(gone))) if gone.code == 404 => {
            // A list answered 404: a kind this operator reads is not served, its CRD deleted.
            let missing = super::policies::kinds_not_served(&ctx.base.client).await;
            if missing.is_empty() {
                return Err(Error::Kube(kube::Error::Api(gone)));
            }
            let outcome = Prepared::Waiting {
                reason: reasons::CRD_MISSING,
                message: super::policies::kinds_message(&missing),
            };
            record(&ctx, &run, outcome, now).await
        }
        Err(e @ Error::Predecessor { .. }) => wait_for_predecessor(&ctx, &run, &e, now).await,
        Err(e @ (Error::NameTaken { .. } | Error::ChildDiffers { .. })) => {
            record(&ctx, &run, conflict(&e), now).await
        }
        Err(e) => Err(e),
    }
}

/// Whether a run's pod was created.
enum Started {
    Yes,
    No(Prepared),
}

/// A child's name taken, or a child holding another plan: the run fails saying which and what
/// to do.
fn conflict(error: &Error) -> Prepared {
    Prepared::Refused {
        reason: reasons::CHILD_CONFLICT,
        message: error.to_string(),
    }
}

impl RunContext {
    /// Resolves the composition, checks the run ([`prepare`]) and, when it may run, creates
    /// its children.
    async fn prepare_and_start(
        &self,
        run: &StudioRun,
        namespace: &str,
        now: Timestamp,
    ) -> Result<Started> {
        let source = match self.source(run, namespace).await? {
            Ok(source) => source,
            Err(outcome) => return Ok(Started::No(outcome)),
        };
        // From the apiserver's watch cache (`resourceVersion=0`): a consistent list waits for
        // the cache to catch up with etcd (tens of milliseconds on every start). A copy a
        // moment old is safe: the runner checks every pin against the live remote.
        let mut entries = self
            .api::<RegistryEntry>(namespace)
            .list(&ListParams::default().match_any())
            .await?
            .items;
        // A signed card's keys kept in a ConfigMap go to the runner in the entry's `jwks`; one
        // that cannot be read is left as a reference, which the runner refuses (fail closed).
        let configmaps = self.api::<k8s_openapi::api::core::v1::ConfigMap>(namespace);
        for entry in entries.iter_mut() {
            if let Some(problem) = crate::card_keys::resolve(&configmaps, entry).await? {
                tracing::warn!(
                    entry = %entry.name_any(),
                    "the card keys of RegistryEntry {}: {}",
                    entry.name_any(),
                    problem.problem
                );
            }
        }
        match prepare(run, source, &entries, &self.base.config)? {
            Prepared::Ready(document) => {
                let asks = super::admission::asking(&document.plan);
                if !asks.is_empty() {
                    let missing = self.missing_policies().await;
                    if !missing.is_empty() {
                        return Ok(Started::No(Prepared::Waiting {
                            reason: reasons::ADMISSION_POLICY_MISSING,
                            message: super::policies::waiting_message(&asks, &missing),
                        }));
                    }
                }
                self.start(run, &document, now).await?;
                Ok(Started::Yes)
            }
            outcome => Ok(Started::No(outcome)),
        }
    }

    /// A run with a pod: cancel it if asked, fail it if it never started in time, and record
    /// what the pod says.
    async fn follow(
        &self,
        run: &StudioRun,
        pod: &Pod,
        cancelled: bool,
        now: Timestamp,
    ) -> Result<Action> {
        if cancelled {
            self.stop_pod(pod, now).await?;
        }
        let known = self.recovered(run, pod).await?;
        if !cancelled && let Some((message, _)) = stuck_starting(pod, &self.base.config, now) {
            // Recorded before the pod goes, so the deletion does not read as PodDeleted.
            self.transition(
                run,
                refused_status(&known, reasons::POD_NOT_STARTED, &message, now),
            )
            .await?;
            let pods = self.api::<Pod>(&pod.namespace().unwrap_or_default());
            match pods.delete(&pod.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
        if let Some(why) = disruption(Some(pod))
            && let (Some(uid), Ok(mut evicted)) = (run.uid(), self.evicted.lock())
        {
            evicted.insert(uid, why);
        }
        let status = run_status(&known, Some(pod), now);
        let finished = is_final(Some(&status));
        let starting = status.phase == Some(RunPhase::Pending);
        self.transition(run, status).await?;
        Ok(if finished {
            Action::requeue(Duration::from_secs(1))
        } else if starting {
            // Looked at again when the start timeout passes, even if the pod never changes.
            let left = stuck_starting(pod, &self.base.config, now)
                .map(|(_, left)| left)
                .unwrap_or_else(|| start_time_left(pod, &self.base.config, now));
            Action::requeue(left.max(Duration::from_secs(1)))
        } else {
            // Looked at again even if no watch event comes: one lost between the API server
            // and this process (fault case 12) would otherwise leave the run's status behind
            // its pod for good.
            Action::requeue(self.resync())
        })
    }
}

/// A child's name still held by a child of an earlier run of the same name (deleted, its
/// children going with it): the run waits, `Pending`, saying so, and looks again shortly.
async fn wait_for_predecessor(
    ctx: &RunContext,
    run: &StudioRun,
    error: &Error,
    now: Timestamp,
) -> Result<Action> {
    ctx.transition(
        run,
        waiting_status(
            run,
            reasons::WAITING_FOR_PREVIOUS_RUN,
            error.to_string(),
            now,
        ),
    )
    .await?;
    Ok(Action::requeue(PREDECESSOR_RECHECK))
}

/// Records a wait or a refusal.
async fn record(
    ctx: &RunContext,
    run: &StudioRun,
    outcome: Prepared,
    now: Timestamp,
) -> Result<Action> {
    match outcome {
        Prepared::Waiting { reason, message } => {
            ctx.transition(run, waiting_status(run, reason, message, now))
                .await?;
            // No watch wakes a run waiting for an admission policy or a CRD: it looks again
            // sooner.
            Ok(Action::requeue(
                if [reasons::ADMISSION_POLICY_MISSING, reasons::CRD_MISSING].contains(&reason) {
                    CREATE_RETRY
                } else {
                    WAIT_RECHECK
                },
            ))
        }
        Prepared::Refused { reason, message } => {
            ctx.transition(run, refused_status(run, reason, &message, now))
                .await?;
            Ok(Action::requeue(Duration::from_secs(1)))
        }
        Prepared::Ready(_) => Ok(Action::await_change()),
    }
}

fn error_policy(run: Arc<StudioRun>, error: &Error, ctx: Arc<RunContext>) -> Action {
    crate::controller::error_policy(run, error, ctx.base.clone())
}

/// The StudioRun controller over every namespace (or only `namespace`) until `shutdown`
/// resolves. It watches StudioRuns, their runner pods, and (to wake the runs waiting for them)
/// Compositions and RegistryEntries; queued runs are woken by the reconcile of a run whose
/// slot frees ([`RunContext::wake_queue`]).
pub fn controller(
    base: Arc<Context>,
    signer: Arc<RunTokenSigner>,
    namespace: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> {
    let client = base.client.clone();
    let watches = crate::controller::watch_config(&base.config);
    let controller = Controller::new(
        scoped::<StudioRun>(client.clone(), namespace),
        watches.clone(),
    )
    .owns(
        scoped::<Pod>(client.clone(), namespace),
        watches
            .clone()
            .labels(&format!("app.kubernetes.io/name={RUNNER_APP}")),
    );
    let store = controller.store();
    let (for_compositions, for_entries) = (store.clone(), store.clone());
    let (wake, woken) = futures::channel::mpsc::unbounded();
    let ctx = Arc::new(RunContext {
        base,
        signer,
        runs: store,
        admitted: tokio::sync::Mutex::new(HashSet::new()),
        warned: std::sync::Mutex::new(HashSet::new()),
        written: std::sync::Mutex::new(std::collections::HashMap::new()),
        evicted: std::sync::Mutex::new(std::collections::HashMap::new()),
        policies: Default::default(),
        wake,
    });
    if !ctx.base.config.admission_policies.is_empty() {
        tokio::spawn(super::policies::watch_policies(Arc::downgrade(&ctx)));
    }
    let stream = controller
        .watches(
            scoped::<Composition>(client.clone(), namespace),
            watches.clone(),
            move |c| {
                waiting_runs(
                    &for_compositions,
                    c.namespace(),
                    &[reasons::WAITING_FOR_COMPOSITION],
                )
            },
        )
        .watches(
            scoped::<RegistryEntry>(client.clone(), namespace),
            watches.clone(),
            move |e| waiting_runs(&for_entries, e.namespace(), &[reasons::WAITING_FOR_ENTRIES]),
        )
        // A slot frees when a run that holds one ends or is let go before its pod: its
        // reconcile wakes the queued runs that may then start.
        .reconcile_on(woken)
        .graceful_shutdown_on(shutdown)
        .run(crate::controller::counted(reconcile), error_policy, ctx);
    drain("StudioRun", stream)
}

impl crate::controller::Metered for RunContext {
    fn metrics(&self) -> &crate::metrics::Metrics {
        &self.base.metrics
    }

    fn retries(&self) -> &crate::retry::Retries {
        &self.base.retries
    }

    fn client(&self) -> &kube::Client {
        &self.base.client
    }
}
