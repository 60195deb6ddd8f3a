//! The manifests the end-to-end tests apply, written once. Each is a JSON document, which is
//! YAML too: `harness::apply_yaml` applies it, alone or joined with others by [`documents`].

use serde_json::{Value, json};

/// A RegistryEntry `name` for the Scripted model (`scripted-v1`): each node id in `nodes`
/// answers with its list of turns (`{"reply": …, "delayMs": …, "usage": …, "toolCalls": …}`),
/// so no network is needed.
pub fn scripted_model(name: &str, nodes: Value) -> String {
    scripted_model_with(name, json!({"nodes": nodes}))
}

/// [`scripted_model`] with its whole `script` (`{"nodes": …, "fallback": …}`); `null` for an
/// entry without one, whose every node echoes its input.
pub fn scripted_model_with(name: &str, script: Value) -> String {
    let mut model = json!({"provider": "Scripted", "model": "scripted-v1"});
    if !script.is_null() {
        model["script"] = script;
    }
    json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "RegistryEntry",
        "metadata": {"name": name},
        "spec": {"model": model}
    })
    .to_string()
}

/// An inline composition that asks a person: `draft` → `review` (a HumanApproval) → `publish`,
/// both LLM nodes on the model entry `scripted`; a rejection ends the run Rejected. (A labelled
/// edge out of a HumanApproval is a route: the pattern is Router.)
pub fn draft_review_publish() -> Value {
    draft_review_publish_on("scripted")
}

/// [`draft_review_publish`] with both LLM nodes on the model entry `model`.
pub fn draft_review_publish_on(model: &str) -> Value {
    json!({
        "pattern": "Router",
        "budgets": {"timeoutSeconds": 600},
        "nodes": [
            {"id": "draft", "kind": "LLMAgent", "model": model, "instruction": "Draft it."},
            {"id": "review", "kind": "HumanApproval", "prompt": "Publish these notes?"},
            {"id": "publish", "kind": "LLMAgent", "model": model, "instruction": "Publish it."}
        ],
        "edges": [
            {"from": "draft", "to": "review"},
            {"from": "review", "to": "publish", "when": "approved"}
        ]
    })
}

/// The Scripted turns of a node that asks the demo fleet's `demo-writer` to draft notes whose
/// first line leaves the version open, so the writer asks which version (an A2A
/// `input-required`, rule 12.41), then replies with what the writer drafted.
pub fn writer_asks_which_version() -> Value {
    serde_json::json!([
        {"toolCalls": [{
            "name": "a2a_demo_writer_draft",
            "arguments": {"request": format!(
                "{}\n- Search is faster.",
                orrery_runner::demo::writer::UNKNOWN_VERSION
            )}
        }]},
        {"reply": "{{tool_results.reply}}"}
    ])
}

/// The RegistryEntry `demo-writer`: the demo fleet's writer agent at `card_url`, its `draft`
/// skill allowed.
pub fn demo_writer_entry(card_url: &str) -> String {
    serde_json::json!({
        "apiVersion": "studio.orrery.dev/v1alpha1",
        "kind": "RegistryEntry",
        "metadata": {"name": "demo-writer"},
        "spec": {"a2a": {"cardUrl": card_url, "skills": ["draft"]}}
    })
    .to_string()
}

/// The example `demo-tools` RegistryEntry (`examples/registry/demo-tools.yaml`) pointed at a
/// demo fleet's MCP server at `tools_url` instead of its default port.
pub fn demo_tools_entry(tools_url: &str) -> anyhow::Result<String> {
    let path = crate::harness::workspace_root().join("examples/registry/demo-tools.yaml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let entry = text.replace("http://127.0.0.1:7801/mcp", tools_url);
    anyhow::ensure!(
        entry.contains(tools_url),
        "examples/registry/demo-tools.yaml no longer names http://127.0.0.1:7801/mcp"
    );
    Ok(entry)
}

/// Who a RoleBinding binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A user, by name.
    User(&'a str),
    /// Every member of a group.
    Group(&'a str),
    /// A ServiceAccount.
    ServiceAccount {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
}

/// A RoleBinding `name` of the example `studio-user` Role (`examples/rbac/studio-user-role.yaml`)
/// to `subjects`, as `kubectl create rolebinding --role=studio-user` makes it.
pub fn studio_user_binding(name: &str, subjects: &[Subject<'_>]) -> String {
    role_binding(name, "studio-user", subjects)
}

/// A RoleBinding `name` of the Role `role` (in the binding's namespace) to `subjects`, as
/// `kubectl create rolebinding --role=<role>` makes it.
pub fn role_binding(name: &str, role: &str, subjects: &[Subject<'_>]) -> String {
    let rbac = "rbac.authorization.k8s.io";
    let subjects: Vec<Value> = subjects
        .iter()
        .map(|s| match s {
            Subject::User(user) => json!({"apiGroup": rbac, "kind": "User", "name": user}),
            Subject::Group(group) => json!({"apiGroup": rbac, "kind": "Group", "name": group}),
            Subject::ServiceAccount { namespace, name } => {
                json!({"kind": "ServiceAccount", "namespace": namespace, "name": name})
            }
        })
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": role},
        "subjects": subjects
    })
    .to_string()
}

/// Several documents as one YAML stream.
pub fn documents(docs: &[String]) -> String {
    docs.join("\n---\n")
}

/// Stops `fleet` and starts it again on the same ports with a `demo-writer` that asks for
/// `token` as a bearer token and says so on its card: another card, as a remote agent changed
/// after it was pinned (a probe then finds `PinChanged`).
pub async fn restart_fleet_with_another_card(
    fleet: orrery_runner::demo::Fleet,
    token: &str,
) -> anyhow::Result<orrery_runner::demo::Fleet> {
    let (tools_port, writer_port) = (fleet.tools_addr().port(), fleet.writer_addr().port());
    fleet.shutdown().await?;
    Ok(
        orrery_runner::demo::start_fleet(orrery_runner::demo::FleetConfig {
            tools_port,
            writer_port,
            writer_bearer_token: Some(token.to_owned()),
            ..orrery_runner::demo::FleetConfig::ephemeral()
        })
        .await?,
    )
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

    #[test]
    fn a_scripted_model_entry_may_have_a_fallback_or_no_script_at_all() {
        let entry = |text: String| -> orrery_crds::registry::RegistryEntry {
            serde_json::from_str(&text).expect("an entry")
        };
        let fallback = entry(scripted_model_with(
            "fallback",
            json!({"fallback": {"reply": "the same"}}),
        ));
        let script = fallback
            .spec
            .model
            .and_then(|m| m.script)
            .expect("a script");
        assert!(script.nodes.is_empty());
        assert_eq!(
            script.fallback.and_then(|t| t.reply).as_deref(),
            Some("the same")
        );
        let bare = entry(scripted_model_with("bare", Value::Null));
        assert_eq!(bare.spec.model.expect("a model").script, None);
    }

    #[test]
    fn a_studio_user_binding_binds_the_role_to_each_kind_of_subject() {
        let binding: k8s_openapi::api::rbac::v1::RoleBinding =
            serde_json::from_str(&studio_user_binding(
                "people",
                &[
                    Subject::User("alice"),
                    Subject::Group("release-managers"),
                    Subject::ServiceAccount {
                        namespace: "team-a",
                        name: "pipeline",
                    },
                ],
            ))
            .expect("a RoleBinding");
        assert_eq!(binding.role_ref.kind, "Role");
        assert_eq!(binding.role_ref.name, "studio-user");
        let subjects: Vec<(String, String, Option<String>)> = binding
            .subjects
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.kind, s.name, s.namespace))
            .collect();
        assert_eq!(
            subjects,
            [
                ("User".into(), "alice".into(), None),
                ("Group".into(), "release-managers".into(), None),
                (
                    "ServiceAccount".into(),
                    "pipeline".into(),
                    Some("team-a".into())
                ),
            ]
        );
    }

    #[test]
    fn the_review_composition_is_a_composition_spec() {
        let spec: orrery_crds::composition::CompositionSpec =
            serde_json::from_value(draft_review_publish()).expect("a composition");
        assert_eq!(spec.nodes.len(), 3);
    }
}
