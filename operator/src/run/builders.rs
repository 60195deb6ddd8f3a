//! The children of a StudioRun, all owned by it (deleting the run deletes them): the plan
//! Secret (the compiled plan, the input, the run token), the runner Pod (Pod Security
//! `restricted`), and the NetworkPolicy ([`super::network`]).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::sandbox::{self, SandboxedPod, TERMINATION_MESSAGE_PATH};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Pod, Secret, SecretVolumeSource, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use orrery_crds::budget::BudgetLimits;
use orrery_crds::plan::Plan;
pub use orrery_crds::plan_document::{
    EntryPins, PLAN_DOCUMENT_VERSION, PlanDocument, PlannedEntry, RunIdentity, plan_entry_names,
};
use orrery_crds::registry::RegistryEntry;
use orrery_crds::run::RanComposition;
use orrery_crds::{CompositionSpec, StudioRun};
use std::collections::{BTreeMap, BTreeSet};

/// Label on every child: the run's UID (a name may be longer than a label value may be).
pub const RUN_UID_LABEL: &str = "studio.orrery.dev/run-uid";
/// Annotation on every child: the run's name, for people.
pub const RUN_NAME_ANNOTATION: &str = "studio.orrery.dev/run";
/// `app.kubernetes.io/name` of runner pods.
pub const RUNNER_APP: &str = "orrery-runner";
/// The user and group the runner runs as (not root).
pub use crate::sandbox::RUNNER_UID;
/// Where the plan Secret is mounted (read-only).
pub const PLAN_DIR: &str = "/etc/orrery/run";
/// Key of the compiled plan in the plan Secret.
pub const PLAN_KEY: &str = "plan.json";
/// Key of the run's input in the plan Secret.
pub const INPUT_KEY: &str = orrery_crds::plan_document::INPUT_FILE;
/// Key of the run token in the plan Secret.
pub const TOKEN_KEY: &str = orrery_crds::plan_document::TOKEN_FILE;
/// The identity of a run read from the cluster.
pub fn identity(run: &StudioRun) -> Result<RunIdentity> {
    let missing = |field| Error::MissingMetadata {
        kind: "StudioRun",
        name: run.metadata.name.clone().unwrap_or_default(),
        field,
    };
    Ok(RunIdentity {
        name: run.metadata.name.clone().ok_or_else(|| missing("name"))?,
        namespace: run
            .metadata
            .namespace
            .clone()
            .ok_or_else(|| missing("namespace"))?,
        uid: run.metadata.uid.clone().ok_or_else(|| missing("uid"))?,
    })
}

/// The names of a run's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildNames {
    /// The runner Pod: `<run>-runner`.
    pub pod: String,
    /// The plan Secret: `<run>-plan`.
    pub secret: String,
    /// The NetworkPolicy: `<run>-egress`.
    pub network_policy: String,
}

/// The names of the children of run `run`.
pub fn child_names(run: &str) -> ChildNames {
    ChildNames {
        pod: crate::names::suffixed(run, "-runner"),
        secret: crate::names::suffixed(run, "-plan"),
        network_policy: crate::names::suffixed(run, "-egress"),
    }
}

/// The labels of a run's children (the NetworkPolicy selects the pod by the UID label).
pub fn child_labels(id: &RunIdentity) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RUN_UID_LABEL.to_owned(), id.uid.clone()),
        ("app.kubernetes.io/name".to_owned(), RUNNER_APP.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            crate::FIELD_MANAGER.to_owned(),
        ),
    ])
}

/// The owner reference every child carries: the run, as controller.
pub fn owner(run: &StudioRun) -> Result<OwnerReference> {
    run.controller_owner_ref(&())
        .ok_or_else(|| Error::MissingMetadata {
            kind: "StudioRun",
            name: run.metadata.name.clone().unwrap_or_default(),
            field: "uid",
        })
}

fn child_meta(run: &StudioRun, id: &RunIdentity, name: String) -> Result<ObjectMeta> {
    Ok(ObjectMeta {
        name: Some(name),
        namespace: Some(id.namespace.clone()),
        labels: Some(child_labels(id)),
        annotations: Some(BTreeMap::from([(
            RUN_NAME_ANNOTATION.to_owned(),
            id.name.clone(),
        )])),
        owner_references: Some(vec![owner(run)?]),
        ..ObjectMeta::default()
    })
}

/// The plan document for a run. `entries` may hold the whole namespace's; only those the plan
/// uses go in.
pub fn plan_document(
    run: &StudioRun,
    composition: RanComposition,
    spec: CompositionSpec,
    plan: Plan,
    entries: &[RegistryEntry],
    config: &Config,
) -> Result<PlanDocument> {
    let used = plan_entry_names(&plan);
    let mut entries: Vec<PlannedEntry> = entries
        .iter()
        .filter(|e| e.metadata.name.as_ref().is_some_and(|n| used.contains(n)))
        .map(PlannedEntry::from_entry)
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(PlanDocument {
        version: PLAN_DOCUMENT_VERSION,
        run: identity(run)?,
        composition,
        spec,
        plan,
        entries,
        limits: config.deployment_limits(),
        capture_content: run.spec.capture_content,
        sidecar_url: config.sidecar.url(),
        approval_timeout_seconds: config.approval_timeout_seconds,
        flush_seconds: Some(flush_seconds(config)),
    })
}

/// The plan Secret: `plan.json`, `input` and `token`, owned by the run, immutable.
pub fn plan_secret(run: &StudioRun, document: &PlanDocument, token: &str) -> Result<Secret> {
    let id = identity(run)?;
    let plan = serde_json::to_vec(document).map_err(|e| Error::json("plan document", e))?;
    Ok(Secret {
        metadata: child_meta(run, &id, child_names(&id.name).secret)?,
        type_: Some("Opaque".to_owned()),
        immutable: Some(true),
        data: Some(BTreeMap::from([
            (PLAN_KEY.to_owned(), ByteString(plan)),
            (
                INPUT_KEY.to_owned(),
                ByteString(run.spec.input.clone().into_bytes()),
            ),
            (TOKEN_KEY.to_owned(), ByteString(token.as_bytes().to_vec())),
        ])),
        string_data: None,
    })
}

/// `activeDeadlineSeconds` of a run's pod: the run's deadline plus the configured margin, a
/// backstop that fires only when the runner's own deadline did not.
pub fn active_deadline_seconds(budgets: &BudgetLimits, config: &Config) -> i64 {
    let total = budgets
        .timeout_seconds
        .saturating_add(config.runner.deadline_margin_seconds);
    i64::try_from(total).unwrap_or(i64::MAX)
}

/// What a runner keeps of its pod's deadline margin after its last possible moment of work:
/// time to exit and for the kubelet to see it before `activeDeadlineSeconds` fires.
pub const FLUSH_SLACK_SECONDS: u64 = 15;

/// The least time a runner gives the sidecar after its run ended, whatever the margin.
pub const MIN_FLUSH_SECONDS: u64 = 5;

/// Seconds a runner, once its run has ended, keeps trying to hand the sidecar every event and
/// settlement (`flushSeconds` of the plan document): the pod's deadline margin less
/// [`FLUSH_SLACK_SECONDS`], at least [`MIN_FLUSH_SECONDS`]. A run ends by its own deadline at
/// the latest, so the wait always fits before the kubelet's backstop; with the default margin
/// (120 s) a sidecar may be unreachable for 105 s without losing a run's trace.
pub fn flush_seconds(config: &Config) -> u64 {
    config
        .runner
        .deadline_margin_seconds
        .saturating_sub(FLUSH_SLACK_SECONDS)
        .max(MIN_FLUSH_SECONDS)
}

/// The Secret keys the entries reference, by Secret: what the pod mounts under
/// [`sandbox::SECRETS_DIR`].
fn entry_secrets(document: &PlanDocument) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in &document.entries {
        for (_, reference) in crate::endpoints::secret_refs(&entry.spec) {
            out.entry(reference.name.clone())
                .or_default()
                .insert(reference.key.clone());
        }
    }
    out
}

/// The runner container's arguments: the pod mode of `orrery run`. Remote tools are always the
/// real clients in a cluster (`auto` would answer them with dry-run text when every model is
/// Scripted, which is for local dry runs); the termination log is named, not defaulted, so a
/// kubelet stand-in that maps the paths it sees in arguments finds it.
pub fn runner_args() -> Vec<String> {
    vec![
        "run".to_owned(),
        "--plan".to_owned(),
        format!("{PLAN_DIR}/{PLAN_KEY}"),
        "--tools".to_owned(),
        "real".to_owned(),
        "--termination-log".to_owned(),
        TERMINATION_MESSAGE_PATH.to_owned(),
    ]
}

/// The runner Pod. Pod Security `restricted` whatever the config says: not root, read-only
/// root filesystem, every capability dropped, no privilege escalation, seccomp
/// RuntimeDefault, no service-account token, no service links, resources, a deadline backstop,
/// the plan Secret and the entries' Secrets mounted read-only, `/tmp` an emptyDir, the summary
/// in the termination message (`File`). Never restarted: a run runs once.
pub fn runner_pod(run: &StudioRun, document: &PlanDocument, config: &Config) -> Result<Pod> {
    let id = identity(run)?;
    let names = child_names(&id.name);
    let plan = Volume {
        name: "plan".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(names.secret.clone()),
            default_mode: Some(0o440),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    };
    Ok(sandbox::sandboxed_pod(
        SandboxedPod {
            metadata: child_meta(run, &id, names.pod)?,
            args: runner_args(),
            input: plan,
            input_dir: PLAN_DIR,
            secrets: entry_secrets(document),
            active_deadline_seconds: active_deadline_seconds(&document.plan.budgets, config),
            // The W3C trace context of the run's trace (its id the run's UID, the sidecar
            // exports it): the runner's log lines name it.
            env: vec![(
                orrery_crds::logging::TRACEPARENT_ENV.to_owned(),
                crate::otel::traceparent(&id.uid),
            )],
        },
        config,
    ))
}

#[cfg(test)]
#[path = "builders_tests.rs"]
pub(crate) mod tests;
