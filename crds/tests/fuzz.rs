//! Fuzzing of the parsers that take outside input in this crate (issue 27 §3): manifests in
//! YAML and JSON (with the duplicate-key parser), the seeds' JSON import, and the validator
//! behind them. Property-based (proptest, on the stable toolchain) with structured generators:
//! beyond "no panic", each property checks bounded time for bounded input and the round trips
//! that exist (an imported spec written as a manifest reads back the same, as kubectl reads
//! YAML; JSON read by the duplicate-key parser equals serde_json's reading).
//!
//! `cargo test -p orrery-crds --test fuzz` runs 256 cases a property (CI); more with
//! `ORRERY_FUZZ_CASES=200000` (docs/reliability.md, "Fuzzing"). Every input that ever failed is
//! kept: proptest's own regressions file (`tests/fuzz.proptest-regressions`, replayed first),
//! and the corpus under `tests/fuzz-corpus/` (replayed by the `corpus` tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::import::{ImportOptions, import_spec, to_manifest_yaml};
use orrery_crds::manifest::{Format, ManifestSet, Resource};
use orrery_crds::validate::{DeploymentLimits, RegistryView, validate};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Cases per property: `ORRERY_FUZZ_CASES`, else 256.
fn cases() -> u32 {
    std::env::var("ORRERY_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    }
}

/// The most one small input may take (a debug build on a busy 2-core machine).
const BOUND: Duration = Duration::from_secs(5);

/// Reads `text` as a manifest file in `format`, validates every Composition it holds, and
/// checks it took bounded time. Never panics on any text: that is the property.
fn read_manifest(text: &str, format: Format) -> ManifestSet {
    let started = Instant::now();
    let mut set = ManifestSet::default();
    let name = match format {
        Format::Json => "fuzz.json",
        Format::Yaml => "fuzz.yaml",
    };
    let _ = set.add_text(Path::new(name), text, format);
    for loaded in &set.resources {
        if let Resource::Composition(c) = &loaded.resource {
            let _ = validate(
                &c.spec,
                &RegistryView::default(),
                &DeploymentLimits::default(),
            );
        }
    }
    assert!(
        started.elapsed() < BOUND,
        "{} bytes took {:?}",
        text.len(),
        started.elapsed()
    );
    set
}

/// Pieces of YAML (and of JSON): structure, anchors and aliases, merge keys, tags, quotes,
/// block scalars, the words YAML 1.1 reads as other types, and a Composition's own fields.
fn yaml_piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b",
        "id",
        ": ",
        ":",
        "\n",
        "- ",
        "  ",
        "    ",
        "&x ",
        "*x",
        "&y ",
        "*y",
        "<<: ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "\"",
        "'",
        "\\",
        "!!str ",
        "!!int ",
        "!!bool ",
        "!!map ",
        "!!binary ",
        "!custom ",
        "yes",
        "no",
        "on",
        "~",
        "null",
        "1_000",
        "0x1F",
        "0o17",
        "017",
        "1e3",
        ".inf",
        "-",
        "2001-12-14",
        "12:30",
        "---\n",
        "...\n",
        "# c\n",
        "|\n  ",
        ">-\n  ",
        "? ",
        "%YAML 1.1\n",
        "\t",
        "é",
        "\u{0}",
        "\u{feff}",
        "\r\n",
        "9223372036854775808",
        "apiVersion: studio.orrery.dev/v1alpha1\n",
        "kind: Composition\n",
        "kind: StudioRun\n",
        "kind: RegistryEntry\n",
        "metadata: {name: c}\n",
        "spec:\n",
        "  pattern: Pipeline\n",
        "  nodes:\n",
        "  - id: a\n",
        "    kind: LLMAgent\n",
        "    model: m\n",
        "  edges: [{from: a, to: b}]\n",
        "  budgets: {maxTokens: 10}\n",
    ])
}

fn yaml_text() -> impl Strategy<Value = String> {
    prop::collection::vec(yaml_piece(), 0..80).prop_map(|pieces| pieces.concat())
}

/// Any JSON value, up to a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Text for a node's free-text fields: anything, and the words and numbers YAML reads as
/// something else when they are written plain.
fn free_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        prop::sample::select(vec![
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "n",
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
            "-0",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "12:30",
            "1:20:30",
            "=",
            "<<",
            "- a",
            "a: b",
            "#x",
            "&a",
            "*a",
            "!x",
            "|",
            ">",
            "'",
            "\"",
            "%",
            "@",
            "`",
            "{}",
            "[]",
            " a ",
            "a\nb",
            "\t",
            "",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A seed spec of the `single`-free patterns with generated ids and texts.
fn seed_spec() -> impl Strategy<Value = Value> {
    (
        "[a-z][a-z0-9_-]{0,10}",
        prop::collection::vec(("[a-z][a-z0-9_-]{0,6}", free_text(), free_text()), 1..4),
        free_text(),
    )
        .prop_map(|(name, nodes, model)| {
            let mut seen = std::collections::BTreeSet::new();
            let nodes: Vec<Value> = nodes
                .into_iter()
                .filter(|(id, _, _)| seen.insert(id.clone()))
                .map(|(id, instruction, description)| {
                    json!({"id": id, "kind": "llm_agent", "model": model,
                           "instruction": instruction, "description": description})
                })
                .collect();
            let edges: Vec<Value> = nodes
                .windows(2)
                .map(|w| json!({"from": w[0]["id"], "to": w[1]["id"]}))
                .collect();
            json!({"spec_version": 1, "name": name, "pattern": "pipeline",
                   "nodes": nodes, "edges": edges})
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_yaml_ish_text_is_read_or_refused_in_bounded_time_never_a_panic(text in yaml_text()) {
        read_manifest(&text, Format::Yaml);
        read_manifest(&text, Format::Json);
    }

    #[test]
    fn any_text_at_all_is_read_or_refused_in_bounded_time_never_a_panic(text in ".{0,300}") {
        read_manifest(&text, Format::Yaml);
        read_manifest(&text, Format::Json);
    }

    #[test]
    fn json_read_by_the_duplicate_key_parser_is_json_as_serde_json_reads_it(value in json_value()) {
        let text = serde_json::to_string(&value).unwrap();
        let ours = orrery_crds::unique_keys::json_from_str(&text).unwrap();
        let theirs: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(ours, theirs);
        // And a YAML manifest of it reads as the same JSON document (YAML is a superset).
        let set = read_manifest(&text, Format::Json);
        prop_assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    }

    #[test]
    fn an_imported_spec_is_written_as_a_manifest_that_reads_back_the_same(spec in seed_spec()) {
        let Ok(composition) = import_spec(&spec, &ImportOptions::default()) else {
            return Ok(());
        };
        let _ = validate(
            &composition.spec,
            &RegistryView::default(),
            &DeploymentLimits::default(),
        );
        let yaml = to_manifest_yaml(&composition).unwrap();
        let set = read_manifest(&yaml, Format::Yaml);
        prop_assert!(set.problems.is_empty() && set.unreadable.is_empty(),
            "{:?} {:?}\n{}", set.problems, set.unreadable, yaml);
        let Some(Resource::Composition(back)) = set.resources.first().map(|r| &r.resource) else {
            panic!("no composition read back from\n{yaml}");
        };
        prop_assert_eq!(&back.spec, &composition.spec, "{}", yaml);
    }

    #[test]
    fn any_json_given_to_the_import_is_converted_or_refused_never_a_panic(value in json_value()) {
        let started = Instant::now();
        let _ = import_spec(&value, &ImportOptions::default());
        // A seed spec with parts of it replaced by anything.
        let mut spec = json!({"spec_version": 1, "name": "x", "pattern": "pipeline",
                              "nodes": [{"id": "a", "kind": "llm_agent"}]});
        for key in ["name", "pattern", "nodes", "edges", "budgets"] {
            spec[key] = value.clone();
            let _ = import_spec(&spec, &ImportOptions::default());
        }
        spec["nodes"] = json!([value.clone()]);
        if let Ok(c) = import_spec(&spec, &ImportOptions::default()) {
            let _ = validate(&c.spec, &RegistryView::default(), &DeploymentLimits::default());
            let _ = to_manifest_yaml(&c);
        }
        prop_assert!(started.elapsed() < BOUND);
    }
}

/// The files of `tests/fuzz-corpus/<target>/`.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files
}

#[test]
fn every_manifest_of_the_corpus_is_read_or_refused_in_bounded_time() {
    // The corpus, and the examples as seeds of what a manifest looks like.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/compositions");
    let mut files = corpus("manifests");
    files.extend(
        std::fs::read_dir(examples)
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        read_manifest(&text, Format::of(&file));
    }
}

#[test]
fn every_spec_of_the_corpus_imports_to_a_manifest_that_reads_back_the_same_or_is_refused() {
    for file in corpus("import") {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(value) = orrery_crds::unique_keys::json_from_str(&text) else {
            continue;
        };
        let Ok(composition) = import_spec(&value, &ImportOptions::default()) else {
            continue;
        };
        let yaml = to_manifest_yaml(&composition).unwrap();
        let set = read_manifest(&yaml, Format::Yaml);
        let back = set.resources.first().map(|r| &r.resource);
        assert!(
            matches!(back, Some(Resource::Composition(b)) if b.spec == composition.spec),
            "{}: {:?}\n{yaml}",
            file.display(),
            set.problems
        );
    }
}

/// The key sets and protected headers of the committed corpus (`tests/fuzz-corpus/jwks/`, the
/// seeds of `scripts/fuzz.sh jwks` and every input that ever failed it): read or refused, never
/// a panic, in bounded time.
#[test]
fn every_key_set_and_header_of_the_corpus_is_read_or_refused_in_bounded_time() {
    use orrery_crds::jwks::{parse_jwks, parse_protected_header};
    for file in corpus("jwks") {
        let bytes = std::fs::read(&file).unwrap();
        let started = Instant::now();
        let _ = parse_jwks(&bytes);
        let _ = parse_protected_header(&String::from_utf8_lossy(&bytes));
        assert!(started.elapsed() < BOUND, "{}", file.display());
    }
    let ec = std::fs::read(
        corpus("jwks")
            .into_iter()
            .find(|f| f.ends_with("ec.json"))
            .unwrap(),
    )
    .unwrap();
    assert!(parse_jwks(&ec).is_ok(), "the corpus's good key set reads");
}

/// The bodies the sidecar reads, from the committed corpus (`tests/fuzz-corpus/sidecar/`, the
/// seeds of `scripts/fuzz.sh sidecar` and every input that ever failed it): each holds
/// `orrery_crds::fuzzing::sidecar_bodies` in bounded time, and the good batch is accepted.
#[test]
fn every_sidecar_body_of_the_corpus_holds_its_property_in_bounded_time() {
    use orrery_crds::events::ingest::EventBatch;
    for file in corpus("sidecar") {
        let bytes = std::fs::read(&file).unwrap();
        let started = Instant::now();
        if let Err(broken) = orrery_crds::fuzzing::sidecar_bodies(&bytes) {
            panic!("{}: {broken}", file.display());
        }
        assert!(started.elapsed() < BOUND, "{}", file.display());
    }
    let good = std::fs::read(
        corpus("sidecar")
            .into_iter()
            .find(|f| f.ends_with("batch.json"))
            .unwrap(),
    )
    .unwrap();
    let batch: EventBatch = serde_json::from_slice(&good).unwrap();
    assert_eq!(
        batch.check("r").unwrap(),
        (1, 3),
        "the corpus's good batch is accepted"
    );
}
