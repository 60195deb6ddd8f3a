//! The runner's module boundaries, read from its sources (issue 22 §6): inside every folder
//! module (`engine/`, `a2a/server/`, …) no two of its modules depend on each other through any
//! chain of paths, and no top-level module of `runner/src` depends, through any chain of
//! `crate::` paths, on itself. A mutual recursion that must cross modules is broken by a
//! parameter (the walker `run_parallel` is given), never by a module cycle.
//!
//! A module's dependencies are the `crate::`, `super::` and `self::` paths in its files,
//! comments and string literals left out, tests included (a test that imports a sibling is a
//! dependency too). A path is followed down the module tree as far as it names modules, and
//! through `pub use` re-exports (`crate::a2a::server::AgentHandler` is `a2a::server::handler`).
//! A dependency between two modules of one folder is an edge of that folder's graph: from
//! `engine/walk.rs`, `super::agent::run_node` is the edge `walk -> agent` of `engine`, and
//! `crate::events::Trace` is the edge `engine -> events` of the crate root. The binary's modules
//! (`cli/`, declared in `main.rs`) are a crate of their own.

#![allow(clippy::expect_used, clippy::panic)]

mod modules_support;

use modules_support::{ModPath, cycles, graph, graph_of, report};
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn no_two_modules_inside_a_folder_module_depend_on_each_other() {
    let graph = graph();
    let cycles = report(&graph, |folder| folder.len() > 1);
    assert!(
        cycles.is_empty(),
        "move what both sides use into a module of its own that imports neither, or pass the \
         recursion in as a parameter:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_top_level_module_of_the_runner_depends_on_itself() {
    let graph = graph();
    let cycles = report(&graph, |folder| folder.len() == 1);
    assert!(
        cycles.is_empty(),
        "move what both sides use into a module that imports neither:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_graph_holds_the_edges_the_runner_is_known_to_have() {
    let graph = graph();
    let folder = |path: &str| -> ModPath { path.split("::").map(str::to_owned).collect() };
    let has = |f: &str, from: &str, to: &str| {
        graph
            .get(&folder(f))
            .and_then(|edges| edges.get(from))
            .is_some_and(|targets| targets.contains_key(to))
    };
    assert!(has("lib::engine", "walk", "agent"), "{graph:?}");
    assert!(has("lib", "engine", "events"), "{graph:?}");
    assert!(has("lib::a2a", "server", "types"), "{graph:?}");
}

fn sources(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
        .collect()
}

#[test]
fn paths_in_comments_and_strings_are_no_dependencies_and_grouped_paths_are() {
    let graph = graph_of(&sources(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        (
            "a.rs",
            "//! [`crate::b`]\nuse crate::{c::{self, X}, events};\nfn f() { let s = \"crate::b\"; let r = r#\"crate::b\"#; let q = '\"'; g(crate::c::Y); }\n/* crate::b */\n",
        ),
        ("b.rs", ""),
        ("c.rs", ""),
    ]));
    let root = &graph[&vec!["lib".to_owned()]];
    assert_eq!(root["a"].keys().collect::<Vec<_>>(), ["c"], "{graph:?}");
}

#[test]
fn super_in_a_tests_module_is_the_file_and_re_exports_lead_to_their_module() {
    let graph = graph_of(&sources(&[
        ("lib.rs", "pub mod f;\npub mod g;\n"),
        (
            "f/mod.rs",
            "mod x;\nmod y;\npub use x::Thing;\npub(crate) use self::y::Other as Renamed;\n",
        ),
        ("f/x.rs", "use super::y::helper;\n"),
        (
            "f/y.rs",
            "use super::Thing;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::Renamed;\n}\n",
        ),
        (
            "f/z.rs",
            "#[cfg(test)]\n#[path = \"z_tests.rs\"]\nmod tests;\n",
        ),
        ("f/z_tests.rs", "use super::super::x;\n"),
        ("g.rs", "use crate::f::Renamed;\n"),
    ]));
    let f = &graph[&vec!["lib".to_owned(), "f".to_owned()]];
    assert!(f["x"].contains_key("y"), "{graph:?}");
    assert!(
        f["y"].contains_key("x"),
        "re-exported Thing is x's: {graph:?}"
    );
    assert!(
        f["z"].contains_key("x"),
        "z_tests.rs is z's tests: {graph:?}"
    );
    assert!(
        !f.contains_key("tests") && !f.contains_key("z_tests"),
        "{graph:?}"
    );
    assert_eq!(
        cycles(f),
        [BTreeSet::from(["x".to_owned(), "y".to_owned()])]
    );
    let root = &graph[&vec!["lib".to_owned()]];
    assert!(root["g"].contains_key("f"), "{graph:?}");
}

#[test]
fn a_cycle_of_modules_is_found_and_a_chain_is_not() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned(), BTreeSet::new());
        }
        g
    };
    assert!(cycles(&edges(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(
        cycles(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        [BTreeSet::from([
            "a".to_owned(),
            "b".to_owned(),
            "c".to_owned()
        ])]
    );
}
