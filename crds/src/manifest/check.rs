//! Checking a set of manifests offline: every Composition (and every StudioRun's inline
//! composition) against the RegistryEntries of its namespace found in the set, with the same
//! validator the operator runs, plus what can be seen wrong in entries and runs.

use super::codes;
use super::entries::entry_problems;
use super::{Finding, LoadedResource, ManifestSet, Resource, ResourceRef, Source, issue};
use crate::common::{PathSegment, Severity, ValidationIssue, loc_to_string};
use crate::loc;
use crate::validate::{DeploymentLimits, RegistryView, Validation, validate};
use crate::{CompositionSpec, RegistryEntry};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What was checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Files read.
    pub files: usize,
    /// Compositions read.
    pub compositions: usize,
    /// RegistryEntries read.
    pub registry_entries: usize,
    /// StudioRuns read.
    pub studio_runs: usize,
    /// Documents of other API groups, not checked.
    pub ignored: usize,
    /// Errors found.
    pub errors: usize,
    /// Warnings found.
    pub warnings: usize,
}

/// Every finding of a set of manifests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Findings, ordered by file and document (a document's own order kept).
    pub findings: Vec<Finding>,
    /// Counts.
    pub summary: Summary,
}

impl Report {
    /// True when no finding is an error.
    pub fn is_valid(&self) -> bool {
        self.summary.errors == 0
    }
}

/// Checks every resource of `set` (problems found while reading it included).
pub fn check(set: &ManifestSet, limits: &DeploymentLimits) -> Report {
    let mut findings: Vec<Finding> = set.problems.clone();
    let registries = registries_by_namespace(&set.resources);
    let empty = RegistryView::default();
    let mut seen: HashMap<&ResourceRef, &Source> = HashMap::new();
    let mut summary = Summary {
        files: set.files.len(),
        ignored: set.ignored.len(),
        ..Summary::default()
    };

    for loaded in &set.resources {
        let mut push = |severity: Severity, issue: ValidationIssue| {
            findings.push(Finding {
                source: loaded.source.clone(),
                resource: Some(loaded.reference.clone()),
                severity,
                issue,
            });
        };
        if !loaded.reference.name.ends_with('*') {
            if let Some(first) = seen.get(&loaded.reference) {
                push(
                    Severity::Error,
                    issue(
                        loc!["metadata", "name"],
                        codes::DUPLICATE_RESOURCE,
                        format!(
                            "{} is also defined in {first}; applying both keeps only the last",
                            loaded.reference
                        ),
                    ),
                );
            } else {
                seen.insert(&loaded.reference, &loaded.source);
            }
        }
        let registry = registries
            .get(loaded.reference.namespace.as_str())
            .unwrap_or(&empty);
        match &loaded.resource {
            Resource::Composition(c) => {
                summary.compositions += 1;
                add_validation(&mut push, validate(&c.spec, registry, limits), &[]);
            }
            Resource::RegistryEntry(e) => {
                summary.registry_entries += 1;
                for found in entry_problems(e, limits) {
                    push(Severity::Error, found);
                }
            }
            Resource::StudioRun(run) => {
                summary.studio_runs += 1;
                match (&run.spec.composition_ref, &run.spec.composition) {
                    (Some(reference), None) => {
                        if !has_composition(
                            &set.resources,
                            &loaded.reference.namespace,
                            &reference.name,
                        ) {
                            push(
                                Severity::Warning,
                                issue(
                                    loc!["spec", "compositionRef", "name"],
                                    codes::COMPOSITION_NOT_FOUND,
                                    format!(
                                        "Composition {}/{} is not among the files checked; it must exist in the cluster when the run is created",
                                        loaded.reference.namespace, reference.name
                                    ),
                                ),
                            );
                        }
                    }
                    (None, Some(inline)) => {
                        let validation = validate(inline, registry, limits);
                        add_validation(&mut push, validation, &[PathSegment::from("composition")]);
                    }
                    _ => push(
                        Severity::Error,
                        issue(
                            loc!["spec"],
                            codes::EXACTLY_ONE_OF,
                            "set exactly one of spec.compositionRef (a Composition by name) or spec.composition (inline)",
                        ),
                    ),
                }
            }
        }
    }
    drop_restated_schema_findings(&mut findings);
    findings.sort_by(|a, b| a.source.cmp(&b.source));
    summary.errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    summary.warnings = findings.len() - summary.errors;
    Report { findings, summary }
}

/// Drops a schema finding when another finding of the same document already points at the same
/// field (the validator's messages say more, e.g. `invalid_id` for a node id's pattern).
fn drop_restated_schema_findings(findings: &mut Vec<Finding>) {
    let others: std::collections::HashSet<(Source, crate::common::Loc)> = findings
        .iter()
        .filter(|f| f.issue.code != codes::SCHEMA_VIOLATION)
        .map(|f| (f.source.clone(), f.issue.loc.clone()))
        .collect();
    findings.retain(|f| {
        f.issue.code != codes::SCHEMA_VIOLATION
            || !others.contains(&(f.source.clone(), f.issue.loc.clone()))
    });
}

/// Adds a validator answer, moving locs under `spec.<under…>` (for an inline composition).
fn add_validation(
    push: &mut impl FnMut(Severity, ValidationIssue),
    validation: Validation,
    under: &[PathSegment],
) {
    let relocate = |mut found: ValidationIssue| {
        if !under.is_empty() {
            let rest = match found.loc.first() {
                Some(PathSegment::Key(k)) if k == "spec" => found.loc.split_off(1),
                _ => std::mem::take(&mut found.loc),
            };
            found.loc = std::iter::once(PathSegment::from("spec"))
                .chain(under.iter().cloned())
                .chain(rest)
                .collect();
            found.field = loc_to_string(&found.loc);
        }
        found
    };
    for found in validation.errors {
        push(Severity::Error, relocate(found));
    }
    for found in validation.warnings {
        push(Severity::Warning, relocate(found));
    }
}

/// The registry view of each namespace, from the entries in the set.
fn registries_by_namespace(resources: &[LoadedResource]) -> BTreeMap<&str, RegistryView> {
    let mut entries: BTreeMap<&str, Vec<&RegistryEntry>> = BTreeMap::new();
    for loaded in resources {
        if let Resource::RegistryEntry(e) = &loaded.resource {
            entries
                .entry(loaded.reference.namespace.as_str())
                .or_default()
                .push(e);
        }
    }
    entries
        .into_iter()
        .map(|(ns, list)| (ns, RegistryView::from_entries(list)))
        .collect()
}

fn has_composition(resources: &[LoadedResource], namespace: &str, name: &str) -> bool {
    resources.iter().any(|r| {
        matches!(r.resource, Resource::Composition(_))
            && r.reference.namespace == namespace
            && r.reference.name == name
    })
}

/// The spec of a Composition or a StudioRun's inline composition, for callers that want to
/// run further checks (the plan) on what validated.
pub fn composition_spec(resource: &Resource) -> Option<&CompositionSpec> {
    match resource {
        Resource::Composition(c) => Some(&c.spec),
        Resource::StudioRun(r) => r.spec.composition.as_ref(),
        Resource::RegistryEntry(_) => None,
    }
}
