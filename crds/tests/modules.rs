//! The API crate's module boundaries, read from its sources with the runner's reader (issue 22:
//! no module of the workspace imports one that imports it back): inside every folder module
//! (`validate/`, `manifest/`, …) no two of its modules depend on each other through any chain
//! of paths, and no top-level module of `crds/src` depends on itself. See
//! `runner/tests/modules.rs` for how the dependencies are read.

#![allow(clippy::expect_used, clippy::panic)]

#[path = "../../runner/tests/modules_support/mod.rs"]
#[allow(dead_code)]
mod modules_support;

use modules_support::{graph, report};

#[test]
fn no_two_modules_inside_a_folder_module_of_the_api_depend_on_each_other() {
    let cycles = report(&graph(), |folder| folder.len() > 1);
    assert!(
        cycles.is_empty(),
        "move what both sides use into a module of its own that imports neither:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_top_level_module_of_the_api_depends_on_itself() {
    let cycles = report(&graph(), |folder| folder.len() == 1);
    assert!(
        cycles.is_empty(),
        "move what both sides use into a module that imports neither:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_reader_sees_the_apis_known_edges() {
    let graph = graph();
    let lib: Vec<String> = vec!["lib".to_owned()];
    let edges = graph.get(&lib).expect("the crate root's graph");
    assert!(
        edges
            .get("validate")
            .is_some_and(|t| t.contains_key("composition")),
        "{edges:?}"
    );
}
