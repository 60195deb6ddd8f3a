//! The children of a run in the cluster: creating them (plan Secret, NetworkPolicy, runner
//! Pod, in that order) without adopting what is not the run's, stopping a cancelled run's pod,
//! recovering a started run's record from its plan Secret, the start timeout, and what a
//! refused create means for the run. The objects themselves are [`super::builders`]'.

use super::admission::enforces_restricted;
use super::builders::{
    RUN_UID_LABEL, active_deadline_seconds, child_names, identity, plan_secret, runner_pod,
};
use super::network::network_policy;
use super::prepare::Prepared;
use super::reconcile::RunContext;
use super::status::started_status;
use crate::error::{Error, Result};
use crate::run_token::run_claims;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use orrery_crds::StudioRun;
use orrery_crds::conditions::reasons;
use orrery_crds::plan_document::PlanDocument;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::Duration;

/// A run whose child the apiserver refused as forbidden (a quota, a policy) is tried again
/// this often.
pub(super) const CREATE_RETRY: Duration = Duration::from_secs(10);

/// Creates `object` unless it exists: `Ok(None)` when created, `Ok(Some(existing))` when an
/// object of that name already has the run `uid` as its controller (an earlier attempt; the
/// caller compares its content, since anyone who may create the kind may write any owner
/// reference). A name taken by a child of an earlier run of the same name is
/// [`Error::Predecessor`] (the garbage collector is removing it); by anything else,
/// [`Error::NameTaken`]: never adopted.
pub(super) async fn create_owned<K>(
    api: &Api<K>,
    object: &K,
    run_name: &str,
    uid: &str,
) -> Result<Option<K>>
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
            let namespace = existing.meta().namespace.clone().unwrap_or_default();
            let kind = K::kind(&()).into_owned();
            if ours {
                Ok(Some(existing))
            } else if of_predecessor(existing.meta(), run_name, uid) {
                Err(Error::Predecessor {
                    kind,
                    name,
                    namespace,
                })
            } else {
                Err(Error::NameTaken {
                    kind,
                    name,
                    namespace,
                })
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a child is controlled by an earlier StudioRun named `run_name`: one with another
/// UID than the run's `uid`, so deleted (a name is held by one object at a time). The garbage
/// collector removes such a child once it sees its owner gone; the operator waits for that and
/// never deletes it itself (an owner reference is only what its writer claimed).
pub(super) fn of_predecessor(meta: &kube::api::ObjectMeta, run_name: &str, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| {
        o.controller == Some(true)
            && o.kind == "StudioRun"
            && o.api_version == orrery_crds::StudioRun::api_version(&())
            && o.name == run_name
            && o.uid != uid
    })
}

/// Whether the pod is this run's: its UID label and controller reference, and a runner the
/// operator would have made (the configured image, no command, the runner's arguments, the
/// run's plan Secret). A look-alike made by someone who may create pods here could otherwise
/// write the run's outcome and totals.
pub(super) fn check_pod_owner(pod: &Pod, uid: &str, image: Option<&str>) -> Result<()> {
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
    /// Says once per namespace (per operator process) that the namespace does not enforce Pod
    /// Security `restricted`; the runner pod is restricted either way.
    pub(super) async fn warn_pod_security(&self, run: &StudioRun, namespace: &str) {
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
                tracing::warn!("reading namespace {namespace} for its Pod Security level: {e}");
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
    pub(super) async fn start(
        &self,
        run: &StudioRun,
        document: &PlanDocument,
        now: Timestamp,
    ) -> Result<()> {
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
            create_owned(&secrets, &secret, &id.name, &id.uid),
            create_owned(&policies, &policy, &id.name, &id.uid)
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
        if let Some(existing) =
            create_owned(&self.api::<Pod>(&id.namespace), &pod, &id.name, &id.uid).await?
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
    pub(super) async fn stop_pod(&self, pod: &Pod, now: Timestamp) -> Result<()> {
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
    pub(super) async fn recovered(&self, run: &StudioRun, pod: &Pod) -> Result<StudioRun> {
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
}

/// How long a starting pod still has before its start timeout.
pub(super) fn start_time_left(
    pod: &Pod,
    config: &crate::config::Config,
    now: Timestamp,
) -> Duration {
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
pub(super) fn stuck_starting(
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
pub(super) fn create_refusal(code: u16, message: &str) -> Prepared {
    let said: String = message.chars().take(600).collect();
    if code == 403 {
        Prepared::Waiting {
            reason: reasons::CREATE_REFUSED,
            message: format!(
                "the apiserver refused a child of the run (forbidden: {said}); retried every {}s: \
                 give the operator back its rights in this namespace (list it in the chart's \
                 tenantNamespaces, or restore that RoleBinding), or fix the quota or policy \
                 that refuses it, or delete the run",
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

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::run::builders::tests::run;

    #[test]
    fn a_forbidden_child_waits_and_an_invalid_one_fails_the_run() {
        match create_refusal(403, "exceeded quota: pods=10") {
            Prepared::Waiting { reason, message } => {
                assert_eq!(reason, reasons::CREATE_REFUSED);
                assert!(message.contains("exceeded quota: pods=10"), "{message}");
                assert!(
                    message.contains("tenantNamespaces"),
                    "names the RBAC fix: {message}"
                );
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

    #[test]
    fn a_child_is_a_predecessors_only_when_a_deleted_run_of_the_same_name_controls_it() {
        let pod = runner_pod(
            &run("notes-1"),
            &crate::run::builders::tests::document(&crate::run::builders::tests::config("")),
            &crate::run::builders::tests::config(""),
        )
        .expect("pod");
        // Its own run (same UID) and a new run of the same name (another UID).
        assert!(!of_predecessor(&pod.metadata, "notes-1", "uid-notes-1"));
        assert!(of_predecessor(&pod.metadata, "notes-1", "uid-reborn"));
        // Another run's name, a reference that does not control, or another kind: not a
        // predecessor (a name taken by something else fails the run instead).
        assert!(!of_predecessor(&pod.metadata, "notes-2", "uid-reborn"));
        let mut meta = pod.metadata.clone();
        for o in meta.owner_references.iter_mut().flatten() {
            o.controller = Some(false);
        }
        assert!(!of_predecessor(&meta, "notes-1", "uid-reborn"));
        let mut meta = pod.metadata.clone();
        for o in meta.owner_references.iter_mut().flatten() {
            o.kind = "Composition".into();
        }
        assert!(!of_predecessor(&meta, "notes-1", "uid-reborn"));
        let mut meta = pod.metadata;
        meta.owner_references = None;
        assert!(!of_predecessor(&meta, "notes-1", "uid-reborn"));
    }
}
