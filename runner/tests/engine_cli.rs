//! `orrery run` end to end: the binary on the example files, its JSON-lines trace, its live
//! trace and its exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn orrery(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the orrery binary runs")
}

fn critic_loop_args(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "run".to_owned(),
        "-f".into(),
        examples()
            .join("compositions/critic-loop.yaml")
            .display()
            .to_string(),
        "-f".into(),
        examples().join("registry").display().to_string(),
        "--input".into(),
        "Kafka consumer lag".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

#[test]
fn the_critic_loop_runs_with_json_lines_ending_in_run_end_succeeded_with_totals() {
    let args = critic_loop_args(&["--output", "json"]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is one JSON event"))
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "run.start");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "run.end");
    assert_eq!(last["outcome"], "Succeeded");
    assert!(last["totals"]["tokens"].as_u64().unwrap() > 0);
    assert_eq!(last["totals"]["toolCalls"], 3);
    assert!(
        last["totals"]["tokensByModel"]["scripted"]
            .as_u64()
            .is_some()
    );
    assert!(
        last.get("output").is_none(),
        "no content without --capture-content"
    );
}

#[test]
fn the_live_trace_is_readable_plain_text_with_a_summary_and_the_output() {
    let args = critic_loop_args(&[]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\x1b'),
        "no colour when NO_COLOR is set or stdout is not a terminal"
    );
    for want in [
        "▶ run critic-loop (CriticLoop)",
        "→ research LLMAgent · model scripted",
        "↻ loop critic → writer 1/3",
        "[tokens ",
        "■ Succeeded",
        "── output ──",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn with_capture_content_run_end_carries_the_output() {
    let args = critic_loop_args(&["--output", "json", "--capture-content"]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(last["output"].as_str().unwrap().contains("[dry run]"));
}

#[test]
fn an_invalid_composition_exits_1_before_anything_runs() {
    let dir = std::env::temp_dir().join(format!("orrery-cli-invalid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {name: bad}\nspec:\n  pattern: Pipeline\n  nodes:\n    - {id: a, kind: LLMAgent, model: scripted, tools: [\"mcp:nowhere.x\"]}\n",
    )
    .unwrap();
    let registry = examples().join("registry").display().to_string();
    let out = orrery(&[
        "run",
        "-f",
        file.to_str().unwrap(),
        "-f",
        &registry,
        "--input",
        "x",
        "--output",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no event: nothing ran");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("spec.nodes[0].tools[0]"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unreadable_files_and_missing_input_exit_2() {
    let out = orrery(&["run", "-f", "/nonexistent/orrery.yaml", "--input", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let file = examples()
        .join("compositions/critic-loop.yaml")
        .display()
        .to_string();
    let registry = examples().join("registry").display().to_string();
    let out = orrery(&[
        "run",
        "-f",
        &file,
        "-f",
        &registry,
        "--input-file",
        "/nonexistent/input.txt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot read the input")
    );
}

#[test]
fn an_approval_nobody_can_answer_expires_and_exits_5() {
    let file = examples()
        .join("compositions/human-review.yaml")
        .display()
        .to_string();
    let registry = examples().join("registry").display().to_string();
    let out = orrery(&["run", "-f", &file, "-f", &registry, "--input", "x"]);
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no terminal"), "{stderr}");
}

#[test]
fn real_remote_tools_that_cannot_be_built_stop_the_run_before_it_starts() {
    let args = critic_loop_args(&["--tools", "real", "--output", "json"]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("cannot start the run")
    );
}

#[test]
fn an_approval_timeout_over_a_day_is_refused_with_a_clear_message_rule_4_13() {
    let args = critic_loop_args(&["--approval-timeout", "86401"]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing ran");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("--approval-timeout") && stderr.contains("1..=86400"),
        "{stderr}"
    );
    // The largest value is a day, and a run takes it (the overflow the review found is gone).
    let args = critic_loop_args(&["--approval-timeout", "86400", "--output", "json"]);
    let out = orrery(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn an_input_over_8192_characters_exits_2_before_anything_runs_rule_1_28() {
    let long = "x".repeat(8193);
    let args = critic_loop_args(&["--output", "json"]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    let at = args
        .iter()
        .position(|a| *a == "Kafka consumer lag")
        .unwrap();
    args[at] = &long;
    let out = orrery(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no event: nothing ran");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("8193 characters") && stderr.contains("at most 8192"),
        "{stderr}"
    );
}

#[test]
fn terminal_escapes_in_the_output_are_shown_not_executed_rule_4_26() {
    let dir = std::env::temp_dir().join(format!("orrery-cli-escape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("escape.yaml");
    std::fs::write(
        &file,
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {name: escape}\nspec:\n  pattern: Pipeline\n  nodes:\n    - {id: a, kind: LLMAgent, model: m}\n---\napiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {name: m}\nspec:\n  model:\n    provider: Scripted\n    model: s\n    script:\n      nodes:\n        a:\n          - reply: \"rm -rf /\\e[2K\\rRelease notes: typo fixes only.\"\n",
    )
    .unwrap();
    let out = orrery(&["run", "-f", file.to_str().unwrap(), "--input", "x"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\r'),
        "{stdout:?}"
    );
    assert!(
        stdout.contains("rm -rf /\\x1b[2K\\rRelease notes: typo fixes only."),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("2 control or invisible characters"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
