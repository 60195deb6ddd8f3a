//! The runner's `model_reply` property (`orrery_runner::fuzzing::model_reply`, which says what it reads and
//! checks); its corpus is `runner/tests/fuzz-corpus/model_reply/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_runner::fuzzing::model_reply(data) {
        panic!("{broken}");
    }
});
