//! `orrery validate`: manifests checked offline with the operator's own validator, for GitOps
//! CI. Exit code 0 valid, 1 invalid, 2 unreadable input.

use super::deployment::DeploymentArgs;
use super::style::Style;
use super::{EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE};
use clap::{Args, ValueEnum};
use orrery_crds::common::Severity;
use orrery_crds::manifest::{Finding, LoadError, ManifestSet, Report, check, load_paths};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// Arguments of `orrery validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files and folders of manifests (multi-document YAML or JSON; folders are searched for
    /// .yaml, .yml and .json files).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// `human` (default) or `json` (one JSON document on stdout, for machines).
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Human)]
    pub output: Output,
    /// What the deployment decides.
    #[command(flatten)]
    pub deployment: DeploymentArgs,
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Grouped by file and resource, coloured on a terminal.
    Human,
    /// One JSON document.
    Json,
}

/// Runs `orrery validate`.
pub fn run(args: &ValidateArgs) -> u8 {
    let set = load_paths(&args.paths);
    let report = check(&set, &args.deployment.limits());
    let code = if !set.unreadable.is_empty() {
        EXIT_UNREADABLE
    } else if report.is_valid() {
        EXIT_OK
    } else {
        EXIT_INVALID
    };
    let text = match args.output {
        Output::Human => {
            for e in &set.unreadable {
                eprintln!("{}: {e}", Style::for_stderr().red("error"));
            }
            human(&set, &report, Style::for_stdout())
        }
        Output::Json => json(&set, &report),
    };
    // A closed pipe is not worth a panic; the exit code still tells.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    code
}

/// The human report: findings grouped by document and resource, then one summary line.
/// `orrery run` and `orrery demo` print the same report when a composition is invalid.
pub(crate) fn human(set: &ManifestSet, report: &Report, style: Style) -> String {
    let mut out = String::new();
    let mut last_heading = String::new();
    for f in &report.findings {
        let heading = match &f.resource {
            Some(r) => format!("{}: {r}", f.source),
            None => f.source.to_string(),
        };
        if heading != last_heading {
            if !last_heading.is_empty() {
                out.push('\n');
            }
            let _ = writeln!(out, "{}", style.bold(&heading));
            last_heading = heading;
        }
        let label = match f.severity {
            Severity::Error => style.red(&format!("error[{}]", f.issue.code)),
            Severity::Warning => style.yellow(&format!("warning[{}]", f.issue.code)),
        };
        let field = if f.issue.field.is_empty() {
            "(document)".to_owned()
        } else {
            f.issue.field.clone()
        };
        let _ = writeln!(out, "  {label} {}: {}", style.cyan(&field), f.issue.message);
    }
    if !report.findings.is_empty() {
        out.push('\n');
    }
    let s = &report.summary;
    let mut counted = vec![
        plural(s.compositions, "Composition", "Compositions"),
        plural(s.registry_entries, "RegistryEntry", "RegistryEntries"),
        plural(s.studio_runs, "StudioRun", "StudioRuns"),
        plural(s.files, "file", "files"),
    ];
    if s.ignored > 0 {
        counted.push(format!(
            "{} of other kinds ignored",
            plural(s.ignored, "document", "documents")
        ));
    }
    let counted = counted.join(", ");
    let verdict = if !set.unreadable.is_empty() {
        style.red(&format!(
            "✗ could not read {}",
            plural(set.unreadable.len(), "path", "paths")
        ))
    } else if s.errors > 0 {
        style.red(&format!(
            "✗ invalid: {}",
            plural(s.errors, "error", "errors")
        ))
    } else {
        style.green("✓ valid")
    };
    let warnings = if s.warnings > 0 {
        format!(
            ", {}",
            style.yellow(&plural(s.warnings, "warning", "warnings"))
        )
    } else {
        String::new()
    };
    let _ = writeln!(out, "{verdict}{warnings} ({counted})");
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The JSON report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    valid: bool,
    summary: &'a orrery_crds::manifest::Summary,
    findings: Vec<JsonFinding<'a>>,
    unreadable: Vec<JsonUnreadable>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonFinding<'a> {
    file: String,
    document: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    item: Option<usize>,
    kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    severity: &'static str,
    loc: &'a orrery_crds::Loc,
    field: &'a str,
    code: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonUnreadable {
    path: String,
    message: String,
}

fn json(set: &ManifestSet, report: &Report) -> String {
    let findings = report.findings.iter().map(json_finding).collect();
    let unreadable = set.unreadable.iter().map(json_unreadable).collect();
    let doc = JsonReport {
        valid: set.unreadable.is_empty() && report.is_valid(),
        summary: &report.summary,
        findings,
        unreadable,
    };
    match serde_json::to_string_pretty(&doc) {
        Ok(text) => text + "\n",
        Err(e) => format!("{{\"valid\": false, \"error\": {:?}}}\n", e.to_string()),
    }
}

fn json_finding(f: &Finding) -> JsonFinding<'_> {
    JsonFinding {
        file: f.source.file.display().to_string(),
        document: f.source.document,
        item: f.source.item,
        kind: f.resource.as_ref().map(|r| r.kind.as_str()),
        namespace: f.resource.as_ref().map(|r| r.namespace.as_str()),
        name: f.resource.as_ref().map(|r| r.name.as_str()),
        severity: match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        loc: &f.issue.loc,
        field: &f.issue.field,
        code: &f.issue.code,
        message: &f.issue.message,
    }
}

fn json_unreadable(e: &LoadError) -> JsonUnreadable {
    JsonUnreadable {
        path: e.path().display().to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use orrery_crds::manifest::Format;
    use orrery_crds::validate::DeploymentLimits;
    use std::path::Path;

    fn set_of(text: &str) -> ManifestSet {
        let mut set = ManifestSet::default();
        set.add_text(Path::new("m.yaml"), text, Format::Yaml)
            .unwrap();
        set
    }

    const UNKNOWN_KIND: &str =
        "apiVersion: studio.orrery.dev/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec: {}\n";

    #[test]
    fn the_human_report_names_file_resource_field_code_and_message() {
        let set = set_of(UNKNOWN_KIND);
        let report = check(&set, &DeploymentLimits::default());
        let text = human(&set, &report, Style::plain());
        assert!(
            text.contains("m.yaml (document 1): Workflow default/w"),
            "{text}"
        );
        assert!(
            text.contains("  error[unknown_kind] kind: studio.orrery.dev has no kind \"Workflow\""),
            "{text}"
        );
        assert!(
            text.ends_with(
                "✗ invalid: 1 error (0 Compositions, 0 RegistryEntries, 0 StudioRuns, 1 file)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_human_report_of_nothing_wrong_is_one_line() {
        let set = set_of("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
        let report = check(&set, &DeploymentLimits::default());
        assert_eq!(
            human(&set, &report, Style::plain()),
            "✓ valid (0 Compositions, 0 RegistryEntries, 0 StudioRuns, 1 file, 1 document of other kinds ignored)\n"
        );
    }

    #[test]
    fn the_json_report_flattens_each_finding() {
        let set = set_of(UNKNOWN_KIND);
        let report = check(&set, &DeploymentLimits::default());
        let doc: serde_json::Value = serde_json::from_str(&json(&set, &report)).unwrap();
        assert_eq!(doc["valid"], false);
        assert_eq!(doc["summary"]["errors"], 1);
        let f = &doc["findings"][0];
        assert_eq!(
            (f["kind"].as_str(), f["code"].as_str(), f["field"].as_str()),
            (Some("Workflow"), Some("unknown_kind"), Some("kind"))
        );
        assert_eq!(f["loc"], serde_json::json!(["kind"]));
        assert_eq!(
            (f["file"].as_str(), f["document"].as_u64()),
            (Some("m.yaml"), Some(1))
        );
    }
}
