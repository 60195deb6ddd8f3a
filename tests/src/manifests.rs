//! The manifests the end-to-end tests apply, written once. Each is a JSON document, which is
//! YAML too: `harness::apply_yaml` applies it, alone or joined with others by [`documents`].

use serde_json::{Value, json};

/// A RegistryEntry `name` for the Scripted model (`scripted-v1`): each node id in `nodes`
/// answers with its list of turns (`{"reply": …, "delayMs": …, "usage": …, "toolCalls": …}`),
/// so no network is needed.
pub fn scripted_model(name: &str, nodes: Value) -> String {
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "RegistryEntry",
        "metadata": {"name": name},
        "spec": {"model": {
            "provider": "Scripted",
            "model": "scripted-v1",
            "script": {"nodes": nodes}
        }}
    })
    .to_string()
}

/// Several documents as one YAML stream.
pub fn documents(docs: &[String]) -> String {
    docs.join("\n---\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_scripted_model_entry_parses_as_a_registry_entry_with_its_script() {
        let text = documents(&[
            scripted_model(
                "scripted",
                json!({"draft": [{"reply": "draft of: {{input}}"}]}),
            ),
            scripted_model(
                "slow",
                json!({"draft": [{"delayMs": 600000, "reply": "late"}]}),
            ),
        ]);
        let docs: Vec<orrery_crds::registry::RegistryEntry> =
            serde_yaml::Deserializer::from_str(&text)
                .map(|d| serde::Deserialize::deserialize(d).expect("an entry"))
                .collect();
        assert_eq!(docs.len(), 2);
        let model = docs[1].spec.model.as_ref().expect("a model");
        assert_eq!(
            serde_json::to_value(model).expect("json")["script"]["nodes"]["draft"][0]["delayMs"],
            600000
        );
    }
}
