use kube::CustomResourceExt;
fn main() {
    for crd in [orrery_crds::Composition::crd(), orrery_crds::RegistryEntry::crd(), orrery_crds::StudioRun::crd()] {
        println!("---\n{}", serde_yaml::to_string(&crd).unwrap_or_default());
    }
}
