//! The seeds' JSON import: any bytes converted or refused; a spec converted is written as a
//! manifest that reads back as the same spec (as kubectl reads YAML).
#![no_main]
use libfuzzer_sys::fuzz_target;
use orrery_crds::import::{ImportOptions, import_spec, to_manifest_yaml};
use orrery_crds::manifest::{Format, ManifestSet, Resource};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = orrery_crds::unique_keys::json_from_slice(data) else {
        return;
    };
    let Ok(composition) = import_spec(&value, &ImportOptions::default()) else {
        return;
    };
    let Ok(yaml) = to_manifest_yaml(&composition) else {
        return;
    };
    let mut set = ManifestSet::default();
    let _ = set.add_text(Path::new("imported.yaml"), &yaml, Format::Yaml);
    let back = set.resources.first().map(|r| &r.resource);
    assert!(
        matches!(back, Some(Resource::Composition(b)) if b.spec == composition.spec),
        "{:?}\n{yaml}",
        set.problems
    );
});
