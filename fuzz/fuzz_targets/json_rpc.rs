//! The runner's `json_rpc` property (`orrery_runner::fuzzing::json_rpc`, which says what it reads and
//! checks); its corpus is `runner/tests/fuzz-corpus/json_rpc/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_runner::fuzzing::json_rpc(data) {
        panic!("{broken}");
    }
});
