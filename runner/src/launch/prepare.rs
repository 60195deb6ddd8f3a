//! Loading, validating and planning a composition: the same validator `orrery validate` and the
//! operator run, then the planner, against the RegistryEntries of the composition's namespace.

use orrery_crds::manifest::{LoadError, ManifestSet, Report, Resource, check, load_paths};
use orrery_crds::plan::{Plan, plan};
use orrery_crds::registry::{ModelProvider as ProviderKind, RegistryEntry};
use orrery_crds::validate::{DeploymentLimits, RegistryView, Validation};
use std::collections::BTreeMap;
use std::path::PathBuf;

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
