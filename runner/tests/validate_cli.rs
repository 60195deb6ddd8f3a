//! The real `orrery` binary: `validate` (human and JSON output, exit codes 0/1/2), `import` and
//! `crds`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `orrery` from the repository root (so paths in its output are relative to it).
fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// `<file> <document> <severity> <code> <field>` rows from `crds/tests/broken/expectations.txt`.
fn expected_rows() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("crds/tests/broken/expectations.txt")).unwrap();
    let mut rows: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    rows.sort();
    rows
}

/// How many errors and warnings the expectations list.
fn expected_counts() -> (usize, usize) {
    let rows = expected_rows();
    let count = |severity: &str| {
        rows.iter()
            .filter(|r| r.split(' ').nth(2) == Some(severity))
            .count()
    };
    (count("error"), count("warning"))
}

/// A fresh scratch folder under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orrery-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_examples_folder_is_valid_and_exits_0() {
    let out = orrery(&["validate", "examples/"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(
        text.contains("✓ valid, 1 warning (9 Compositions, 4 RegistryEntries, 2 StudioRuns"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "no colour when stdout is not a terminal: {text:?}"
    );
}

#[test]
fn broken_manifests_exit_1_with_every_expected_finding_in_human_output() {
    let out = orrery(&["validate", "crds/tests/broken"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    // Headings are `<path> (document N)[: Kind ns/name]`; findings `  severity[code] field: msg`.
    let mut rows = Vec::new();
    let mut heading = (String::new(), String::new());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("crds/tests/broken/") {
            let (file, rest) = rest.split_once(" (document ").unwrap();
            let document = rest.split(')').next().unwrap();
            heading = (file.to_owned(), document.to_owned());
        } else if let Some(finding) = line.strip_prefix("  ") {
            let (label, rest) = finding.split_once(' ').unwrap();
            let (severity, code) = label.trim_end_matches(']').split_once('[').unwrap();
            let field = rest.split_once(": ").unwrap().0;
            rows.push(format!(
                "{} {} {severity} {code} {field}",
                heading.0, heading.1
            ));
        }
    }
    rows.sort();
    assert_eq!(rows, expected_rows(), "{text}");
    assert!(text.contains("Composition default/unknown-tool"), "{text}");
    assert!(
        text.contains("  error[unknown_tool] spec.nodes[0].tools[1]: remote agent 'demo-writer' is not registered for skill 'deploy'"),
        "{text}"
    );
    let last = text.lines().last().unwrap();
    let (errors, warnings) = expected_counts();
    assert!(
        last.starts_with(&format!(
            "✗ invalid: {errors} errors, {warnings} warnings ("
        )),
        "{last}"
    );
}

#[test]
fn broken_manifests_exit_1_with_every_expected_finding_in_json_output() {
    let out = orrery(&["validate", "--output", "json", "crds/tests/broken"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["valid"], false);
    let (errors, warnings) = expected_counts();
    assert_eq!(doc["summary"]["errors"], errors);
    assert_eq!(doc["summary"]["warnings"], warnings);
    let findings = doc["findings"].as_array().unwrap();
    let mut rows: Vec<String> = findings
        .iter()
        .map(|f| {
            let file = Path::new(f["file"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            format!(
                "{file} {} {} {} {}",
                f["document"],
                f["severity"].as_str().unwrap(),
                f["code"].as_str().unwrap(),
                f["field"].as_str().unwrap()
            )
        })
        .collect();
    rows.sort();
    assert_eq!(rows, expected_rows());
    let tool = findings
        .iter()
        .find(|f| f["code"] == "tool_not_read_only")
        .unwrap();
    assert_eq!(
        tool["loc"],
        serde_json::json!(["spec", "nodes", 0, "tools", 2])
    );
    assert_eq!(
        (
            tool["kind"].as_str(),
            tool["namespace"].as_str(),
            tool["name"].as_str()
        ),
        (Some("Composition"), Some("default"), Some("unknown-tool"))
    );
}

#[test]
fn a_yaml_syntax_error_exits_2_and_names_the_file() {
    let out = orrery(&[
        "validate",
        "crds/tests/unreadable/bad-syntax.yaml",
        "examples/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("crds/tests/unreadable/bad-syntax.yaml: document 1 is not valid YAML"),
        "{}",
        stderr(&out)
    );
    let json = orrery(&["validate", "-o", "json", "crds/tests/unreadable/"]);
    assert_eq!(json.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["valid"], false);
    assert_eq!(
        doc["unreadable"][0]["path"],
        "crds/tests/unreadable/bad-syntax.yaml"
    );
}

#[test]
fn a_folder_and_a_file_inside_it_given_together_are_read_once() {
    let out = orrery(&[
        "validate",
        "examples/",
        "examples/registry/",
        "examples/registry/gpt.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("(9 Compositions, 4 RegistryEntries, 2 StudioRuns"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_empty_file_a_deeply_nested_one_and_an_oversized_one_exit_2_quickly() {
    let dir = scratch("unreadable-shapes");
    std::fs::write(dir.join("empty.yaml"), "").unwrap();
    std::fs::write(dir.join("deep.yaml"), format!("a: {}", "[".repeat(200_000))).unwrap();
    std::fs::write(
        dir.join("big.yaml"),
        format!("a: '{}'\n", "x".repeat(3 * 1024 * 1024)),
    )
    .unwrap();
    let started = std::time::Instant::now();
    for (file, message) in [
        ("empty.yaml", "no manifests in "),
        ("deep.yaml", "nested more than 256 levels deep"),
        ("big.yaml", "larger than 3 MiB"),
    ] {
        let path = dir.join(file);
        let out = orrery(&["validate", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stdout(&out));
        assert!(stderr(&out).contains(message), "{file}: {}", stderr(&out));
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_path_and_a_usage_error_exit_2() {
    let missing = orrery(&["validate", "no/such/dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no/such/dir: cannot read"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(orrery(&["validate"]).status.code(), Some(2));
    assert_eq!(
        orrery(&["validate", "--output", "xml", "examples/"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(orrery(&["no-such-command"]).status.code(), Some(2));
}

#[test]
fn allowed_models_and_acting_remotes_come_from_flags() {
    let strict = orrery(&["validate", "--allowed-model", "gpt", "examples/"]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        stdout(&strict).contains("error[model_not_allowed]"),
        "{}",
        stdout(&strict)
    );
    let entries = "crds/tests/broken/entry-problems.yaml";
    let refused = orrery(&["validate", "-o", "json", entries]);
    let allowed = orrery(&["validate", "-o", "json", "--acting-remotes", entries]);
    assert!(stdout(&refused).contains("acting_not_allowed"));
    assert!(!stdout(&allowed).contains("acting_not_allowed"));
}

#[test]
fn import_converts_the_seed_spec_into_a_manifest_that_reads_back() {
    let out = orrery(&[
        "import",
        "crds/tests/fixtures/release-notes.spec.json",
        "-n",
        "notes",
        "--namespace",
        "team-a",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("# Imported by `orrery import`"), "{text}");
    let c: orrery_crds::Composition = serde_yaml::from_str(&text).unwrap();
    assert_eq!(c.metadata.name.as_deref(), Some("notes"));
    assert_eq!(c.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(c.spec.edges[2].max_iterations, Some(3));
}

#[test]
fn import_refuses_what_it_cannot_convert_with_exit_1_and_unreadable_input_with_exit_2() {
    let dir = scratch("import");
    let newer = dir.join("v2.spec.json");
    let seed = std::fs::read_to_string(repo().join("crds/tests/fixtures/release-notes.spec.json"))
        .unwrap();
    std::fs::write(
        &newer,
        seed.replace("\"spec_version\": 1", "\"spec_version\": 2"),
    )
    .unwrap();
    let out = orrery(&["import", newer.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("error[unsupported_spec_version] spec_version: spec_version 2 is newer"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("cannot be imported (1 problem):"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    assert_eq!(
        orrery(&["import", garbage.to_str().unwrap()]).status.code(),
        Some(2)
    );
    assert_eq!(
        orrery(&["import", dir.join("missing.json").to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn import_refuses_a_file_or_stdin_over_the_validate_cap_with_exit_2_and_writes_nothing() {
    use std::io::Write;
    let dir = scratch("import-big");
    let seed = std::fs::read_to_string(repo().join("crds/tests/fixtures/release-notes.spec.json"))
        .unwrap();
    let cap = orrery_crds::manifest::MAX_FILE_BYTES as usize;
    // A spec that would convert, padded with whitespace to one byte over the cap, and one at
    // exactly the cap, which is read.
    let padded = |len: usize| format!("{seed}{}", " ".repeat(len - seed.len()));
    let over = dir.join("over.spec.json");
    let at_cap = dir.join("at-cap.spec.json");
    std::fs::write(&over, padded(cap + 1)).unwrap();
    std::fs::write(&at_cap, padded(cap)).unwrap();
    let out = orrery(&["import", over.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is larger than 3 MiB"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    let out = orrery(&["import", at_cap.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Standard input is capped alike (50 MB offered, refused after the cap).
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["import", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1024 * 1024];
        // The binary stops reading at the cap: a broken pipe past it is expected.
        let _ = stdin.write_all(seed.as_bytes());
        for _ in 0..50 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("<stdin>: the input is larger than 3 MiB"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn crds_prints_the_generated_crds_and_writes_the_checked_in_files() {
    let out = orrery(&["crds"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        orrery_crds::crd_yaml::all_crds_multidoc().unwrap()
    );
    let dir = scratch("crds");
    let written = orrery(&["crds", "--write", dir.to_str().unwrap()]);
    assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
    for name in [
        "compositions.yaml",
        "registryentries.yaml",
        "studioruns.yaml",
    ] {
        let fresh = std::fs::read_to_string(dir.join(name)).unwrap();
        let checked_in = std::fs::read_to_string(repo().join("crds/yaml").join(name)).unwrap();
        assert_eq!(fresh, checked_in, "{name}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A Composition whose one node has `instruction: <instruction>`, and the Scripted model entry
/// it uses, as one file.
fn composition_with_instruction(instruction: &str) -> String {
    format!(
        "apiVersion: studio.orrery.dev/v1alpha1
kind: Composition
metadata:
  name: yes-instruction
spec:
  pattern: Pipeline
  nodes:
    - id: writer
      kind: LLMAgent
      model: scripted
      instruction: {instruction}
---
apiVersion: studio.orrery.dev/v1alpha1
kind: RegistryEntry
metadata:
  name: scripted
spec:
  model:
    provider: Scripted
    model: scripted-v1
    script:
      nodes: {{}}
"
    )
}

#[test]
fn an_unquoted_yes_is_a_boolean_refused_in_the_apiservers_words_and_a_quoted_one_passes_rule_1_81()
{
    let dir = scratch("yaml-1-1");
    let file = |name: &str, instruction: &str| {
        let path = dir.join(name);
        std::fs::write(&path, composition_with_instruction(instruction)).unwrap();
        path.to_string_lossy().into_owned()
    };
    // What kubectl apply prints for the same file, after the resource's name.
    let apiserver = "spec.nodes[0].instruction: Invalid value: \"boolean\": spec.nodes[0].instruction in body must be of type string: \"boolean\"";
    for word in ["yes", "on", "y", "off", "No"] {
        let path = file(&format!("{word}.yaml"), word);
        let out = orrery(&["validate", &path]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{word}: {text}{}", stderr(&out));
        assert!(
            text.contains(&format!(
                "  error[invalid_type] {apiserver} (an unquoted yes, no"
            )),
            "{word}: {text}"
        );
        assert!(text.contains("✗ invalid: 1 error"), "{word}: {text}");
        let json = orrery(&["validate", "-o", "json", &path]);
        assert_eq!(json.status.code(), Some(1));
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let finding = &doc["findings"][0];
        assert_eq!(
            (finding["code"].as_str(), finding["field"].as_str()),
            (Some("invalid_type"), Some("spec.nodes[0].instruction")),
            "{word}: {doc}"
        );
    }
    for quoted in ["\"yes\"", "'on'", "|\n        yes", "yes please"] {
        let path = file("quoted.yaml", quoted);
        let out = orrery(&["validate", &path]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{quoted}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(stdout(&out).starts_with("✓ valid"), "{}", stdout(&out));
    }
    // What JSON cannot hold, kubectl cannot send: the file is unreadable, as to kubectl.
    let path = file("inf.yaml", ".inf");
    let out = orrery(&["validate", &path]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("inf.yaml: document 1 cannot become JSON as kubectl reads it: line 11 column 20: the number is +Inf"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
