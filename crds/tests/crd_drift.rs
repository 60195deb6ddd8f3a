//! The checked-in CRD YAML (`crds/yaml/`) must equal what the types generate, so a field added to
//! a type without regenerating fails here with the command that fixes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::crd_yaml::{REFRESH_COMMAND, all_crds_yaml, write_crds};
use std::path::PathBuf;

fn yaml_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("yaml")
}

#[test]
fn checked_in_crd_yaml_equals_the_generated_yaml() {
    let dir = yaml_dir();
    if std::env::var_os("ORRERY_UPDATE_CRDS").is_some_and(|v| v == "1") {
        write_crds(&dir).unwrap();
    }
    let mut drifted = Vec::new();
    for crd in all_crds_yaml().unwrap() {
        let path = dir.join(&crd.file_name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text == crd.yaml => {}
            Ok(_) => drifted.push(format!("{} differs from the types", path.display())),
            Err(e) => drifted.push(format!("{} cannot be read ({e})", path.display())),
        }
    }
    assert!(
        drifted.is_empty(),
        "the CRD YAML in crds/yaml/ is out of date:\n  {}\nRegenerate it with:\n  {REFRESH_COMMAND}\n\
         (or: ORRERY_UPDATE_CRDS=1 cargo test -p orrery-crds --test crd_drift)",
        drifted.join("\n  ")
    );
}

#[test]
fn crd_yaml_folder_holds_no_stale_files() {
    let expected: Vec<String> = all_crds_yaml()
        .unwrap()
        .into_iter()
        .map(|c| c.file_name)
        .collect();
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(yaml_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !expected.contains(&name) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "crds/yaml/ holds files no type generates: {stale:?}; delete them"
    );
}

#[test]
fn generated_crds_carry_the_schema_rules_the_apiserver_enforces() {
    let all: String = all_crds_yaml()
        .unwrap()
        .into_iter()
        .map(|c| c.yaml)
        .collect();
    // RegistryEntry: exactly one of mcp/a2a/model (CEL), ids by pattern, status subresources.
    assert!(all.contains("set exactly one of spec.mcp, spec.a2a or spec.model"));
    assert!(all.contains("^[a-z][a-z0-9_-]{0,62}$"));
    assert_eq!(
        all.matches("status: {}").count(),
        3,
        "each CRD has a status subresource"
    );
}
