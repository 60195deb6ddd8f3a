//! The RegistryEntry controller (static checks; the probe pod comes next): reads the Secrets
//! the entry references, calls [`super::status::static_problems`] and
//! [`super::status::static_status`], writes the status only when it changed and publishes an
//! Event when `Ready` flips.

use super::builders::secret_refs;
use super::status::{SecretKeys, static_problems, static_status};
use crate::controller::{Context, apply_status, drain, scoped};
use crate::error::{Error, Result};
use crate::kstatus::find;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};
use orrery_crds::common::ConditionStatus;
use orrery_crds::conditions::READY;
use orrery_crds::registry::RegistryEntry;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How often an entry whose Secret is missing is checked again (Secrets are not watched: the
/// operator reads only the Secrets entries name).
const SECRET_RECHECK: Duration = Duration::from_secs(60);

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
            let mut keys: BTreeSet<String> = secret.data.unwrap_or_default().into_keys().collect();
            keys.extend(secret.string_data.unwrap_or_default().into_keys());
            out.insert(name.to_owned(), keys);
        }
    }
    Ok(out)
}

/// Reconciles one RegistryEntry's static checks.
pub async fn reconcile(entry: Arc<RegistryEntry>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = entry.namespace().ok_or_else(|| Error::MissingMetadata {
        kind: "RegistryEntry",
        name: entry.name_any(),
        field: "namespace",
    })?;
    let name = entry.name_any();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let secrets = referenced_secrets(&secrets, &entry).await?;
    let problems = static_problems(&entry, &ctx.config, &secrets);
    let next = if problems.iter().any(|p| p.field.contains("secretKeyRef")) {
        Action::requeue(SECRET_RECHECK)
    } else {
        Action::await_change()
    };
    let status = static_status(&entry, &problems, Timestamp::now());
    if entry.status.as_ref() == Some(&status) {
        return Ok(next);
    }
    // The watched copy can lag behind the status this controller just wrote: decide on the
    // stored object, so a repeat writes nothing and announces nothing.
    let api: Api<RegistryEntry> = Api::namespaced(ctx.client.clone(), &namespace);
    let stored = api.get(&name).await?;
    if stored.metadata.generation != entry.metadata.generation {
        return Ok(Action::await_change());
    }
    let status = static_status(&stored, &problems, Timestamp::now());
    if stored.status.as_ref() == Some(&status) {
        return Ok(next);
    }
    apply_status(&api, &name, &status).await?;
    let before = stored
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, READY))
        .map(|c| c.status);
    if let Some(now) = find(&status.conditions, READY).filter(|c| Some(c.status) != before) {
        let type_ = if now.status == ConditionStatus::False {
            EventType::Warning
        } else {
            EventType::Normal
        };
        ctx.event(entry.as_ref(), type_, &now.reason, now.message.clone())
            .await;
    }
    Ok(next)
}

/// The RegistryEntry controller over every namespace (or only `namespace`), until `shutdown` resolves.
pub fn controller(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> {
    let stream = Controller::new(
        scoped::<RegistryEntry>(ctx.client.clone(), namespace),
        watcher::Config::default(),
    )
    .graceful_shutdown_on(shutdown)
    .run(
        crate::controller::counted(reconcile),
        crate::controller::error_policy,
        ctx,
    );
    drain("RegistryEntry", stream)
}
