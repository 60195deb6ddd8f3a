//! The deliberately broken manifests in `crds/tests/broken/` yield exactly the findings listed in
//! `broken/expectations.txt` (file, document, severity, code, field), no more and no fewer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::common::Severity;
use orrery_crds::manifest::{check, load_paths};
use orrery_crds::validate::DeploymentLimits;
use std::path::PathBuf;

fn broken_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/broken")
}

/// `<file> <document> <severity> <code> <field>` rows, sorted.
fn expected_rows() -> Vec<String> {
    let text = std::fs::read_to_string(broken_dir().join("expectations.txt")).unwrap();
    let mut rows: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    rows.sort();
    rows
}

#[test]
fn every_broken_manifest_yields_exactly_its_expected_codes_and_locs() {
    let set = load_paths(&[broken_dir()]);
    assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    let report = check(&set, &DeploymentLimits::default());
    let mut found: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            let file = f
                .source
                .file
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let severity = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            format!(
                "{file} {} {severity} {} {}",
                f.source.document, f.issue.code, f.issue.field
            )
        })
        .collect();
    found.sort();
    let expected = expected_rows();
    let missing: Vec<&String> = expected.iter().filter(|r| !found.contains(r)).collect();
    let unexpected: Vec<&String> = found.iter().filter(|r| !expected.contains(r)).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "expected but not found: {missing:#?}\nfound but not expected: {unexpected:#?}"
    );
    assert_eq!(found.len(), expected.len(), "a finding is repeated");
    assert!(!report.is_valid());
}

#[test]
fn every_broken_file_but_the_registry_is_listed_in_the_expectations() {
    let expected = expected_rows();
    for entry in std::fs::read_dir(broken_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name == "registry.yaml" || name == "expectations.txt" {
            continue;
        }
        assert!(
            expected.iter().any(|r| r.starts_with(&format!("{name} "))),
            "{name} is in broken/ but expects no finding"
        );
    }
}

#[test]
fn the_broken_registry_alone_is_valid() {
    let set = load_paths(&[broken_dir().join("registry.yaml")]);
    let report = check(&set, &DeploymentLimits::default());
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.summary.registry_entries, 3);
}

#[test]
fn allowing_acting_remotes_clears_the_acting_entry() {
    let set = load_paths(&[broken_dir().join("entry-problems.yaml")]);
    let limits = DeploymentLimits {
        acting_remotes: true,
        ..DeploymentLimits::default()
    };
    let codes: Vec<String> = check(&set, &limits)
        .findings
        .into_iter()
        .map(|f| f.issue.code)
        .collect();
    assert!(
        !codes.iter().any(|c| c == "acting_not_allowed"),
        "{codes:?}"
    );
}

#[test]
fn every_code_reported_is_listed_in_one_place_with_its_severity() {
    use orrery_crds::codes::ALL_CODES;
    use orrery_crds::manifest::codes::MANIFEST_CODES;
    let set = load_paths(&[broken_dir()]);
    for f in check(&set, &DeploymentLimits::default()).findings {
        let listed = ALL_CODES
            .iter()
            .chain(MANIFEST_CODES)
            .find(|c| c.0 == f.issue.code);
        let (_, severity, ..) =
            listed.unwrap_or_else(|| panic!("{} is listed nowhere", f.issue.code));
        assert_eq!(*severity, f.severity, "{}", f.issue.code);
    }
}
