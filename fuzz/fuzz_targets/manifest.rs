//! Manifests, in YAML and in JSON (the duplicate-key parser), and the validator behind them:
//! any bytes read or refused, every Composition read validated, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orrery_crds::manifest::{Format, ManifestSet, Resource};
use orrery_crds::validate::{DeploymentLimits, RegistryView, validate};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (name, format) in [("f.yaml", Format::Yaml), ("f.json", Format::Json)] {
        let mut set = ManifestSet::default();
        let _ = set.add_text(Path::new(name), &text, format);
        for loaded in &set.resources {
            if let Resource::Composition(c) = &loaded.resource {
                let _ = validate(
                    &c.spec,
                    &RegistryView::default(),
                    &DeploymentLimits::default(),
                );
            }
        }
    }
});
