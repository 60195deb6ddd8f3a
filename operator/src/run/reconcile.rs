//! The StudioRun controller. A run goes once through: resolve what it runs (its Composition at
//! a revision, or inline) → [`super::prepare`] (refuse or wait) → the daily budget and the
//! queue ([`super::admission`], one decision at a time per process) → create its plan Secret,
//! NetworkPolicy and runner Pod (all owned by it) → follow the pod ([`super::status`]) → delete
//! it a TTL after it ended. Cancel (`spec.cancel`) lowers the pod's `activeDeadlineSeconds` so
//! the kubelet stops the runner with SIGTERM and the pod (with the runner's summary) stays to be
//! read; deleting the run deletes its children through their ownerReferences (the pod gets
//! SIGTERM). Status is written only when it changed; Events mark the transitions.

use super::admission::{QueueDecision, check_daily_budget, enforces_restricted, queue_decision};
use super::builders::{
    RUN_UID_LABEL, RUNNER_APP, active_deadline_seconds, child_names, identity, plan_secret,
    runner_pod,
};
use super::network::network_policy;
use super::prepare::{Prepared, Source, prepare};
use super::status::{
    cancelled_status, queued_status, refused_status, run_status, started_status, ttl_remaining,
    waiting_status,
};
use crate::composition::builders::{current_revision, revision_name, spec_of};
use crate::controller::{Context, apply_status, drain, scoped};
use crate::error::{Error, Result};
use crate::kstatus::find;
use crate::run_token::{RunTokenSigner, run_claims};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, Resource, ResourceExt};
use orrery_crds::conditions::{SUCCEEDED, reasons};
use orrery_crds::plan_document::PlanDocument;
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RunPhase;
use orrery_crds::{Composition, StudioRun, StudioRunStatus};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A run waiting for its entries or its composition is looked at again this often besides
/// the watches that wake it (a missed event costs at most this).
const WAIT_RECHECK: Duration = Duration::from_secs(60);
/// A run whose child the apiserver refused as forbidden (a quota, a policy) is tried again
/// this often.
const CREATE_RETRY: Duration = Duration::from_secs(10);
/// A finished run is looked at again at least this often until its TTL deletes it.
const TTL_RECHECK_MAX: Duration = Duration::from_secs(6 * 3600);

/// What the StudioRun reconciler is given besides the shared [`Context`].
pub struct RunContext {
    /// The shared context (client, config, Events).
    pub base: Arc<Context>,
    /// Signs each run's token.
    pub signer: Arc<RunTokenSigner>,
    /// Every StudioRun the controller watches (its reflector).
    runs: Store<StudioRun>,
    /// One admission decision at a time; the UIDs of runs admitted whose stored status does
    /// not show their pod yet (so two runs never take the same last slot).
    admitted: tokio::sync::Mutex<HashSet<String>>,
    /// Namespaces already told (by an Event) that they do not enforce Pod Security
    /// `restricted`.
    warned: std::sync::Mutex<HashSet<String>>,
    /// The last status written per run UID (forgotten when the run is deleted).
    written: std::sync::Mutex<std::collections::HashMap<String, StudioRunStatus>>,
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

/// Whether a run has ended.
fn is_final(status: Option<&StudioRunStatus>) -> bool {
    status.is_some_and(|s| s.phase.is_some_and(RunPhase::is_terminal))
}

fn reason_of(run: &StudioRun) -> Option<&str> {
    run.status
        .as_ref()
        .and_then(|s| find(&s.conditions, SUCCEEDED))
        .map(|c| c.reason.as_str())
}

/// Whether `run` has not started and waits for one of `waiting` (condition reasons).
fn waits_for(run: &StudioRun, waiting: &[&str]) -> bool {
    !is_final(run.status.as_ref())
        && run.status.as_ref().is_none_or(|s| s.runner_pod.is_none())
        && reason_of(run).is_some_and(|r| waiting.contains(&r))
}

/// The runs of `namespace` in `store` that wait for one of `waiting`.
fn waiting_runs(
    store: &Store<StudioRun>,
    namespace: Option<String>,
    waiting: &[&str],
) -> Vec<ObjectRef<StudioRun>> {
    store
        .state()
        .iter()
        .filter(|r| r.namespace() == namespace && waits_for(r, waiting))
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// How many queued runs a freed slot wakes (the first in creation order of the namespace and
/// the owner): the rest keep waiting for their own recheck, so a long queue is not rewritten
/// on every slot.
const QUEUE_WAKE: usize = 8;

/// The first [`QUEUE_WAKE`] queued runs that `freed` (a run that held a slot) may let start:
/// of its namespace or its owner, oldest first.
fn queue_head(store: &Store<StudioRun>, freed: &StudioRun) -> Vec<ObjectRef<StudioRun>> {
    let mut queued: Vec<Arc<StudioRun>> = store
        .state()
        .into_iter()
        .filter(|r| {
            (r.namespace() == freed.namespace() || r.spec.owner == freed.spec.owner)
                && waits_for(r, &[reasons::QUEUED])
        })
        .collect();
    queued.sort_by_key(|r| {
        (
            r.metadata.creation_timestamp.as_ref().map(|t| t.0),
            r.name_any(),
        )
    });
    queued
        .iter()
        .take(QUEUE_WAKE)
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// Creates `object` unless it exists: `Ok(None)` when created, `Ok(Some(existing))` when an
/// object of that name already has the run `uid` as its controller (an earlier attempt; the
/// caller compares its content, since anyone who may create the kind may write any owner
/// reference). A name taken by something else is an error, never adopted.
async fn create_owned<K>(api: &Api<K>, object: &K, uid: &str) -> Result<Option<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let name = object.meta().name.clone().unwrap_or_default();
            let existing = api.get(&name).await?;
            let ours = existing
                .meta()
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true));
            if ours {
                Ok(Some(existing))
            } else {
                Err(Error::NameTaken {
                    kind: K::kind(&()).into_owned(),
                    name,
                    namespace: existing.meta().namespace.clone().unwrap_or_default(),
                })
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether the pod is this run's: its UID label and controller reference, and a runner the
/// operator would have made (the configured image, no command, the runner's arguments, the
/// run's plan Secret). A look-alike made by someone who may create pods here could otherwise
/// write the run's outcome and totals.
fn check_pod_owner(pod: &Pod, uid: &str, image: Option<&str>) -> Result<()> {
    let labelled = pod
        .labels()
        .get(RUN_UID_LABEL)
        .is_some_and(|value| value == uid);
    let owned = pod
        .owner_references()
        .iter()
        .any(|o| o.uid == uid && o.controller == Some(true));
    let run_name = pod
        .annotations()
        .get(super::builders::RUN_NAME_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let runner = pod.spec.as_ref().is_some_and(|s| {
        let plan_secret = s.volumes.iter().flatten().find(|v| v.name == "plan");
        s.containers.len() == 1
            && s.containers.first().is_some_and(|c| {
                image.is_none_or(|image| c.image.as_deref() == Some(image))
                    && c.command.is_none()
                    && c.args.as_ref() == Some(&super::builders::runner_args())
            })
            && plan_secret
                .and_then(|v| v.secret.as_ref())
                .and_then(|s| s.secret_name.as_deref())
                == Some(child_names(&run_name).secret.as_str())
    });
    if labelled && owned && runner {
        Ok(())
    } else {
        Err(Error::NameTaken {
            kind: "Pod".into(),
            name: pod.name_any(),
            namespace: pod.namespace().unwrap_or_default(),
        })
    }
}

impl RunContext {
    fn api<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.base.client.clone(), namespace)
    }

    /// Writes `status` if it differs from the run's; returns whether it wrote.
    async fn write(&self, run: &StudioRun, status: &StudioRunStatus) -> Result<bool> {
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
        apply_status(&self.api::<StudioRun>(&id.namespace), &id.name, &body).await?;
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

    /// The daily budget and the queue, decided one run at a time: `Ok(None)` admits the run.
    async fn admit(&self, run: &StudioRun, now: Timestamp) -> Result<Option<StudioRunStatus>> {
        let limits = &self.base.config.run_limits;
        let uid = run.uid().unwrap_or_default();
        let mut admitted = self.admitted.lock().await;
        let mut all: Vec<Arc<StudioRun>> = self.runs.state();
        // A run admitted here whose cached status does not show its pod yet holds its slot
        // (a copy says so); one the cache shows started, ended or gone leaves the set.
        let mut seen = HashSet::new();
        for other in all.iter_mut() {
            let other_uid = other.uid().unwrap_or_default();
            if other_uid == uid || !admitted.contains(&other_uid) {
                continue;
            }
            let pending = other.status.as_ref().is_none_or(|s| s.runner_pod.is_none())
                && !is_final(other.status.as_ref());
            if pending {
                let mut holding = (**other).clone();
                holding
                    .status
                    .get_or_insert_with(Default::default)
                    .runner_pod = Some(String::new());
                *other = Arc::new(holding);
                seen.insert(other_uid);
            }
        }
        admitted.retain(|u| seen.contains(u));
        // Forget what was written for runs that are gone (deleted by a person, not the TTL).
        if let Ok(mut w) = self.written.lock() {
            let live: HashSet<String> = all.iter().filter_map(|r| r.uid()).collect();
            w.retain(|uid, _| live.contains(uid));
        }
        let queued = all
            .iter()
            .filter(|r| waits_for(r, &[reasons::QUEUED]))
            .count();
        self.base.metrics.set_queue_depth(queued);
        if let Err(message) = check_daily_budget(run, &all, limits, now) {
            return Ok(Some(refused_status(
                run,
                reasons::DAILY_BUDGET_EXCEEDED,
                &message,
                now,
            )));
        }
        match queue_decision(run, &all, limits) {
            QueueDecision::Start => {
                admitted.insert(uid);
                Ok(None)
            }
            QueueDecision::Queued { position, why } => {
                Ok(Some(queued_status(run, position, &why, now)))
            }
        }
    }

    /// Says once per namespace (per operator process) that the namespace does not enforce Pod
    /// Security `restricted`; the runner pod is restricted either way.
    async fn warn_pod_security(&self, run: &StudioRun, namespace: &str) {
        let warned = self
            .warned
            .lock()
            .map(|w| w.contains(namespace))
            .unwrap_or(true);
        if warned {
            return;
        }
        let namespaces: Api<Namespace> = Api::all(self.base.client.clone());
        let restricted = match namespaces.get_opt(namespace).await {
            Ok(n) => n.is_some_and(|n| enforces_restricted(&n)),
            Err(e) => {
                // Only a warning is lost; it is tried again with the next run here.
                eprintln!(
                    "orrery-operator: reading namespace {namespace} for its Pod Security level: {e}"
                );
                return;
            }
        };
        if let Ok(mut w) = self.warned.lock() {
            w.insert(namespace.to_owned());
        }
        if !restricted {
            self.base
                .event(
                    run,
                    EventType::Warning,
                    "PodSecurityNotEnforced",
                    format!(
                        "namespace {namespace} does not enforce Pod Security restricted (label {}=restricted); runner pods are restricted anyway, but other pods here may not be",
                        super::admission::POD_SECURITY_ENFORCE_LABEL
                    ),
                )
                .await;
        }
    }

    /// Creates the run's children (Secret, NetworkPolicy, Pod: in that order, so a pod never
    /// starts without its policy) and records the start.
    async fn start(&self, run: &StudioRun, document: &PlanDocument, now: Timestamp) -> Result<()> {
        let id = identity(run)?;
        let config = &self.base.config;
        self.warn_pod_security(run, &id.namespace).await;
        // The token outlives the longest the pod may take to start plus its deadline backstop.
        let lifetime = u64::try_from(active_deadline_seconds(&document.plan.budgets, config))
            .unwrap_or(u64::MAX)
            .saturating_add(config.runner.start_timeout_seconds);
        let claims = run_claims(
            &id.namespace,
            &id.name,
            &id.uid,
            &config.run_token.audience,
            now.as_second(),
            lifetime,
        );
        let token = self.signer.sign(&claims)?;
        let secret = plan_secret(run, document, &token)?;
        // Children left by an earlier attempt are used only if they hold exactly this plan
        // (the token aside): a retry never mixes an old plan with a new policy, and a
        // look-alike made by someone else is never run.
        let differs = |kind: &str, name: &Option<String>| Error::ChildDiffers {
            kind: kind.to_owned(),
            name: name.clone().unwrap_or_default(),
            namespace: id.namespace.clone(),
        };
        let policy = network_policy(run, document, config)?;
        // The Secret and the NetworkPolicy at once (neither needs the other); the pod only
        // after both, so it never starts without its policy.
        let secrets = self.api::<Secret>(&id.namespace);
        let policies = self.api::<NetworkPolicy>(&id.namespace);
        let (secret_found, policy_found) = futures::join!(
            create_owned(&secrets, &secret, &id.uid),
            create_owned(&policies, &policy, &id.uid)
        );
        if let Some(existing) = secret_found? {
            let same = |key: &str| {
                existing.data.as_ref().and_then(|d| d.get(key))
                    == secret.data.as_ref().and_then(|d| d.get(key))
            };
            if !(same(super::builders::PLAN_KEY) && same(super::builders::INPUT_KEY)) {
                return Err(differs("Secret", &secret.metadata.name));
            }
        }
        if let Some(existing) = policy_found?
            && existing.spec != policy.spec
        {
            return Err(differs("NetworkPolicy", &policy.metadata.name));
        }
        let pod = runner_pod(run, document, config)?;
        if let Some(existing) = create_owned(&self.api::<Pod>(&id.namespace), &pod, &id.uid).await?
        {
            check_pod_owner(&existing, &id.uid, Some(&config.runner.image))?;
        }
        if let Some(created) = run.metadata.creation_timestamp.as_ref() {
            let waited = now
                .as_millisecond()
                .saturating_sub(created.0.as_millisecond());
            self.base
                .metrics
                .pod_created(Duration::from_millis(u64::try_from(waited).unwrap_or(0)));
        }
        let pod_name = child_names(&id.name).pod;
        let status = started_status(run, document.composition.clone(), &pod_name, now);
        self.write(run, &status).await?;
        self.base
            .event(
                run,
                EventType::Normal,
                "Started",
                format!(
                    "runner pod {pod_name} created for {} revision {}",
                    document.composition.name,
                    document
                        .composition
                        .revision
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| "-".into())
                ),
            )
            .await;
        Ok(())
    }

    /// Stops a cancelled run's pod: one that has started gets its deadline lowered to the time
    /// it has run (the kubelet sends SIGTERM and keeps the pod, with the runner's summary); one
    /// that never started is deleted.
    async fn stop_pod(&self, pod: &Pod, now: Timestamp) -> Result<()> {
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed"))
            || pod.metadata.deletion_timestamp.is_some()
        {
            return Ok(());
        }
        let namespace = pod.namespace().unwrap_or_default();
        let pods = self.api::<Pod>(&namespace);
        let Some(started) = status.and_then(|s| s.start_time.as_ref()) else {
            match pods.delete(&pod.name_any(), &DeleteParams::default()).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        };
        let ran = now.as_second().saturating_sub(started.0.as_second()).max(1);
        let current = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        if current.is_some_and(|c| c <= ran) {
            return Ok(());
        }
        let patch = serde_json::json!({ "spec": { "activeDeadlineSeconds": ran } });
        match pods
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The composition a started run recorded, or (when the operator stopped between creating
    /// the pod and writing the status) the one its plan Secret holds.
    async fn recovered(&self, run: &StudioRun, pod: &Pod) -> Result<StudioRun> {
        let mut run = run.clone();
        if run.status.as_ref().is_some_and(|s| s.runner_pod.is_some()) {
            return Ok(run);
        }
        let id = identity(&run)?;
        let names = child_names(&id.name);
        let secret = self.api::<Secret>(&id.namespace).get(&names.secret).await?;
        let plan = secret
            .data
            .as_ref()
            .and_then(|d| d.get(super::builders::PLAN_KEY))
            .map(|b| b.0.clone())
            .unwrap_or_default();
        let document: PlanDocument =
            serde_json::from_slice(&plan).map_err(|e| Error::json("the run's plan Secret", e))?;
        run.status = Some(started_status(
            &run,
            document.composition,
            &pod.name_any(),
            Timestamp::now(),
        ));
        Ok(run)
    }

    /// A finished run: deleted (with its children) once its TTL has passed.
    async fn after_finish(&self, run: &StudioRun, now: Timestamp) -> Result<Action> {
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
        // The pod is gone: run_status says how the run ended.
        ctx.transition(&run, run_status(&run, None, now)).await?;
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
    if let Some(status) = ctx.admit(&run, now).await? {
        let finished = is_final(Some(&status));
        ctx.transition(&run, status).await?;
        return Ok(Action::requeue(if finished {
            Duration::from_secs(1)
        } else {
            WAIT_RECHECK
        }));
    }
    let started = ctx.prepare_and_start(&run, &id.namespace, now).await;
    if !matches!(started, Ok(Started::Yes)) {
        ctx.release(&id.uid).await;
    }
    match started {
        Ok(Started::Yes) => Ok(Action::await_change()),
        Ok(Started::No(outcome)) => record(&ctx, &run, outcome, now).await,
        Err(Error::Kube(kube::Error::Api(refusal))) if matches!(refusal.code, 403 | 422) => {
            let outcome = create_refusal(refusal.code, &refusal.message);
            record(&ctx, &run, outcome, now).await?;
            Ok(Action::requeue(CREATE_RETRY))
        }
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
        let entries = self
            .api::<RegistryEntry>(namespace)
            .list(&ListParams::default().match_any())
            .await?
            .items;
        match prepare(run, source, &entries, &self.base.config)? {
            Prepared::Ready(document) => {
                self.start(run, &document, now).await?;
                Ok(Started::Yes)
            }
            outcome => Ok(Started::No(outcome)),
        }
    }

    /// Forgets a run admitted whose pod was not created (it waits, was refused, or failed):
    /// it holds no slot.
    async fn release(&self, uid: &str) {
        self.admitted.lock().await.remove(uid);
    }

    /// Sets `orrery_runs{phase}` from the cache.
    fn count_phases(&self) {
        let runs = self.runs.state();
        for phase in crate::metrics::PHASES {
            let n = runs
                .iter()
                .filter(|r| r.status.as_ref().and_then(|s| s.phase) == Some(phase))
                .count();
            self.base.metrics.set_runs(phase, n);
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
            Action::await_change()
        })
    }
}

/// How long a starting pod still has before its start timeout.
fn start_time_left(pod: &Pod, config: &crate::config::Config, now: Timestamp) -> Duration {
    let created = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now.as_second(), |t| t.0.as_second());
    let deadline = created
        .saturating_add(i64::try_from(config.runner.start_timeout_seconds).unwrap_or(i64::MAX));
    Duration::from_secs(u64::try_from(deadline.saturating_sub(now.as_second())).unwrap_or(0))
}

/// A pod still not started past `runner.startTimeoutSeconds`: why (what it waits on), for the
/// run's error. `None` while it has time or once it has started.
fn stuck_starting(
    pod: &Pod,
    config: &crate::config::Config,
    now: Timestamp,
) -> Option<(String, Duration)> {
    if crate::sandbox::pod_state(Some(pod)) != crate::sandbox::PodState::Starting
        || !start_time_left(pod, config, now).is_zero()
    {
        return None;
    }
    let status = pod.status.as_ref();
    let waiting = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find_map(|c| c.state.as_ref()?.waiting.clone()))
        .map(|w| {
            format!(
                "{}{}",
                w.reason.unwrap_or_default(),
                w.message.map(|m| format!(": {m}")).unwrap_or_default()
            )
        });
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
        .map(|c| {
            format!(
                "not scheduled ({}{})",
                c.reason.clone().unwrap_or_default(),
                c.message
                    .clone()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            )
        });
    let why = waiting
        .or(unscheduled)
        .unwrap_or_else(|| "no reason given".into());
    let why: String = why.chars().take(600).collect();
    Some((
        format!(
            "the runner pod {} did not start within {}s (runner.startTimeoutSeconds): {why}",
            pod.name_any(),
            config.runner.start_timeout_seconds
        ),
        Duration::ZERO,
    ))
}

/// What a refusal by the apiserver to create a child means for the run: forbidden (a quota,
/// an admission policy) may pass later, so the run waits and is retried; invalid never will.
fn create_refusal(code: u16, message: &str) -> Prepared {
    let said: String = message.chars().take(600).collect();
    if code == 403 {
        Prepared::Waiting {
            reason: reasons::CREATE_REFUSED,
            message: format!(
                "the apiserver refused a child of the run (forbidden: {said}); retried every {}s: fix the quota or policy that refuses it, or delete the run",
                CREATE_RETRY.as_secs()
            ),
        }
    } else {
        Prepared::Refused {
            reason: reasons::CREATE_REFUSED,
            message: format!(
                "the apiserver refused a child of the run as invalid: {said}; check the operator's runner config (image, runtimeClassName, resources)"
            ),
        }
    }
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
            Ok(Action::requeue(WAIT_RECHECK))
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
/// Compositions, RegistryEntries and the other runs of a namespace (a slot frees when one
/// ends).
pub fn controller(
    base: Arc<Context>,
    signer: Arc<RunTokenSigner>,
    namespace: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> {
    let client = base.client.clone();
    let controller = Controller::new(
        scoped::<StudioRun>(client.clone(), namespace),
        watcher::Config::default(),
    )
    .owns(
        scoped::<Pod>(client.clone(), namespace),
        watcher::Config::default().labels(&format!("app.kubernetes.io/name={RUNNER_APP}")),
    );
    let store = controller.store();
    let (for_compositions, for_entries, for_slots) = (store.clone(), store.clone(), store.clone());
    let ctx = Arc::new(RunContext {
        base,
        signer,
        runs: store,
        admitted: tokio::sync::Mutex::new(HashSet::new()),
        warned: std::sync::Mutex::new(HashSet::new()),
        written: std::sync::Mutex::new(std::collections::HashMap::new()),
    });
    let stream = controller
        .watches(
            scoped::<Composition>(client.clone(), namespace),
            watcher::Config::default(),
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
            watcher::Config::default(),
            move |e| waiting_runs(&for_entries, e.namespace(), &[reasons::WAITING_FOR_ENTRIES]),
        )
        .watches(
            scoped::<StudioRun>(client, namespace),
            watcher::Config::default(),
            move |r| {
                // A slot frees when a run that holds one ends or goes; any change of such a
                // run (few per run: started, running, ended, deleted) wakes the queue's head.
                let holds = r.status.as_ref().is_some_and(|s| s.runner_pod.is_some());
                if holds || is_final(r.status.as_ref()) || r.metadata.deletion_timestamp.is_some() {
                    queue_head(&for_slots, &r)
                } else {
                    Vec::new()
                }
            },
        )
        .graceful_shutdown_on(shutdown)
        .run(crate::controller::counted(reconcile), error_policy, ctx);
    drain("StudioRun", stream)
}

impl crate::controller::Metered for RunContext {
    fn metrics(&self) -> &crate::metrics::Metrics {
        &self.base.metrics
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::run::builders::tests::run;
    use orrery_crds::common::ConditionStatus;

    fn with_reason(mut r: StudioRun, reason: &'static str, pod: Option<&str>) -> StudioRun {
        let mut status = waiting_status(&r, reason, "m".into(), Timestamp::UNIX_EPOCH);
        status.runner_pod = pod.map(str::to_owned);
        r.status = Some(status);
        r
    }

    #[test]
    fn only_runs_not_started_that_wait_for_the_thing_are_woken() {
        let queued = with_reason(run("a"), reasons::QUEUED, None);
        assert!(waits_for(&queued, &[reasons::QUEUED]));
        assert!(!waits_for(&queued, &[reasons::WAITING_FOR_ENTRIES]));
        let started = with_reason(run("b"), reasons::QUEUED, Some("b-runner"));
        assert!(!waits_for(&started, &[reasons::QUEUED]));
        assert!(!waits_for(&run("c"), &[reasons::QUEUED]), "no status yet");
        let mut ended = with_reason(run("d"), reasons::QUEUED, None);
        ended.status = Some(refused_status(
            &ended,
            reasons::REFUSED,
            "no",
            Timestamp::UNIX_EPOCH,
        ));
        assert!(!waits_for(&ended, &[reasons::QUEUED, reasons::REFUSED]));
        assert_eq!(
            ended
                .status
                .as_ref()
                .and_then(|s| find(&s.conditions, SUCCEEDED))
                .map(|c| c.status),
            Some(ConditionStatus::False)
        );
    }

    #[test]
    fn a_forbidden_child_waits_and_an_invalid_one_fails_the_run() {
        match create_refusal(403, "exceeded quota: pods=10") {
            Prepared::Waiting { reason, message } => {
                assert_eq!(reason, reasons::CREATE_REFUSED);
                assert!(message.contains("exceeded quota: pods=10"), "{message}");
            }
            other => panic!("forbidden waits, got {other:?}"),
        }
        match create_refusal(422, "spec.runtimeClassName: Invalid value") {
            Prepared::Refused { reason, message } => {
                assert_eq!(reason, reasons::CREATE_REFUSED);
                assert!(message.contains("runtimeClassName"), "{message}");
            }
            other => panic!("invalid refuses, got {other:?}"),
        }
    }

    #[test]
    fn a_pod_is_the_runs_only_with_its_uid_label_and_controller_reference() {
        let config = crate::run::builders::tests::config("");
        let r = run("notes-1");
        let doc = crate::run::builders::tests::document(&config);
        let pod = runner_pod(&r, &doc, &config).expect("pod");
        let image = Some(config.runner.image.as_str());
        assert!(check_pod_owner(&pod, "uid-notes-1", image).is_ok());
        let err = check_pod_owner(&pod, "uid-other", image).expect_err("another run's pod");
        assert!(err.to_string().contains("notes-1-runner"), "{err}");
        let mut unlabelled = pod.clone();
        unlabelled.metadata.labels = None;
        assert!(check_pod_owner(&unlabelled, "uid-notes-1", image).is_err());
        // A look-alike with the run's labels and owner but another image or command is not
        // the run's runner: its termination message would be a forged outcome.
        assert!(check_pod_owner(&pod, "uid-notes-1", Some("evil/image:1")).is_err());
        // A pod the run recorded keeps being its own after an upgrade changed the image.
        assert!(check_pod_owner(&pod, "uid-notes-1", None).is_ok());
        let mut commanded = pod.clone();
        if let Some(c) = commanded
            .spec
            .as_mut()
            .and_then(|s| s.containers.first_mut())
        {
            c.command = Some(vec!["/bin/sh".into()]);
        }
        assert!(check_pod_owner(&commanded, "uid-notes-1", image).is_err());
        let mut other_plan = pod.clone();
        if let Some(v) = other_plan
            .spec
            .as_mut()
            .and_then(|s| s.volumes.as_mut())
            .and_then(|v| v.iter_mut().find(|v| v.name == "plan"))
            .and_then(|v| v.secret.as_mut())
        {
            v.secret_name = Some("someone-elses-plan".into());
        }
        assert!(check_pod_owner(&other_plan, "uid-notes-1", image).is_err());
    }
}
