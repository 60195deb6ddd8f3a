//! The RegistryEntry controller: reads the Secrets the entry references and its probe pods,
//! calls the pure parts ([`super::status`] for the static checks and the probe's status,
//! [`super::probe`] for the probe pod and its NetworkPolicy), writes the status only when it
//! changed, creates or deletes the probe pod they call for, and publishes an Event when
//! `Ready` changes (status or reason).

use super::probe::{
    PROBE_APP, PROBE_DEADLINE_SECONDS, probe_network_policy, probe_pod, probe_pod_name,
    probe_selector,
};
use super::status::{
    ProbeNext, ReferencedSecret, SecretKeys, SpecProblem, needs_no_probe, observe, probe_status,
    static_problems, static_status,
};
use crate::controller::{Context, apply_status, drain, scoped};
use crate::endpoints::{ALLOWED_ORIGINS_ANNOTATION, secret_refs};
use crate::error::{Error, Result};
use crate::kstatus::find;
use crate::sandbox::pod_state;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use orrery_crds::common::ConditionStatus;
use orrery_crds::conditions::READY;
use orrery_crds::registry::{RegistryEntry, RegistryEntryStatus};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How often an entry whose Secret (or key-set ConfigMap) is missing is checked again (neither
/// is watched: the operator reads only the ones entries name).
const SECRET_RECHECK: Duration = Duration::from_secs(60);

/// How long a running probe pod is waited for before the entry is looked at again anyway
/// (its pod's changes wake the controller first).
const PROBE_WAIT: Duration = Duration::from_secs(PROBE_DEADLINE_SECONDS.unsigned_abs() + 30);

/// The keys of the Secrets `entry` references that exist (a missing Secret is left out, so
/// the static checks name it).
async fn referenced_secrets(api: &Api<Secret>, entry: &RegistryEntry) -> Result<SecretKeys> {
    let mut out = SecretKeys::new();
    let names: BTreeSet<&str> = secret_refs(&entry.spec)
        .into_iter()
        .map(|(_, r)| r.name.as_str())
        .collect();
    for name in names {
        if let Some(secret) = api.get_opt(name).await? {
            let allowed_origins = secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ALLOWED_ORIGINS_ANNOTATION))
                .cloned();
            let mut keys: BTreeSet<String> = secret.data.unwrap_or_default().into_keys().collect();
            keys.extend(secret.string_data.unwrap_or_default().into_keys());
            out.insert(
                name.to_owned(),
                ReferencedSecret {
                    keys,
                    allowed_origins,
                },
            );
        }
    }
    Ok(out)
}

fn ready_of(status: Option<&RegistryEntryStatus>) -> Option<(ConditionStatus, String)> {
    status
        .and_then(|s| find(&s.conditions, READY))
        .map(|c| (c.status, c.reason.clone()))
}

/// Writes `status` if it differs from the stored one, and publishes an Event when `Ready`
/// changed status or reason.
async fn write_status(
    ctx: &Context,
    api: &Api<RegistryEntry>,
    stored: &RegistryEntry,
    status: &RegistryEntryStatus,
) -> Result<()> {
    if stored.status.as_ref() == Some(status) {
        return Ok(());
    }
    apply_status(api, stored, status).await?;
    let before = ready_of(stored.status.as_ref());
    if let Some(now) =
        find(&status.conditions, READY).filter(|c| Some((c.status, c.reason.clone())) != before)
    {
        let type_ = if now.status == ConditionStatus::False {
            EventType::Warning
        } else {
            EventType::Normal
        };
        ctx.event(stored, type_, &now.reason, now.message.clone())
            .await;
    }
    Ok(())
}

async fn delete_pod(api: &Api<Pod>, name: &str) -> Result<()> {
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Reconciles one RegistryEntry: its static checks, then its probe.
pub async fn reconcile(entry: Arc<RegistryEntry>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = entry.namespace().ok_or_else(|| Error::MissingMetadata {
        kind: "RegistryEntry",
        name: entry.name_any(),
        field: "namespace",
    })?;
    let name = entry.name_any();
    let api: Api<RegistryEntry> = Api::namespaced(ctx.client.clone(), &namespace);
    // The watched copy can lag behind the status this controller just wrote: decide on the
    // stored object, so a repeat writes nothing, announces nothing and starts no second pod.
    let Some(stored) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let secrets = referenced_secrets(&secrets, &stored).await?;
    let mut problems = static_problems(&stored, &ctx.config, &secrets);
    // The probe reads the entry with the key set its jwksConfigMapRef names put in place.
    let mut resolved = stored.clone();
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Some(found) = crate::card_keys::resolve(&configmaps, &mut resolved).await? {
        problems.push(SpecProblem {
            field: crate::card_keys::FIELD.to_owned(),
            problem: found.problem,
            fix: found.fix,
        });
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let uid = stored.uid().ok_or_else(|| Error::MissingMetadata {
        kind: "RegistryEntry",
        name: name.clone(),
        field: "uid",
    })?;
    let probe_pods = pods
        .list(&ListParams::default().labels(&probe_selector(&uid)))
        .await?
        .items;
    if !problems.is_empty() || needs_no_probe(&stored) {
        for pod in &probe_pods {
            delete_pod(&pods, &pod.name_any()).await?;
        }
        let status = static_status(&stored, &problems, Timestamp::now());
        write_status(&ctx, &api, &stored, &status).await?;
        return Ok(
            if problems
                .iter()
                .any(|p| p.field.contains("secretKeyRef") || p.field == crate::card_keys::FIELD)
            {
                Action::requeue(SECRET_RECHECK)
            } else {
                Action::await_change()
            },
        );
    }
    let expected = probe_pod_name(&resolved)?;
    for pod in probe_pods.iter().filter(|p| p.name_any() != expected) {
        delete_pod(&pods, &pod.name_any()).await?;
    }
    let current = probe_pods.iter().find(|p| p.name_any() == expected);
    let observation = observe(&pod_state(current));
    let (status, next) = probe_status(
        &stored,
        &observation,
        ctx.config.probe_interval_seconds,
        Timestamp::now(),
    );
    // A reprobe request counts as acted on once its pod exists: the status without it is written
    // first, so a failed create leaves the request pending for the retry.
    let stored_reprobe = stored.status.as_ref().and_then(|s| s.last_reprobe.clone());
    let reprobed = status.last_reprobe != stored_reprobe;
    let mut first = status.clone();
    if reprobed {
        first.last_reprobe = stored_reprobe;
    }
    write_status(&ctx, &api, &stored, &first).await?;
    Ok(match next {
        ProbeNext::CreatePod => {
            let policy = probe_network_policy(&stored, &ctx.config)?;
            let policies: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), &namespace);
            policies
                .patch(
                    &policy.name_any(),
                    &PatchParams::apply(crate::FIELD_MANAGER).force(),
                    &Patch::Apply(&policy),
                )
                .await?;
            let pod = probe_pod(&resolved, &ctx.config)?;
            match pods.create(&PostParams::default(), &pod).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            if reprobed {
                apply_status(&api, &stored, &status).await?;
            }
            Action::requeue(PROBE_WAIT)
        }
        ProbeNext::Wait => Action::requeue(PROBE_WAIT),
        ProbeNext::DeletePod { due_in } => {
            delete_pod(&pods, &expected).await?;
            Action::requeue(Duration::from_secs(due_in.max(1)))
        }
        ProbeNext::Idle { due_in } => Action::requeue(Duration::from_secs(due_in.max(1))),
    })
}

/// The RegistryEntry controller over every namespace (or only `namespace`), until `shutdown`
/// resolves. It owns the probe pods: a pod's change wakes its entry.
pub fn controller(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> {
    let stream = Controller::new(
        scoped::<RegistryEntry>(ctx.client.clone(), namespace),
        crate::controller::watch_config(&ctx.config),
    )
    .owns(
        scoped::<Pod>(ctx.client.clone(), namespace),
        crate::controller::watch_config(&ctx.config)
            .labels(&format!("app.kubernetes.io/name={PROBE_APP}")),
    )
    .graceful_shutdown_on(shutdown)
    .run(
        crate::controller::counted(reconcile),
        crate::controller::error_policy,
        ctx,
    );
    drain("RegistryEntry", stream)
}
