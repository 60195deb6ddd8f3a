//! `docs/validation-codes.md` lists every code `orrery validate` can report, generated from the
//! two code lists (the validator's and the manifest checks'); this test keeps it equal to them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_crds::codes::{ALL_CODES, CodeInfo};
use orrery_crds::common::Severity;
use orrery_crds::manifest::codes::{ACTING_NOT_ALLOWED, MANIFEST_CODES, MISSING_FIELD};
use std::path::PathBuf;

const REFRESH: &str = "ORRERY_UPDATE_DOCS=1 cargo test -p orrery-crds --test docs_codes";

fn table(out: &mut String, rows: &[&CodeInfo]) {
    out.push_str("| code | severity | meaning | rule |\n| --- | --- | --- | --- |\n");
    for (code, severity, meaning, rule) in rows {
        let severity = match severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        out.push_str(&format!(
            "| `{code}` | {severity} | {} | {rule} |\n",
            meaning.replace('|', "\\|")
        ));
    }
}

fn generate() -> String {
    let mut out = String::from(
        "<!-- Generated from crds/src/codes.rs and crds/src/manifest/codes.rs; do not edit.\n     Refresh: ",
    );
    out.push_str(REFRESH);
    out.push_str(
        " -->\n# Validation codes\n\nEvery finding `orrery validate` (and, later, the operator's `status.errors`) reports \
carries one of these codes, at the field (`loc`) that caused it. An error refuses the resource; a \
warning does not. The rule column gives the number of the rule each code carries over, as numbered in \
`docs/behaviour.md`.\n\n\
## Composition rules\n\nThe composition validator (`orrery_crds::validate::validate`), the same function for the \
operator, the CLI and the sidecar.\n\n",
    );
    table(&mut out, &ALL_CODES.iter().collect::<Vec<_>>());
    out.push_str(
        "\n## Manifest checks\n\nWhat `orrery validate` finds in the manifests themselves: documents it cannot read as \
resources, and what the apiserver's schema and CEL rules would refuse at apply time. \
`missing_field` and `acting_not_allowed` are shared with the validator.\n\n",
    );
    let own: Vec<&CodeInfo> = MANIFEST_CODES
        .iter()
        .filter(|c| c.0 != MISSING_FIELD && c.0 != ACTING_NOT_ALLOWED)
        .collect();
    table(&mut out, &own);
    out
}

#[test]
fn the_codes_document_lists_every_code() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/validation-codes.md");
    let fresh = generate();
    if std::env::var_os("ORRERY_UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).unwrap();
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "docs/validation-codes.md is out of date; refresh it with:\n  {REFRESH}"
    );
}
