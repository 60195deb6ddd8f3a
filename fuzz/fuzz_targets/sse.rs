//! The runner's `sse` property (`orrery_runner::fuzzing::sse`, which says what it reads and
//! checks); its corpus is `runner/tests/fuzz-corpus/sse/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_runner::fuzzing::sse(data) {
        panic!("{broken}");
    }
});
