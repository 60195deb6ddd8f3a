//! Building what a plan uses: the models (a [`ModelFactory`]) and the tools (a
//! [`ToolFactory`]).

use super::Prepared;
use super::models::ModelFactory;
use crate::engine::ModelBinding;
use crate::tools::{Tool, ToolBuildError, ToolFactory};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a run could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A node names a model entry missing from the registry.
    #[error("model entry '{0}' is not among the RegistryEntries given")]
    MissingModel(String),
    /// A model entry is not a model.
    #[error("registry entry '{0}' is not a model entry")]
    NotAModel(String),
    /// A provider could not be built (a missing API key…).
    #[error("model entry '{entry}': {message}")]
    Provider {
        /// The entry.
        entry: String,
        /// What is wrong.
        message: String,
    },
    /// A tool's registry entry is missing.
    #[error("registry entry '{entry}' of tool {reference} is not among the RegistryEntries given")]
    MissingEntry {
        /// The entry.
        entry: String,
        /// The tool reference.
        reference: String,
    },
    /// A tool could not be built.
    #[error(transparent)]
    Tool(#[from] ToolBuildError),
}

/// The models and tools of a prepared composition, built.
pub struct Built {
    /// Models by entry name.
    pub models: BTreeMap<String, ModelBinding>,
    /// Tools by reference.
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Whether the tools are dry-run stand-ins.
    pub dry_run_tools: bool,
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("models", &self.models)
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("dry_run_tools", &self.dry_run_tools)
            .finish()
    }
}

/// Builds every model and tool the plan uses: models with `providers` (local runs use
/// [`super::GuardedModels`], so model traffic goes through the network guard), remote tools with
/// `tools`.
pub async fn build(
    prepared: &Prepared,
    providers: &dyn ModelFactory,
    tools: &dyn ToolFactory,
) -> Result<Built, BuildError> {
    let mut models = BTreeMap::new();
    for name in prepared
        .plan
        .nodes
        .iter()
        .filter(|n| n.kind.calls_model())
        .filter_map(|n| n.model.as_ref())
    {
        if models.contains_key(name) {
            continue;
        }
        let entry = prepared
            .entries
            .get(name)
            .ok_or_else(|| BuildError::MissingModel(name.clone()))?;
        let model = entry
            .spec
            .model
            .as_ref()
            .ok_or_else(|| BuildError::NotAModel(name.clone()))?;
        let provider = providers
            .build(name, model)
            .map_err(|e| BuildError::Provider {
                entry: name.clone(),
                message: e.to_string(),
            })?;
        models.insert(
            name.clone(),
            ModelBinding {
                provider,
                model: model.model.clone(),
            },
        );
    }
    let mut built_tools: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
    for planned in prepared.plan.nodes.iter().flat_map(|n| n.tools.iter()) {
        if built_tools.contains_key(&planned.reference) {
            continue;
        }
        let entry =
            prepared
                .entries
                .get(&planned.entry)
                .ok_or_else(|| BuildError::MissingEntry {
                    entry: planned.entry.clone(),
                    reference: planned.reference.clone(),
                })?;
        built_tools.insert(
            planned.reference.clone(),
            tools.build(planned, entry).await?,
        );
    }
    let dry_run_tools = tools.dry_run() && !built_tools.is_empty();
    Ok(Built {
        models,
        tools: built_tools,
        dry_run_tools,
    })
}
