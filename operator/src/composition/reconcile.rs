//! The Composition controller: reads the namespace's RegistryEntries and the Composition's
//! revisions, calls the pure builders ([`super::status`], [`super::builders`]) and applies:
//! the ControllerRevision of the generation (created once, the newest
//! [`REVISION_HISTORY_LIMIT`] kept), the status (written only when it changed), an Event when
//! `Valid` flips. A RegistryEntry change re-validates the Compositions that use it.

use super::builders::{REVISION_HISTORY_LIMIT, controller_revision, revisions_to_prune, same_data};
use super::status::composition_status;
use crate::controller::{Context, apply_status, drain, scoped};
use crate::error::{Error, Result};
use crate::kstatus::find;
use crate::registry_view::registry_view;
use crate::revisions::COMPOSITION_UID_LABEL;
use crate::revisions::revision_name;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};
use orrery_crds::common::ConditionStatus;
use orrery_crds::conditions::{VALID, reasons};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::validate::validate;
use orrery_crds::{Composition, CompositionSpec};
use std::future::Future;
use std::sync::Arc;

/// Whether a change to RegistryEntry `entry` (a model entry when `is_model`) can change the
/// validity of `spec`: a node names it as its model or a tool of it, or (for a model entry)
/// some node has no model and so depends on which model entries exist.
pub fn uses_entry(spec: &CompositionSpec, entry: &str, is_model: bool) -> bool {
    let mcp = format!("mcp:{entry}.");
    let a2a = format!("a2a:{entry}.");
    spec.nodes.iter().any(|node| {
        node.model.as_deref() == Some(entry)
            || (is_model && node.model.is_none())
            || node
                .tools
                .iter()
                .any(|t| t.starts_with(&mcp) || t.starts_with(&a2a))
    })
}

/// The Compositions in `store` that a change to `entry` can affect (same namespace, see
/// [`uses_entry`]).
pub fn compositions_using(
    store: &Store<Composition>,
    entry: &RegistryEntry,
) -> Vec<ObjectRef<Composition>> {
    let namespace = entry.namespace();
    let name = entry.name_any();
    let is_model = entry.spec.model.is_some();
    store
        .state()
        .iter()
        .filter(|c| c.namespace() == namespace && uses_entry(&c.spec, &name, is_model))
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

fn namespace_of(composition: &Composition) -> Result<String> {
    composition
        .namespace()
        .ok_or_else(|| Error::MissingMetadata {
            kind: "Composition",
            name: composition.name_any(),
            field: "namespace",
        })
}

/// Creates the revision of the current generation unless it exists (an existing one with
/// other data is an error: revisions are immutable), prunes beyond the limit, and returns the
/// revision number.
async fn record_revision(composition: &Composition, api: &Api<ControllerRevision>) -> Result<i64> {
    let wanted = controller_revision(composition)?;
    let uid = composition.uid().unwrap_or_default();
    let selector = format!("{COMPOSITION_UID_LABEL}={uid}");
    let mut revisions = api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    let name = revision_name(&composition.name_any(), wanted.revision);
    match revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(&name))
    {
        Some(existing) if same_data(existing, &wanted) => {}
        Some(_) => {
            return Err(Error::Revision {
                name,
                problem: "it exists with other data; revisions are immutable, so delete it to \
                          have it recorded again from the current spec"
                    .into(),
            });
        }
        None => match api.create(&PostParams::default(), &wanted).await {
            Ok(created) => revisions.push(created),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let existing = api.get(&name).await?;
                if !same_data(&existing, &wanted) {
                    return Err(Error::Revision {
                        name,
                        problem: "it was created at the same time with other data".into(),
                    });
                }
                revisions.push(existing);
            }
            Err(e) => return Err(e.into()),
        },
    }
    for old in revisions_to_prune(&revisions, REVISION_HISTORY_LIMIT) {
        match api.delete(&old, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(wanted.revision)
}

/// Reconciles one Composition: validate against the namespace's registry, record the
/// revision, write the status if it changed (checked on the watched copy, then on the stored
/// one), publish an Event if `Valid` flipped. A newer generation than the one watched is
/// left to its own reconcile.
pub async fn reconcile(composition: Arc<Composition>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = namespace_of(&composition)?;
    let name = composition.name_any();
    let entries: Api<RegistryEntry> = Api::namespaced(ctx.client.clone(), &namespace);
    let entries = entries.list(&ListParams::default()).await?.items;
    let validation = validate(
        &composition.spec,
        &registry_view(&entries),
        &ctx.config.deployment_limits(),
    );
    let revisions: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    let revision = record_revision(&composition, &revisions).await?;
    let status = composition_status(&composition, &validation, Some(revision), Timestamp::now())?;
    if composition.status.as_ref() == Some(&status) {
        return Ok(Action::await_change());
    }
    // The watched copy can lag behind the status this controller just wrote (the revision it
    // created re-triggers it at once): decide on the stored object, so a repeat writes nothing
    // and announces nothing.
    let api: Api<Composition> = Api::namespaced(ctx.client.clone(), &namespace);
    let stored = api.get(&name).await?;
    if stored.metadata.generation != composition.metadata.generation {
        return Ok(Action::await_change());
    }
    let status = composition_status(&stored, &validation, Some(revision), Timestamp::now())?;
    if stored.status.as_ref() == Some(&status) {
        return Ok(Action::await_change());
    }
    apply_status(&api, &stored, &status).await?;
    let before = stored
        .status
        .as_ref()
        .and_then(|s| find(&s.conditions, VALID))
        .map(|c| c.status);
    if let Some(now) = find(&status.conditions, VALID).filter(|c| Some(c.status) != before) {
        let type_ = if now.status == ConditionStatus::True {
            EventType::Normal
        } else {
            EventType::Warning
        };
        let reason = if now.status == ConditionStatus::True {
            reasons::VALID
        } else {
            reasons::INVALID
        };
        ctx.event(composition.as_ref(), type_, reason, now.message.clone())
            .await;
    }
    Ok(Action::await_change())
}

/// The Composition controller over every namespace (or only `namespace`), until `shutdown` resolves: it watches
/// Compositions, the ControllerRevisions they own, and RegistryEntries (mapped to the
/// Compositions that use them).
pub fn controller(
    ctx: Arc<Context>,
    namespace: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()> {
    let client = ctx.client.clone();
    let controller = Controller::new(
        scoped::<Composition>(client.clone(), namespace),
        crate::controller::watch_config(&ctx.config),
    )
    .owns(
        scoped::<ControllerRevision>(client.clone(), namespace),
        crate::controller::watch_config(&ctx.config).labels(COMPOSITION_UID_LABEL),
    );
    let store = controller.store();
    let stream = controller
        .watches(
            scoped::<RegistryEntry>(client, namespace),
            crate::controller::watch_config(&ctx.config),
            move |entry| compositions_using(&store, &entry),
        )
        .graceful_shutdown_on(shutdown)
        .run(
            crate::controller::counted(reconcile),
            crate::controller::error_policy,
            ctx,
        );
    drain("Composition", stream)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    fn spec(yaml: &str) -> CompositionSpec {
        serde_yaml::from_str(yaml).expect("a composition spec")
    }

    #[test]
    fn an_entry_is_used_by_its_model_and_tool_references_only() {
        let named = spec(
            "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: gpt, instruction: do, \
             tools: ['mcp:demo-tools.search', 'a2a:writer.draft']}]}",
        );
        for (entry, is_model, used) in [
            ("gpt", true, true),
            ("demo-tools", false, true),
            ("writer", false, true),
            ("demo", false, false),
            ("scripted", true, false),
            ("search", false, false),
        ] {
            assert_eq!(uses_entry(&named, entry, is_model), used, "{entry}");
        }
        let defaulted =
            spec("{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, instruction: do}]}");
        assert!(
            uses_entry(&defaulted, "scripted", true),
            "a node without a model depends on every model entry"
        );
        assert!(!uses_entry(&defaulted, "demo-tools", false));
    }
}
