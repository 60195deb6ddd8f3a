//! The operator's module boundaries, read from its sources (issue 22 §2, issue 29 item 4):
//! controllers and sidecar meet through the API server, so no sidecar file imports a
//! controller's module; and no top-level module of `operator/src` depends, through any chain
//! of `crate::` paths, on itself.
//!
//! A module's dependencies are the `crate::<module>` paths in its files, comments left out
//! (tests included: a test fixture shared across modules is a dependency too). The crate
//! root's re-exports (`crate::Config`, `crate::Error`) count as their modules.

#![allow(clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The controllers' modules: what a sidecar file must not import.
const CONTROLLER_MODULES: &[&str] = &["run", "registry", "composition", "controller", "manager"];

/// The crate root's re-exports and the modules they come from.
const ROOT_REEXPORTS: &[(&str, &str)] = &[
    ("Config", "config"),
    ("Error", "error"),
    ("Result", "error"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without its comments (line comments and doc comments; block comments are not
/// used in this crate). A `//` inside a string literal would cut the line short, which can
/// only hide a path, never invent one.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every `crate::` path in `code`, as a module name; braces count
/// (`crate::{a, b::c}` depends on `a` and `b`).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue; // `orrery_crate::`, not ours
        }
        let rest = &code[at + "crate::".len()..];
        let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|part| ident(part.trim()))
                .collect()
        } else {
            vec![ident(rest)]
        };
        for name in names.into_iter().filter(|n| !n.is_empty()) {
            let module = ROOT_REEXPORTS
                .iter()
                .find(|(item, _)| *item == name)
                .map(|(_, module)| (*module).to_owned());
            match module {
                Some(module) => {
                    out.insert(module);
                }
                None if name.starts_with(|c: char| c.is_ascii_lowercase()) => {
                    out.insert(name);
                }
                None => {} // an item of the crate root itself (`FIELD_MANAGER`)
            }
        }
    }
    out
}

/// The top-level module a file of `src/` belongs to (`run/status.rs` → `run`), or `None` for
/// the crate root and the binary (`bin/`, whose modules are not the library's).
fn module_of(file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src()).expect("a file under src");
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" | "bin" => None,
        name => Some(name.trim_end_matches(".rs").to_owned()),
    }
}

/// Every top-level module and the other top-level modules it names, with the files naming
/// each (for the failure message).
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let shown = file
            .strip_prefix(src())
            .expect("under src")
            .display()
            .to_string();
        let edges = graph.entry(module.clone()).or_default();
        for target in crate_paths(&code_of(&text)) {
            if target != module {
                edges.entry(target).or_default().insert(shown.clone());
            }
        }
    }
    graph
}

/// A cycle through the graph, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_sidecar_file_imports_a_controllers_module() {
    let mut files = Vec::new();
    rust_files(&src().join("sidecar"), &mut files);
    assert!(
        !files.is_empty(),
        "the sidecar's sources are under src/sidecar"
    );
    let mut offenders = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read a sidecar file");
        for module in crate_paths(&code_of(&text)) {
            if CONTROLLER_MODULES.contains(&module.as_str()) {
                offenders.push(format!("{} imports crate::{module}", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the sidecar and the controllers meet through the API server; move what both need to a \
         module neither owns (run_token, registry_view, kstatus):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_top_level_module_of_the_operator_depends_on_itself() {
    let graph = graph();
    assert!(
        graph.contains_key("run") && graph.contains_key("controller"),
        "{graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                let files = &graph[&pair[0]][&pair[1]];
                format!("{} -> {} (in {files:?})", pair[0], pair[1])
            })
            .collect();
        panic!(
            "module cycle {}:\n{}\nmove what both sides use into a module that imports neither",
            cycle.join(" -> "),
            steps.join("\n")
        );
    }
}

#[test]
fn the_path_reader_finds_grouped_and_re_exported_paths_and_skips_comments() {
    let code = code_of(
        "use crate::{run::x, kstatus};\nuse crate::Config;\n// crate::sidecar\nlet a = crate::FIELD_MANAGER; orrery_crate::x;",
    );
    assert_eq!(
        crate_paths(&code),
        BTreeSet::from(["config".to_owned(), "kstatus".to_owned(), "run".to_owned()])
    );
}

#[test]
fn a_cycle_of_two_modules_is_found_and_a_chain_is_not() {
    let edge = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned(), BTreeSet::new());
        }
        g
    };
    assert_eq!(find_cycle(&edge(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(
        find_cycle(&edge(&[("a", "b"), ("b", "a")])),
        Some(vec!["a".to_owned(), "b".to_owned(), "a".to_owned()])
    );
}
