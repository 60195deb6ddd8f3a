//! The runner's `ca_bundle` property (`orrery_runner::fuzzing::ca_bundle`, which says what it reads and
//! checks); its corpus is `runner/tests/fuzz-corpus/ca_bundle/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_runner::fuzzing::ca_bundle(data) {
        panic!("{broken}");
    }
});
