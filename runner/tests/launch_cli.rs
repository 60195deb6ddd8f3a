//! What `orrery run` and `orrery demo` share through the one launch path: a closed pipe ends
//! the command quietly, and the deployment's IP redaction (`--redact-ips`,
//! `ORRERY_REDACT_IPS`, rule 8.8) reaches captured content.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn orrery() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
    command.env("NO_COLOR", "1").env_remove("ORRERY_REDACT_IPS");
    command
}

fn critic_loop(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "run".to_owned(),
        "-f".into(),
        examples()
            .join("compositions/critic-loop.yaml")
            .display()
            .to_string(),
        "-f".into(),
        examples().join("registry").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

/// Runs `command` with its standard output closed before it writes anything (a reader that
/// went away, as `| head -0`), and returns its exit code and standard error.
fn with_stdout_closed(mut command: Command) -> (Option<i32>, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the orrery binary runs");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

fn quiet(stderr: &str) {
    assert!(
        !stderr.contains("panicked")
            && !stderr.contains("Broken pipe")
            && !stderr.contains("RUST_BACKTRACE"),
        "a closed pipe ends the command quietly: {stderr}"
    );
}

#[test]
fn a_run_whose_reader_went_away_ends_quietly_with_its_outcome() {
    for output in ["human", "json"] {
        let mut command = orrery();
        command.args(critic_loop(&[
            "--input",
            "Kafka consumer lag",
            "--output",
            output,
        ]));
        let (code, stderr) = with_stdout_closed(command);
        quiet(&stderr);
        assert_eq!(code, Some(0), "{output}: {stderr}");
    }
}

#[test]
fn a_demo_whose_reader_went_away_ends_quietly_with_its_outcome() {
    let mut command = orrery();
    command.args(["demo", "--port-base", "0"]);
    let (code, stderr) = with_stdout_closed(command);
    quiet(&stderr);
    assert_eq!(code, Some(0), "{stderr}");
    // The fleet banner too: the fleet stops at the end of standard input, not on a panic.
    let mut command = orrery();
    command.args([
        "demo",
        "--fleet-only",
        "--exit-on-stdin-eof",
        "--port-base",
        "0",
    ]);
    let (code, stderr) = with_stdout_closed(command);
    quiet(&stderr);
    assert_eq!(code, Some(0), "{stderr}");
}

fn run_start_input(out: &Output) -> String {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let first: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "run.start", "{stdout}");
    first["input"].as_str().unwrap().to_owned()
}

fn captured_run(redact_flag: bool, env: Option<&str>) -> Output {
    let mut extra = vec![
        "--input",
        "lag on 10.20.30.40 since Monday",
        "--output",
        "json",
        "--capture-content",
    ];
    if redact_flag {
        extra.push("--redact-ips");
    }
    let mut command = orrery();
    command.args(critic_loop(&extra)).stdin(Stdio::null());
    if let Some(value) = env {
        command.env("ORRERY_REDACT_IPS", value);
    }
    command.output().expect("the orrery binary runs")
}

#[test]
fn ip_addresses_in_captured_content_are_redacted_only_when_the_deployment_says_so_rule_8_8() {
    let plain = captured_run(false, None);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(run_start_input(&plain), "lag on 10.20.30.40 since Monday");
    for (flag, env) in [(true, None), (false, Some("true")), (true, Some("false"))] {
        let out = captured_run(flag, env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            run_start_input(&out),
            "lag on [REDACTED_IP] since Monday",
            "--redact-ips {flag}, ORRERY_REDACT_IPS {env:?}"
        );
    }
}

#[test]
fn an_orrery_redact_ips_value_that_is_not_yes_or_no_stops_the_run_with_its_name() {
    let out = captured_run(false, Some("sometimes"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ORRERY_REDACT_IPS") && stderr.contains("sometimes"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn the_deployment_flags_are_one_set_shared_by_run_validate_and_schema() {
    let flags = [
        "--max-tokens-ceiling",
        "1000",
        "--allowed-model",
        "scripted",
    ];
    let mut schema = orrery();
    schema.args(["schema", "capabilities"]).args(flags);
    let out = schema.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let caps: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(caps["ceilings"]["maxTokens"], 1000);
    assert_eq!(caps["allowedModels"], serde_json::json!(["scripted"]));
    // The same flags on validate: a ceiling below the example's budget refuses it.
    let mut validate = orrery();
    validate
        .args(["validate", "-o", "json"])
        .args(["--max-tokens-ceiling", "1"])
        .arg(examples().join("compositions/critic-loop.yaml"))
        .arg(examples().join("registry"));
    let out = validate.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // And on run, where an invalid composition stops the run before anything runs.
    let mut run = orrery();
    run.args(critic_loop(&["--input", "x", "--max-tokens-ceiling", "1"]))
        .stdin(Stdio::null());
    let out = run.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}
