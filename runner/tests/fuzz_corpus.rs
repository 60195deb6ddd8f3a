//! The committed corpus of the runner's coverage-guided fuzz targets (`fuzz/`,
//! `scripts/fuzz.sh`), replayed on every `cargo test`: the seeds and every input that ever
//! failed a target, each through the same property the target checks
//! (`orrery_runner::fuzzing`), in bounded time. An input a long fuzzing run found goes into
//! `tests/fuzz-corpus/<target>/` with its fix.
#![allow(clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Far above what any input of the corpus takes, far below a parser gone quadratic.
const BOUND: Duration = Duration::from_secs(2);

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()));
    files.sort();
    files
}

#[test]
fn every_input_of_every_runner_fuzz_target_holds_its_property_in_bounded_time() {
    for (target, property) in orrery_runner::fuzzing::TARGETS {
        let files = corpus(target);
        assert!(!files.is_empty(), "target {target} has no corpus");
        for file in files {
            let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let started = Instant::now();
            if let Err(broken) = property(&bytes) {
                panic!("{}: {broken}", file.display());
            }
            assert!(started.elapsed() < BOUND, "{}", file.display());
        }
    }
}

#[test]
fn every_fuzz_target_has_a_binary_and_a_place_in_the_fuzz_script() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap_or_default();
    let script = std::fs::read_to_string(root.join("scripts/fuzz.sh")).unwrap_or_default();
    for (target, _) in orrery_runner::fuzzing::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no bin {target}"
        );
        assert!(
            root.join(format!("fuzz/fuzz_targets/{target}.rs"))
                .is_file(),
            "no fuzz/fuzz_targets/{target}.rs"
        );
        assert!(
            script.contains(target),
            "scripts/fuzz.sh does not run {target}"
        );
    }
}
