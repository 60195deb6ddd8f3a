//! Everything in `examples/` validates, every pattern has its example, every example plans, and
//! the `scripted` model's script drives every model-calling node of every example (its tool
//! calls are tools the node has, its labels are labels the node may answer).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::manifest::{LoadedResource, Resource, check, composition_spec, load_paths};
use orrery_crds::plan::{Next, child_tool_name, plan};
use orrery_crds::registry::{ModelProvider, ModelScript};
use orrery_crds::validate::{DeploymentLimits, RegistryView};
use orrery_crds::{Pattern, RegistryEntry};
use std::path::PathBuf;

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn load() -> Vec<LoadedResource> {
    let set = load_paths(&[examples_dir()]);
    assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.resources
}

fn registry(resources: &[LoadedResource]) -> (RegistryView, ModelScript) {
    let entries: Vec<&RegistryEntry> = resources
        .iter()
        .filter_map(|r| match &r.resource {
            Resource::RegistryEntry(e) => Some(e.as_ref()),
            _ => None,
        })
        .collect();
    let script = entries
        .iter()
        .filter_map(|e| e.spec.model.as_ref())
        .find(|m| m.provider == ModelProvider::Scripted)
        .and_then(|m| m.script.clone())
        .expect("examples/registry has a Scripted model with a script");
    (RegistryView::from_entries(entries), script)
}

#[test]
fn every_example_validates_with_no_error() {
    let set = load_paths(&[examples_dir()]);
    let report = check(&set, &DeploymentLimits::default());
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == orrery_crds::common::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The one warning is by design: the seeds' critic loop ends the run on `approved`.
    let warnings: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f.resource.as_ref().unwrap().name,
                f.issue.code,
                f.issue.field
            )
        })
        .collect();
    assert_eq!(
        warnings,
        ["critic-loop label_ends_run spec.nodes[2].output.labels[0]"]
    );
}

#[test]
fn every_pattern_but_handoff_has_an_example_composition() {
    let resources = load();
    let patterns: Vec<Pattern> = resources
        .iter()
        .filter_map(|r| match &r.resource {
            Resource::Composition(c) => Some(c.spec.pattern),
            _ => None,
        })
        .collect();
    for pattern in Pattern::ALL.into_iter().filter(|p| *p != Pattern::Handoff) {
        assert!(
            patterns.contains(&pattern),
            "no example for {}",
            pattern.as_str()
        );
    }
    assert!(resources.iter().any(|r| r.reference.name == "human-review"));
}

#[test]
fn every_example_composition_plans() {
    let resources = load();
    let (view, _) = registry(&resources);
    for r in &resources {
        if let Some(spec) = composition_spec(&r.resource) {
            let planned = plan(spec, &view, &DeploymentLimits::default());
            assert!(planned.is_ok(), "{}: {:?}", r.reference, planned.err());
        }
    }
}

#[test]
fn the_scripted_model_drives_every_model_calling_node_of_every_example() {
    let resources = load();
    let (view, script) = registry(&resources);
    for r in &resources {
        let Some(spec) = composition_spec(&r.resource) else {
            continue;
        };
        let plan = plan(spec, &view, &DeploymentLimits::default()).unwrap();
        for node in &plan.nodes {
            let Some(model) = &node.model else { continue };
            assert_eq!(
                model, "scripted",
                "{}: node {} must run on the scripted model",
                r.reference, node.id
            );
            let turns = script.nodes.get(&node.id).unwrap_or_else(|| {
                panic!(
                    "{}: the script has no turns for node {}",
                    r.reference, node.id
                )
            });
            let mut tools: Vec<String> = node.tools.iter().map(|t| t.model_name.clone()).collect();
            tools.extend(
                node.children
                    .iter()
                    .map(|&c| child_tool_name(&plan.nodes[c].id)),
            );
            let labelled = matches!(node.next, Next::Route { .. }) || !node.labels.is_empty();
            for (k, turn) in turns.iter().enumerate() {
                for call in &turn.tool_calls {
                    assert!(
                        tools.contains(&call.name),
                        "{}: node {} turn {k} calls {} but has {tools:?}",
                        r.reference,
                        node.id,
                        call.name
                    );
                }
                if turn.tool_calls.is_empty() && labelled {
                    let label = turn.label.as_deref().unwrap_or_else(|| {
                        panic!(
                            "{}: node {} turn {k} answers without a label",
                            r.reference, node.id
                        )
                    });
                    assert!(
                        node.labels.iter().any(|l| l == label),
                        "{}: node {} turn {k} label {label}",
                        r.reference,
                        node.id
                    );
                }
            }
            assert!(
                turns.last().is_some_and(|t| t.tool_calls.is_empty()),
                "{}: node {}'s last turn must answer (it repeats)",
                r.reference,
                node.id
            );
        }
    }
}

#[test]
fn the_script_names_no_node_that_no_example_has() {
    let resources = load();
    let (_, script) = registry(&resources);
    let ids: Vec<&str> = resources
        .iter()
        .filter_map(|r| composition_spec(&r.resource))
        .flat_map(|s| s.nodes.iter().map(|n| n.id.as_str()))
        .collect();
    for id in script.nodes.keys() {
        assert!(
            ids.contains(&id.as_str()),
            "the script has turns for {id}, which no example has"
        );
    }
}
