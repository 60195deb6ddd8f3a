//! Local mode: run a composition from files, with no cluster.
//!
//! [`prepare`] loads the manifests (files and folders of YAML/JSON), checks them with the shared
//! validator (the same one `orrery validate` and the operator run), picks the Composition and
//! plans it against the RegistryEntries of its namespace ([`prepare_set`] does the same for
//! manifests already loaded, e.g. the demo's embedded example). [`build`] then builds the
//! models (a [`ModelFactory`]: [`GuardedModels`] gives each model entry its own client through
//! the network guard) and the tools (a [`ToolFactory`]) the plan uses, and [`run`] executes it.
//! `orrery run` and `orrery demo` share these steps.
//!
//! Remote tools (MCP, A2A) come from a [`ToolFactory`]: [`DryRunTools`] answers every call with
//! a deterministic description and calls nothing (dry runs);
//! [`crate::remote::RemoteToolFactory`] builds the real MCP and A2A clients.

use crate::approval::DecisionSource;
use crate::engine::{ModelBinding, RunOptions, RunResult, RunSetup};
use crate::events::EventSink;
use crate::tools::{DryRunTool, Tool};
use orrery_crds::manifest::{LoadError, ManifestSet, Report, Resource, check, load_paths};
use orrery_crds::plan::{Plan, PlannedTool, plan};
use orrery_crds::registry::{ModelProvider as ProviderKind, RegistryEntry};
use orrery_crds::validate::{DeploymentLimits, RegistryView, Validation};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

mod models;

pub use models::{GuardedModels, ModelFactory};

/// A composition ready to run: its plan and the registry entries of its namespace.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The Composition's name.
    pub name: String,
    /// Its pattern.
    pub pattern: String,
    /// The plan.
    pub plan: Plan,
    /// RegistryEntries of the composition's namespace, by name.
    pub entries: BTreeMap<String, RegistryEntry>,
    /// The validator's warnings (e.g. `label_ends_run`).
    pub warnings: Vec<orrery_crds::common::ValidationIssue>,
}

/// Why a composition could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// Files or folders could not be read.
    #[error("{} file(s) could not be read", .0.len())]
    Unreadable(Vec<LoadError>),
    /// The manifests do not validate. Print them like `orrery validate` does.
    #[error("the manifests do not validate ({} error(s))", .report.summary.errors)]
    Invalid {
        /// What was read.
        set: Box<ManifestSet>,
        /// What the validator found.
        report: Box<Report>,
    },
    /// No Composition among the files.
    #[error("no Composition found in the files given (pass the composition with -f)")]
    NoComposition,
    /// Several Compositions and none chosen.
    #[error("several Compositions found ({}); choose one with --composition NAME", .0.join(", "))]
    SeveralCompositions(Vec<String>),
    /// The chosen Composition is not among the files.
    #[error("Composition '{0}' is not among the files given")]
    CompositionNotFound(String),
    /// The planner refused what the validator accepted.
    #[error("the composition could not be planned: {}", .0.errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Plan(Validation),
}

/// Loads, validates and plans. `composition` picks one Composition by name when the files hold
/// several.
pub fn prepare(
    paths: &[PathBuf],
    composition: Option<&str>,
    limits: &DeploymentLimits,
) -> Result<Prepared, PrepareError> {
    prepare_set(load_paths(paths), composition, limits)
}

/// [`prepare`] for manifests already loaded (files, or texts added with
/// [`ManifestSet::add_text`]).
pub fn prepare_set(
    set: ManifestSet,
    composition: Option<&str>,
    limits: &DeploymentLimits,
) -> Result<Prepared, PrepareError> {
    if !set.unreadable.is_empty() {
        return Err(PrepareError::Unreadable(set.unreadable));
    }
    let report = check(&set, limits);
    if !report.is_valid() {
        return Err(PrepareError::Invalid {
            set: Box::new(set),
            report: Box::new(report),
        });
    }
    let compositions: Vec<_> = set
        .resources
        .iter()
        .filter_map(|r| match &r.resource {
            Resource::Composition(c) => Some((r, c)),
            _ => None,
        })
        .collect();
    let (loaded, chosen) = match (composition, compositions.as_slice()) {
        (_, []) => return Err(PrepareError::NoComposition),
        (Some(name), list) => list
            .iter()
            .find(|(r, _)| r.reference.name == name)
            .copied()
            .ok_or_else(|| PrepareError::CompositionNotFound(name.to_owned()))?,
        (None, [one]) => *one,
        (None, list) => {
            return Err(PrepareError::SeveralCompositions(
                list.iter().map(|(r, _)| r.reference.name.clone()).collect(),
            ));
        }
    };
    let namespace = &loaded.reference.namespace;
    let entries: BTreeMap<String, RegistryEntry> = set
        .resources
        .iter()
        .filter(|r| &r.reference.namespace == namespace)
        .filter_map(|r| match &r.resource {
            Resource::RegistryEntry(e) => Some((r.reference.name.clone(), (**e).clone())),
            _ => None,
        })
        .collect();
    let view = RegistryView::from_entries(entries.values());
    let planned = plan(&chosen.spec, &view, limits).map_err(PrepareError::Plan)?;
    let warnings = orrery_crds::validate::validate(&chosen.spec, &view, limits).warnings;
    Ok(Prepared {
        name: loaded.reference.name.clone(),
        pattern: chosen.spec.pattern.as_str().to_owned(),
        plan: planned,
        entries,
        warnings,
    })
}

/// Why a tool could not be built.
#[derive(Debug, thiserror::Error)]
#[error("tool {reference}: {message}")]
pub struct ToolBuildError {
    /// The tool reference.
    pub reference: String,
    /// What is wrong.
    pub message: String,
}

/// Builds the tool for a planned tool reference (async: a remote client may connect, list and
/// pin its tools first).
#[async_trait::async_trait]
pub trait ToolFactory: Send + Sync {
    /// The tool for `planned`, whose registry entry is `entry`.
    async fn build(
        &self,
        planned: &PlannedTool,
        entry: &RegistryEntry,
    ) -> Result<Arc<dyn Tool>, ToolBuildError>;

    /// Whether the tools built are dry-run stand-ins.
    fn dry_run(&self) -> bool {
        false
    }
}

/// Dry runs: every remote tool answers "[dry run] <tool> would be called with <args>" and
/// nothing is called.
#[derive(Clone, Copy, Debug, Default)]
pub struct DryRunTools;

#[async_trait::async_trait]
impl ToolFactory for DryRunTools {
    async fn build(
        &self,
        planned: &PlannedTool,
        _entry: &RegistryEntry,
    ) -> Result<Arc<dyn Tool>, ToolBuildError> {
        Ok(Arc::new(DryRunTool::new(planned.clone())))
    }

    fn dry_run(&self) -> bool {
        true
    }
}

/// Why a run could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A node names a model entry missing from the registry.
    #[error("model entry '{0}' is not among the RegistryEntries given")]
    MissingModel(String),
    /// A model entry is not a model.
    #[error("registry entry '{0}' is not a model entry")]
    NotAModel(String),
    /// A provider could not be built (a missing API key…).
    #[error("model entry '{entry}': {message}")]
    Provider {
        /// The entry.
        entry: String,
        /// What is wrong.
        message: String,
    },
    /// A tool's registry entry is missing.
    #[error("registry entry '{entry}' of tool {reference} is not among the RegistryEntries given")]
    MissingEntry {
        /// The entry.
        entry: String,
        /// The tool reference.
        reference: String,
    },
    /// A tool could not be built.
    #[error(transparent)]
    Tool(#[from] ToolBuildError),
}

/// The models and tools of a prepared composition, built.
pub struct Built {
    /// Models by entry name.
    pub models: BTreeMap<String, ModelBinding>,
    /// Tools by reference.
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Whether the tools are dry-run stand-ins.
    pub dry_run_tools: bool,
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("models", &self.models)
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("dry_run_tools", &self.dry_run_tools)
            .finish()
    }
}

/// Whether every model node of the plan runs on a Scripted model (a run with no real model).
pub fn all_models_scripted(prepared: &Prepared) -> bool {
    prepared
        .plan
        .nodes
        .iter()
        .filter_map(|n| n.model.as_ref())
        .all(|m| {
            prepared
                .entries
                .get(m)
                .and_then(|e| e.spec.model.as_ref())
                .is_some_and(|model| model.provider == ProviderKind::Scripted)
        })
}

/// Builds every model and tool the plan uses: models with `providers` (local runs use
/// [`GuardedModels`], so model traffic goes through the network guard), remote tools with
/// `tools`.
pub async fn build(
    prepared: &Prepared,
    providers: &dyn ModelFactory,
    tools: &dyn ToolFactory,
) -> Result<Built, BuildError> {
    let mut models = BTreeMap::new();
    for name in prepared
        .plan
        .nodes
        .iter()
        .filter(|n| n.kind.calls_model())
        .filter_map(|n| n.model.as_ref())
    {
        if models.contains_key(name) {
            continue;
        }
        let entry = prepared
            .entries
            .get(name)
            .ok_or_else(|| BuildError::MissingModel(name.clone()))?;
        let model = entry
            .spec
            .model
            .as_ref()
            .ok_or_else(|| BuildError::NotAModel(name.clone()))?;
        let provider = providers
            .build(name, model)
            .map_err(|e| BuildError::Provider {
                entry: name.clone(),
                message: e.to_string(),
            })?;
        models.insert(
            name.clone(),
            ModelBinding {
                provider,
                model: model.model.clone(),
            },
        );
    }
    let mut built_tools: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
    for planned in prepared.plan.nodes.iter().flat_map(|n| n.tools.iter()) {
        if built_tools.contains_key(&planned.reference) {
            continue;
        }
        let entry =
            prepared
                .entries
                .get(&planned.entry)
                .ok_or_else(|| BuildError::MissingEntry {
                    entry: planned.entry.clone(),
                    reference: planned.reference.clone(),
                })?;
        built_tools.insert(
            planned.reference.clone(),
            tools.build(planned, entry).await?,
        );
    }
    let dry_run_tools = tools.dry_run() && !built_tools.is_empty();
    Ok(Built {
        models,
        tools: built_tools,
        dry_run_tools,
    })
}

/// Runs a prepared, built composition on `input`.
pub async fn run(
    prepared: &Prepared,
    built: Built,
    input: String,
    decisions: Arc<dyn DecisionSource>,
    sinks: Vec<Arc<dyn EventSink>>,
    mut options: RunOptions,
    cancel: CancellationToken,
) -> RunResult {
    options.dry_run_tools = built.dry_run_tools;
    let setup = RunSetup {
        plan: prepared.plan.clone(),
        composition: prepared.name.clone(),
        pattern: prepared.pattern.clone(),
        models: built.models,
        tools: built.tools,
        decisions,
        sinks,
        options,
    };
    crate::engine::run(setup, input, cancel).await
}

/// A fresh run id.
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM: cancel a run with it, or stop the demo
/// fleet. Never resolves when no signal handler can be installed.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    r = tokio::signal::ctrl_c() => if r.is_err() { term.recv().await; },
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
