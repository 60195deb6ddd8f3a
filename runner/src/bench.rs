//! The run the benchmarks measure, in one place: a 10-node `Pipeline` of `LLMAgent` nodes on one
//! model entry, planned by the shared planner, and its [`RunSetup`]. `benches/engine.rs` (the
//! engine alone) and `orrery-bench`'s `bench_run` (tests/bench/) (the engine against the stub model, and whole
//! processes) both build their runs here, so they measure the same thing.

use crate::approval::Nobody;
use crate::engine::{ModelBinding, RunOptions, RunSetup};
use crate::events::EventSink;
use crate::model::{ModelProvider, ScriptedProvider};
use orrery_crds::composition::CompositionSpec;
use orrery_crds::plan::{Plan, plan};
use orrery_crds::registry::{ModelProvider as ProviderKind, ModelScript, ScriptedTurn};
use orrery_crds::validate::{DeploymentLimits, EntryView, RegistryView, Validation};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Nodes in the benchmark's pipeline.
pub const NODES: usize = 10;
/// The registry entry every node names.
pub const ENTRY: &str = "bench-model";
/// Every node's instruction.
pub const INSTRUCTION: &str = "Improve the text you are given.";
/// The run's input.
pub const INPUT: &str = "Kafka consumer lag";
/// The answer of every model turn: about the size a real node hands to the next one.
pub const REPLY: &str = "A short answer of about the size a real node hands to the next one.";

/// Why the benchmark's pipeline could not be planned (a bug in this module).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The composition did not deserialize.
    #[error("the benchmark composition does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// The composition did not validate.
    #[error("the benchmark composition does not validate: {0:?}")]
    Invalid(Box<Validation>),
}

/// The plan of the [`NODES`]-node pipeline, its entry [`ENTRY`] a model of kind `provider`.
pub fn pipeline(provider: ProviderKind) -> Result<Plan, BenchError> {
    let nodes: Vec<_> = (0..NODES)
        .map(|i| {
            serde_json::json!({
                "id": format!("n{i}"),
                "kind": "LLMAgent",
                "instruction": INSTRUCTION,
                "model": ENTRY,
            })
        })
        .collect();
    let edges: Vec<_> = (1..NODES)
        .map(|i| serde_json::json!({"from": format!("n{}", i - 1), "to": format!("n{i}")}))
        .collect();
    let spec: CompositionSpec = serde_json::from_value(serde_json::json!({
        "pattern": "Pipeline",
        "nodes": nodes,
        "edges": edges,
    }))?;
    let mut registry = RegistryView::default();
    registry
        .entries
        .insert(ENTRY.to_string(), EntryView::Model { provider });
    plan(&spec, &registry, &DeploymentLimits::default()).map_err(|v| BenchError::Invalid(v.into()))
}

/// A Scripted provider answering [`REPLY`] to every turn.
pub fn scripted_provider() -> Arc<dyn ModelProvider> {
    Arc::new(ScriptedProvider::new(ModelScript {
        nodes: BTreeMap::new(),
        fallback: Some(ScriptedTurn {
            reply: Some(REPLY.to_string()),
            ..ScriptedTurn::default()
        }),
    }))
}

/// The setup of one run of `plan` with [`ENTRY`] bound to `provider` as `model`, its events to
/// `sinks`, nobody to decide approvals (the pipeline has none), and run id `run_id`.
pub fn setup(
    plan: &Plan,
    provider: &Arc<dyn ModelProvider>,
    model: &str,
    sinks: Vec<Arc<dyn EventSink>>,
    run_id: String,
) -> RunSetup {
    let models = BTreeMap::from([(
        ENTRY.to_string(),
        ModelBinding {
            provider: Arc::clone(provider),
            model: model.to_string(),
        },
    )]);
    RunSetup {
        plan: plan.clone(),
        composition: "bench".into(),
        pattern: "Pipeline".into(),
        models,
        tools: BTreeMap::new(),
        decisions: Arc::new(Nobody::quiet()),
        sinks,
        options: RunOptions::new(run_id),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::events::Outcome;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn the_benchmark_pipeline_plans_and_runs_to_success() {
        let plan = pipeline(ProviderKind::Scripted).unwrap();
        assert_eq!(plan.nodes.len(), NODES);
        let setup = setup(
            &plan,
            &scripted_provider(),
            "scripted-v1",
            Vec::new(),
            "bench-test".into(),
        );
        let result = crate::engine::run(setup, INPUT.into(), CancellationToken::new()).await;
        assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.error);
    }
}
