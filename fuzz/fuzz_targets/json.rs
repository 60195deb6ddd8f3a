//! The duplicate-key JSON parser (manifests, seed imports, agent cards, key sets): any bytes
//! read or refused; what it reads, serde_json reads alike.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = orrery_crds::unique_keys::json_from_slice(data) {
        let plain: serde_json::Value =
            serde_json::from_slice(data).expect("serde_json reads what the strict parser read");
        assert_eq!(value, plain);
    }
});
