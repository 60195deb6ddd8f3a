//! The console's stack is what rule 12.1 names, and pinned: every package `web/package.json`
//! asks for is one exact version, and `web/package-lock.json` (what `npm ci` installs) resolves
//! each to that version. A range (`^19.3.1`, `~4.3`, `latest`) would let a fresh machine build
//! another console than the one tested.

use anyhow::{Context as _, Result, ensure};
use orrery_tests::harness::workspace_root;
use serde_json::Value;

fn read_json(path: &str) -> Result<Value> {
    let file = workspace_root().join(path);
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))
}

/// `major.minor.patch`, digits only: an exact version, not a range or a tag.
fn is_exact(version: &str) -> bool {
    let parts: Vec<&str> = version.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The packages `web/package.json` asks for, runtime and build alike, with their versions.
fn wanted(manifest: &Value) -> Vec<(String, String)> {
    ["dependencies", "devDependencies"]
        .iter()
        .filter_map(|section| manifest[section].as_object())
        .flatten()
        .map(|(name, version)| (name.clone(), version.as_str().unwrap_or("").to_owned()))
        .collect()
}

#[test]
fn the_console_is_built_with_react_19_typescript_tailwind_4_react_flow_and_vite_all_pinned()
-> Result<()> {
    let manifest = read_json("web/package.json")?;
    let lock = read_json("web/package-lock.json")?;
    let packages = wanted(&manifest);
    ensure!(!packages.is_empty(), "web/package.json lists no packages");

    for (name, version) in &packages {
        ensure!(
            is_exact(version),
            "web/package.json asks for {name} {version:?}: pin one exact version (e.g. \"1.2.3\")"
        );
        let locked = lock["packages"][format!("node_modules/{name}")]["version"].as_str();
        ensure!(
            locked == Some(version.as_str()),
            "web/package-lock.json resolves {name} to {locked:?}, not the pinned {version}: \
             run `npm install` in web/ and commit the lockfile"
        );
    }

    // The stack rule 12.1 names, by major version where it names one (TypeScript: any).
    for (name, major) in [
        ("react", "19."),
        ("react-dom", "19."),
        ("typescript", ""),
        ("tailwindcss", "4."),
        ("@xyflow/react", "12."),
        ("vite", "8."),
    ] {
        let version = packages
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .with_context(|| format!("web/package.json does not ask for {name}"))?;
        ensure!(
            version.starts_with(major),
            "{name} is {version}, not {major}x"
        );
    }
    Ok(())
}

#[test]
fn an_exact_version_is_three_numbers_and_nothing_else() {
    for (version, exact) in [
        ("19.3.1", true),
        ("0.12.1", true),
        ("^19.3.1", false),
        ("~4.3.5", false),
        ("19.x", false),
        ("19.3", false),
        ("latest", false),
        ("19.3.1-rc.1", false),
        ("", false),
    ] {
        assert_eq!(is_exact(version), exact, "{version:?}");
    }
}
