//! The composition validator: one function used by the operator, the `orrery` CLI and the
//! sidecar. It never calls a model and returns every problem at once, each at its field.
//!
//! PUBLIC API (fixed; other crates code against it):
//! - [`RegistryView`] / [`EntryView`]: what the validator needs to know about the registry.
//! - [`DeploymentLimits`]: what only the deployment decides (ceilings, allowed models, acting).
//! - [`validate`] → [`Validation`] (errors + warnings).
//! - [`crate::plan::plan`] builds the executable plan from a spec that validates.

mod analysis;
mod approval;
mod bounds;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod issues_tests;
mod kinds;
mod labels;
mod loops;
mod models;
mod parallel;
mod patterns;
mod report;
#[cfg(test)]
mod schema_bounds_tests;
mod screen;
mod structure;
mod supervisor;
#[cfg(test)]
pub(crate) mod tests;
mod tools;

pub(crate) use analysis::Analysis;
pub(crate) use models::resolve_model;
pub(crate) use tools::resolve_tool;

use crate::budget::BudgetLimits;
use crate::common::ValidationIssue;
use crate::composition::CompositionSpec;
use crate::registry::{Effect, EntryKind, ModelProvider, RegistryEntry};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The registry as the validator sees it: entries by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryView {
    /// Entries by their RegistryEntry name.
    pub entries: BTreeMap<String, EntryView>,
}

/// One registry entry, reduced to what validation needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum EntryView {
    /// An MCP server: the tool allowlist and the read-only subset.
    Mcp {
        /// Tools a composition may reference.
        tools: BTreeSet<String>,
        /// Tools that only read (the only ones usable without the acting path).
        read_only: BTreeSet<String>,
    },
    /// A remote A2A agent: its allowed skills and effect.
    A2a {
        /// Skills a composition may reference.
        skills: BTreeSet<String>,
        /// ReadOnly or Acting.
        effect: Effect,
    },
    /// A model endpoint.
    Model {
        /// Its provider.
        provider: ModelProvider,
    },
}

impl EntryView {
    /// The entry's kind.
    pub fn kind(&self) -> EntryKind {
        match self {
            EntryView::Mcp { .. } => EntryKind::Mcp,
            EntryView::A2a { .. } => EntryKind::A2a,
            EntryView::Model { .. } => EntryKind::Model,
        }
    }
}

impl RegistryView {
    /// Builds the view from RegistryEntry resources. Entries that set none or several of
    /// mcp/a2a/model are left out (the apiserver refuses them; `orrery validate` reports them).
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a RegistryEntry>) -> Self {
        let mut view = RegistryView::default();
        for entry in entries {
            let name = entry.metadata.name.clone().unwrap_or_default();
            let spec = &entry.spec;
            let ev = match (&spec.mcp, &spec.a2a, &spec.model) {
                (Some(m), None, None) => EntryView::Mcp {
                    tools: m.tools.iter().cloned().collect(),
                    read_only: m.read_only.iter().cloned().collect(),
                },
                (None, Some(a), None) => EntryView::A2a {
                    skills: a.skills.iter().cloned().collect(),
                    effect: a.effect,
                },
                (None, None, Some(m)) => EntryView::Model {
                    provider: m.provider,
                },
                _ => continue,
            };
            view.entries.insert(name, ev);
        }
        view
    }
}

/// What only the deployment decides (the operator's Helm values; flags of the CLI).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentLimits {
    /// Budget ceilings.
    pub ceilings: BudgetLimits,
    /// Model entries nodes may name. `None`: every model entry in the registry.
    pub allowed_models: Option<BTreeSet<String>>,
    /// Whether entries with `effect: Acting` may be used.
    pub acting_remotes: bool,
    /// The model entry a node without `model` uses. `None`: such a node is refused unless the
    /// registry has exactly one model entry.
    pub default_model: Option<String>,
}

/// The validator's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    /// Problems that refuse the composition.
    pub errors: Vec<ValidationIssue>,
    /// Findings that do not (e.g. `label_ends_run`).
    pub warnings: Vec<ValidationIssue>,
}

impl Validation {
    /// True when there is no error.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The RegistryEntries a composition names: every node's `model` and the entry of every
/// well-formed tool reference (`mcp:<entry>.<tool>`, `a2a:<entry>.<skill>`). A node without a
/// model names none (it takes the deployment's default).
pub fn named_entries(spec: &CompositionSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for node in &spec.nodes {
        out.extend(node.model.clone());
        out.extend(
            node.tools
                .iter()
                .filter_map(|t| tools::parse_tool_ref(t).map(|p| p.entry.to_owned())),
        );
    }
    out
}

/// Validates a composition against the registry and the deployment's limits. Never calls a
/// model; returns every problem at once, each at its field (`loc` in the CRD's camelCase,
/// starting at `spec`), plus warnings such as `label_ends_run`. Codes are listed in
/// [`crate::codes::ALL_CODES`].
pub fn validate(
    spec: &CompositionSpec,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> Validation {
    check(spec, registry, limits).0
}

/// Validates and returns the graph analysis too (the planner builds on it).
pub(crate) fn check<'a>(
    spec: &'a CompositionSpec,
    registry: &RegistryView,
    limits: &DeploymentLimits,
) -> (Validation, Analysis<'a>) {
    let analysis = Analysis::new(spec);
    let mut report = report::Report::default();
    structure::check(&analysis, &mut report);
    bounds::check(&analysis, &mut report);
    kinds::check(&analysis, &mut report);
    labels::check(&analysis, &mut report);
    parallel::check(&analysis, &mut report);
    loops::check(&analysis, &mut report);
    supervisor::check(&analysis, &mut report);
    tools::check(&analysis, registry, limits, &mut report);
    models::check(&analysis, registry, limits, &mut report);
    approval::check(&analysis, &mut report);
    screen::check(&analysis, &mut report);
    // Every rule module reports on its own: none is skipped because another found a problem.
    patterns::check(&analysis, &mut report);
    (report.finish(), analysis)
}
