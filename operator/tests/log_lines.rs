//! The operator binary's log lines (issue 22 §4): `--log-format json` makes every line on
//! standard error one JSON object, from the first (a config that cannot be read is an error
//! line like any other); a format or level that is not one is refused before anything runs.
#![allow(clippy::expect_used, clippy::panic)]

use std::process::Command;

fn operator(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_orrery-operator"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("ORRERY_LOG_FORMAT")
        .output()
        .expect("orrery-operator runs")
}

fn json_lines(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[test]
fn both_processes_write_json_lines_naming_the_level_and_the_problem() {
    for process in ["controller", "sidecar"] {
        let out = operator(&[
            "--log-format",
            "json",
            process,
            "--config",
            "/nonexistent/orrery/config.yaml",
        ]);
        assert_eq!(out.status.code(), Some(1), "{process}");
        let lines = json_lines(&out.stderr);
        let error = lines
            .iter()
            .find(|l| l["level"] == "ERROR")
            .unwrap_or_else(|| panic!("{process}: an error line in {lines:?}"));
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("/nonexistent/orrery/config.yaml")),
            "{process}: {error}"
        );
        assert!(error["time"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(
            error["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("orrery_operator"))
        );
    }
}

#[test]
fn the_format_also_comes_from_orrery_log_format_and_text_is_the_default() {
    let text = operator(&["controller", "--config", "/nonexistent/c.yaml"]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.contains("ERROR") && !stderr.trim_start().starts_with('{'),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_orrery-operator"))
        .args(["sidecar", "--config", "/nonexistent/c.yaml"])
        .env_remove("RUST_LOG")
        .env("ORRERY_LOG_FORMAT", "json")
        .output()
        .expect("orrery-operator runs");
    assert!(!json_lines(&out.stderr).is_empty());
}

#[test]
fn a_log_format_or_level_that_is_not_one_is_refused_naming_the_choices() {
    let out = operator(&["--log-format", "yaml", "controller", "--config", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'yaml'") && stderr.contains("text, json"),
        "{stderr}"
    );
    let out = operator(&["--log-level", "info,=[", "controller", "--config", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("log level 'info,=['"), "{stderr}");
}
