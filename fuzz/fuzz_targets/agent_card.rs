//! The runner's `agent_card` property (`orrery_runner::fuzzing::agent_card`, which says what it reads and
//! checks); its corpus is `runner/tests/fuzz-corpus/agent_card/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_runner::fuzzing::agent_card(data) {
        panic!("{broken}");
    }
});
