//! The bodies the sidecar reads (`orrery_crds::fuzzing::sidecar_bodies`, which says what it
//! checks); its corpus is `crds/tests/fuzz-corpus/sidecar/`, replayed by `cargo test`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = orrery_crds::fuzzing::sidecar_bodies(data) {
        panic!("{broken}");
    }
});
