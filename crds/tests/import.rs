//! Import of the seeds' JSON format (rules 1.1–1.13, 1.62, 1.63) into a Composition manifest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::import::{
    ImportError, ImportOptions, import_spec, import_spec_json, to_manifest_yaml,
};
use orrery_crds::{Composition, NodeKind, Pattern};
use serde_json::{Value, json};

const RELEASE_NOTES: &str = include_str!("fixtures/release-notes.spec.json");

fn release_notes() -> Value {
    serde_json::from_str(RELEASE_NOTES).unwrap()
}

/// Imports `spec` and returns the problems as (code, path) pairs.
fn problems(spec: &Value) -> Vec<(String, String)> {
    match import_spec(spec, &ImportOptions::default()) {
        Ok(_) => Vec::new(),
        Err(found) => found.into_iter().map(|p| (p.code, p.field)).collect(),
    }
}

#[test]
fn the_seeds_release_notes_spec_imports_as_a_critic_loop_composition() {
    let c = import_spec_json(RELEASE_NOTES, &ImportOptions::default()).unwrap();
    assert_eq!(c.metadata.name.as_deref(), Some("release-notes"));
    assert_eq!(c.spec.pattern, Pattern::CriticLoop);
    assert_eq!(c.spec.budgets.max_tokens, Some(120_000));
    assert_eq!(c.spec.budgets.timeout_seconds, Some(240));
    assert_eq!(c.spec.budgets.max_delegations, None);
    let ids: Vec<&str> = c.spec.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["research", "writer", "critic"]);
    assert!(c.spec.nodes.iter().all(|n| n.kind == NodeKind::LlmAgent));
    assert_eq!(c.spec.nodes[1].tools, ["a2a:demo-writer.draft"]);
    assert_eq!(
        c.spec.nodes[2].output.as_ref().unwrap().labels,
        ["approved", "rejected"]
    );
    let back = &c.spec.edges[2];
    assert_eq!((back.from.as_str(), back.to.as_str()), ("critic", "writer"));
    assert_eq!(
        (back.when.as_deref(), back.max_iterations),
        (Some("rejected"), Some(3))
    );
}

#[test]
fn the_manifest_reads_back_as_the_same_composition() {
    let c = import_spec_json(RELEASE_NOTES, &ImportOptions::default()).unwrap();
    let yaml = to_manifest_yaml(&c).unwrap();
    assert!(
        yaml.starts_with("apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("pattern: CriticLoop") && yaml.contains("maxIterations: 3"),
        "{yaml}"
    );
    assert!(
        !yaml.contains("status"),
        "no status in an imported manifest: {yaml}"
    );
    let back: Composition = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(back.spec, c.spec);
}

#[test]
fn a_name_and_namespace_can_be_given() {
    let options = ImportOptions {
        name: Some("notes-v2".into()),
        namespace: Some("team-a".into()),
    };
    let c = import_spec(&release_notes(), &options).unwrap();
    assert_eq!(c.metadata.name.as_deref(), Some("notes-v2"));
    assert_eq!(c.metadata.namespace.as_deref(), Some("team-a"));
}

#[test]
fn every_seed_pattern_and_node_kind_converts() {
    let patterns = [
        ("pipeline", Pattern::Pipeline),
        ("router", Pattern::Router),
        ("critic_loop", Pattern::CriticLoop),
        ("fan_out_fan_in", Pattern::FanOutFanIn),
        ("supervisor", Pattern::Supervisor),
        ("debate", Pattern::Debate),
        ("map_reduce", Pattern::MapReduce),
        ("plan_and_execute", Pattern::PlanAndExecute),
        ("handoff", Pattern::Handoff),
    ];
    for (text, want) in patterns {
        let mut spec = release_notes();
        spec["pattern"] = json!(text);
        assert_eq!(
            import_spec(&spec, &ImportOptions::default())
                .unwrap()
                .spec
                .pattern,
            want
        );
    }
    let kinds = [
        ("llm_agent", NodeKind::LlmAgent),
        ("remote_a2a", NodeKind::RemoteA2a),
        ("router", NodeKind::Router),
        ("parallel", NodeKind::Parallel),
        ("join", NodeKind::Join),
        ("supervisor", NodeKind::Supervisor),
        ("human_approval", NodeKind::HumanApproval),
    ];
    for (text, want) in kinds {
        let mut spec = release_notes();
        spec["nodes"][0]["kind"] = json!(text);
        assert_eq!(
            import_spec(&spec, &ImportOptions::default())
                .unwrap()
                .spec
                .nodes[0]
                .kind,
            want
        );
    }
}

#[test]
fn every_node_and_edge_field_converts() {
    let spec = json!({
        "spec_version": 1, "name": "all-fields", "pattern": "supervisor",
        "budgets": {"max_tokens": 10, "max_tool_calls": 1, "max_delegations": 2, "max_remote_calls": 3, "timeout_s": 4},
        "nodes": [
            {"id": "boss", "kind": "supervisor", "model": "scripted", "instruction": "i", "description": "d", "children": ["helper"]},
            {"id": "helper", "kind": "llm_agent", "tools": ["mcp:demo-tools.get_article"]},
            {"id": "gate", "kind": "human_approval", "prompt": "ok?"}
        ],
        "edges": [{"from": "boss", "to": "gate", "screen": true, "when": null}]
    });
    let c = import_spec(&spec, &ImportOptions::default()).unwrap();
    let b = &c.spec.budgets;
    assert_eq!(
        (
            b.max_tokens,
            b.max_tool_calls,
            b.max_delegations,
            b.max_remote_calls,
            b.timeout_seconds
        ),
        (Some(10), Some(1), Some(2), Some(3), Some(4))
    );
    let boss = &c.spec.nodes[0];
    assert_eq!(
        (
            boss.model.as_deref(),
            boss.instruction.as_deref(),
            boss.description.as_deref()
        ),
        (Some("scripted"), Some("i"), Some("d"))
    );
    assert_eq!(boss.children, ["helper"]);
    assert_eq!(c.spec.nodes[2].prompt.as_deref(), Some("ok?"));
    assert!(c.spec.edges[0].screen && c.spec.edges[0].when.is_none());
}

/// Table: a change to the release-notes spec → the problems it must produce (code, JSON path).
#[test]
fn what_cannot_be_converted_is_refused_at_its_json_path() {
    type Patch = fn(&mut Value);
    type Case = (&'static str, Patch, Vec<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        (
            "newer spec_version",
            |s| s["spec_version"] = json!(2),
            vec![("unsupported_spec_version", "spec_version")],
        ),
        (
            "missing spec_version",
            |s| {
                s.as_object_mut().unwrap().remove("spec_version");
            },
            vec![("missing_spec_version", "spec_version")],
        ),
        (
            "spec_version 0",
            |s| s["spec_version"] = json!(0),
            vec![("invalid_value", "spec_version")],
        ),
        (
            "unknown top-level key",
            |s| s["owner"] = json!("x"),
            vec![("unknown_key", "owner")],
        ),
        (
            "unknown node key",
            |s| s["nodes"][1]["temperature"] = json!(0.2),
            vec![("unknown_key", "nodes[1].temperature")],
        ),
        (
            "unknown budget key",
            |s| s["budgets"]["max_cost"] = json!(1),
            vec![("unknown_key", "budgets.max_cost")],
        ),
        (
            "unknown edge key",
            |s| s["edges"][0]["label"] = json!("x"),
            vec![("unknown_key", "edges[0].label")],
        ),
        (
            "unknown output key",
            |s| s["nodes"][2]["output"]["schema"] = json!({}),
            vec![("unknown_key", "nodes[2].output.schema")],
        ),
        (
            "catalog tool",
            |s| s["nodes"][0]["tools"][1] = json!("catalog:kafka_topics"),
            vec![("catalog_tool", "nodes[0].tools[1]")],
        ),
        (
            "id with capitals",
            |s| s["nodes"][0]["id"] = json!("Research"),
            vec![("invalid_id", "nodes[0].id")],
        ),
        (
            "label with a space",
            |s| s["nodes"][2]["output"]["labels"][0] = json!("looks good"),
            vec![("invalid_id", "nodes[2].output.labels[0]")],
        ),
        (
            "unknown kind",
            |s| s["nodes"][0]["kind"] = json!("tool_node"),
            vec![("invalid_value", "nodes[0].kind")],
        ),
        (
            "unknown pattern",
            |s| s["pattern"] = json!("swarm"),
            vec![("invalid_value", "pattern")],
        ),
        (
            "negative budget",
            |s| s["budgets"]["max_tool_calls"] = json!(-1),
            vec![("invalid_value", "budgets.max_tool_calls")],
        ),
        (
            "edge without to",
            |s| {
                s["edges"][1].as_object_mut().unwrap().remove("to");
            },
            vec![("missing_key", "edges[1].to")],
        ),
        (
            "screen not a bool",
            |s| s["edges"][0]["screen"] = json!("yes"),
            vec![("invalid_type", "edges[0].screen")],
        ),
        (
            "name not a k8s name",
            |s| s["name"] = json!("Release Notes"),
            vec![("invalid_name", "name")],
        ),
        (
            "no name",
            |s| {
                s.as_object_mut().unwrap().remove("name");
            },
            vec![("missing_key", "name")],
        ),
        (
            "not an object",
            |s| *s = json!([1]),
            vec![("invalid_type", "$")],
        ),
        (
            "the same edge twice (1.35, 12.67)",
            |s| {
                let first = s["edges"][0].clone();
                s["edges"].as_array_mut().unwrap().push(first);
            },
            vec![("duplicate_edge", "edges[3]")],
        ),
        (
            "the same ends with another when is two edges",
            |s| {
                let mut other = s["edges"][0].clone();
                other["when"] = json!("other");
                s["edges"].as_array_mut().unwrap().push(other);
            },
            vec![],
        ),
        (
            "two problems at once",
            |s| {
                s["nodes"][0]["id"] = json!("a b");
                s["edges"][2]["max_iterations"] = json!("3");
            },
            vec![
                ("invalid_id", "nodes[0].id"),
                ("invalid_value", "edges[2].max_iterations"),
            ],
        ),
    ];
    for (name, patch, want) in cases {
        let mut spec = release_notes();
        patch(&mut spec);
        let want: Vec<(String, String)> = want
            .into_iter()
            .map(|(c, p)| (c.to_owned(), p.to_owned()))
            .collect();
        assert_eq!(problems(&spec), want, "{name}");
    }
}

#[test]
fn json_that_does_not_parse_is_not_json() {
    let err = import_spec_json("{\"spec_version\": 1,", &ImportOptions::default()).unwrap_err();
    assert!(matches!(err, ImportError::NotJson(_)), "{err}");
}

#[test]
fn a_key_twice_in_one_object_is_refused_with_the_key_and_its_line() {
    // (what, the text changed, the key, its line)
    let cases = [
        (
            "at the top",
            RELEASE_NOTES.replace(
                "\"pattern\": \"critic_loop\",",
                "\"pattern\": \"pipeline\",\n  \"pattern\": \"critic_loop\",",
            ),
            "pattern",
            5,
        ),
        (
            "in the budgets",
            RELEASE_NOTES.replace(
                "\"max_tokens\": 120000,",
                "\"max_tokens\": 120000, \"max_tokens\": 5,",
            ),
            "max_tokens",
            5,
        ),
        (
            "in a node",
            RELEASE_NOTES.replace(
                "{ \"id\": \"writer\",",
                "{ \"id\": \"writer\", \"id\": \"editor\",",
            ),
            "id",
            10,
        ),
    ];
    for (what, text, key, line) in cases {
        assert_ne!(text, RELEASE_NOTES, "{what}: the fixture changed");
        let err = import_spec_json(&text, &ImportOptions::default()).unwrap_err();
        assert!(matches!(err, ImportError::NotJson(_)), "{what}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("duplicate key \"{key}\"")),
            "{what}: {message}"
        );
        assert!(
            message.contains(&format!("line {line}")),
            "{what}: {message}"
        );
    }
}

#[test]
fn an_unconvertible_spec_lists_every_problem_in_its_message() {
    let text = RELEASE_NOTES
        .replace("\"spec_version\": 1", "\"spec_version\": 3")
        .replace("\"research\"", "\"Research\"");
    let message = import_spec_json(&text, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("spec_version: spec_version 3 is newer"),
        "{message}"
    );
    assert!(message.contains("nodes[0].id"), "{message}");
}

#[test]
fn empty_budgets_and_edges_are_left_out_of_the_manifest() {
    let one_node = r#"{"spec_version": 1, "name": "solo", "pattern": "pipeline",
        "nodes": [{"id": "only", "kind": "llm_agent"}]}"#;
    let c = import_spec_json(one_node, &ImportOptions::default()).unwrap();
    let yaml = to_manifest_yaml(&c).unwrap();
    assert!(
        !yaml.contains("budgets") && !yaml.contains("edges"),
        "{yaml}"
    );
    let back: Composition = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(back.spec, c.spec);
}

#[test]
fn the_manifest_reads_back_the_same_as_kubectl_reads_yaml_whatever_the_words_and_numbers() {
    use orrery_crds::manifest::{Format, ManifestSet, Resource};
    // Words YAML 1.1 (kubectl's go-yaml, and `orrery validate`) reads as booleans, numbers or
    // nulls, though YAML 1.2 (what writes the manifest) reads them as strings.
    let words = [
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "Yes",
        "ON",
        "true",
        "null",
        "~",
        "1_000",
        "0b101",
        "0o17",
        "017",
        "0x1F",
        "1e3",
        ".inf",
        "-.Inf",
        ".nan",
        "+1",
        "2001-12-14",
        "12:30",
        "1:20",
        "=",
        "<<",
    ];
    for word in words {
        let spec = json!({
            "spec_version": 1, "name": "words", "pattern": "pipeline",
            "nodes": [{"id": "a", "kind": "llm_agent", "model": word, "instruction": word,
                       "description": word}]
        });
        let c = import_spec(&spec, &ImportOptions::default()).unwrap();
        let yaml = to_manifest_yaml(&c).unwrap();
        let mut set = ManifestSet::default();
        set.add_text(std::path::Path::new("words.yaml"), &yaml, Format::Yaml)
            .unwrap();
        assert!(
            set.problems.is_empty(),
            "{word}: {:?}\n{yaml}",
            set.problems
        );
        let Some(Resource::Composition(back)) = set.resources.first().map(|r| &r.resource) else {
            panic!("{word}: no composition read back from\n{yaml}");
        };
        assert_eq!(back.spec, c.spec, "{word}:\n{yaml}");
    }
}
