//! Helpers for the engine tests: a composition from YAML, planned against a small registry (a
//! Scripted model `m`, an MCP server `docs`, a remote agent `helper`), run with the Scripted
//! provider into an in-memory sink.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use orrery_crds::budget::BudgetLimits;
use orrery_crds::composition::CompositionSpec;
use orrery_crds::plan::{Plan, plan};
use orrery_crds::registry::{
    A2aEntry, McpEntry, McpTransport, ModelEntry, ModelScript, RegistryEntry,
};
use orrery_crds::validate::{DeploymentLimits, RegistryView};
use orrery_runner::approval::{DecisionSource, ScriptedDecision, ScriptedDecisions};
use orrery_runner::engine::{ModelBinding, RunOptions, RunResult, RunSetup, run};
use orrery_runner::events::{EventBody, EventSink, MemorySink, TraceEvent};
use orrery_runner::model::{ModelProvider, ScriptedProvider, ToolSpec};
use orrery_runner::tools::{DryRunTool, Tool, ToolContext, ToolError, ToolOutput};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The registry every test composition is planned against.
pub fn registry() -> Vec<RegistryEntry> {
    let mcp = RegistryEntry::from_mcp(
        "docs",
        McpEntry::new(
            "http://127.0.0.1:9/mcp",
            McpTransport::StreamableHttp,
            &["search"],
            &["search"],
        ),
    );
    let a2a = RegistryEntry::from_a2a(
        "helper",
        A2aEntry::new("http://127.0.0.1:9/.well-known/agent-card.json", &["ask"]),
    );
    let model = RegistryEntry::from_model(
        "m",
        ModelEntry::scripted("scripted-test", ModelScript::default()),
    );
    vec![mcp, a2a, model]
}

/// Limits with generous ceilings (so tests can set large budgets) and `m` as the default model.
pub fn limits() -> DeploymentLimits {
    DeploymentLimits {
        ceilings: BudgetLimits {
            max_tokens: 10_000_000,
            max_tool_calls: 10_000,
            max_delegations: 1_000,
            max_remote_calls: 1_000,
            timeout_seconds: 3_600,
        },
        allowed_models: None,
        acting_remotes: false,
        default_model: Some("m".into()),
    }
}

/// Plans a composition spec written in YAML.
pub fn plan_of(spec_yaml: &str) -> Plan {
    let spec: CompositionSpec =
        serde_yaml::from_str(spec_yaml).unwrap_or_else(|e| panic!("spec: {e}"));
    let entries = registry();
    let view = RegistryView::from_entries(&entries);
    plan(&spec, &view, &limits()).unwrap_or_else(|v| {
        panic!(
            "the test composition does not plan: {}",
            v.errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// A tool that counts its calls and answers `result of <name>`.
#[derive(Debug)]
pub struct CountingTool {
    pub name: String,
    pub calls: AtomicU32,
}

impl CountingTool {
    pub fn new(name: &str) -> Arc<Self> {
        Arc::new(CountingTool {
            name: name.into(),
            calls: AtomicU32::new(0),
        })
    }
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for CountingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: "test tool".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(
        &self,
        _arguments: serde_json::Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput {
            content: format!("result of {}", self.name),
            is_error: false,
        })
    }
}

/// One test run.
pub struct Case {
    pub plan: Plan,
    pub script: ModelScript,
    pub provider: Option<Arc<dyn ModelProvider>>,
    pub input: String,
    pub decisions: Arc<dyn DecisionSource>,
    pub options: RunOptions,
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    pub cancel: CancellationToken,
    /// Sinks besides the in-memory one the events are read from.
    pub sinks: Vec<Arc<dyn EventSink>>,
}

/// What a run produced.
pub struct Ran {
    pub result: RunResult,
    pub events: Vec<TraceEvent>,
}

impl Case {
    /// A run of `spec_yaml` with the Scripted model answering from `script_yaml`.
    pub fn new(spec_yaml: &str, script_yaml: &str) -> Self {
        let plan = plan_of(spec_yaml);
        let script: ModelScript =
            serde_yaml::from_str(script_yaml).unwrap_or_else(|e| panic!("script: {e}"));
        let mut tools: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        for planned in plan.nodes.iter().flat_map(|n| n.tools.iter()) {
            tools.insert(
                planned.reference.clone(),
                Arc::new(DryRunTool::new(planned.clone())),
            );
        }
        let mut options = RunOptions::new("test-run");
        options.approval_timeout = Duration::from_secs(30);
        Case {
            plan,
            script,
            provider: None,
            input: "the input".into(),
            decisions: Arc::new(ScriptedDecisions::new([])),
            options,
            tools,
            cancel: CancellationToken::new(),
            sinks: Vec::new(),
        }
    }

    pub fn sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    pub fn input(mut self, input: &str) -> Self {
        self.input = input.into();
        self
    }

    pub fn decisions(mut self, decisions: impl IntoIterator<Item = ScriptedDecision>) -> Self {
        self.decisions = Arc::new(ScriptedDecisions::new(decisions));
        self
    }

    pub fn source(mut self, source: Arc<dyn DecisionSource>) -> Self {
        self.decisions = source;
        self
    }

    pub fn tool(mut self, reference: &str, tool: Arc<dyn Tool>) -> Self {
        self.tools.insert(reference.into(), tool);
        self
    }

    pub fn provider(mut self, provider: Arc<dyn ModelProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    pub fn options(mut self, edit: impl FnOnce(&mut RunOptions)) -> Self {
        edit(&mut self.options);
        self
    }

    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    pub async fn run(self) -> Ran {
        let sink = Arc::new(MemorySink::new());
        let provider = self
            .provider
            .unwrap_or_else(|| Arc::new(ScriptedProvider::new(self.script)));
        let mut models = BTreeMap::new();
        models.insert(
            "m".to_owned(),
            ModelBinding {
                provider,
                model: "scripted-test".into(),
            },
        );
        let setup = RunSetup {
            plan: self.plan,
            composition: "test".into(),
            pattern: "Pipeline".into(),
            models,
            tools: self.tools,
            decisions: self.decisions,
            sinks: std::iter::once(sink.clone() as Arc<dyn EventSink>)
                .chain(self.sinks)
                .collect(),
            options: self.options,
        };
        let result =
            tokio::time::timeout(Duration::from_secs(60), run(setup, self.input, self.cancel))
                .await
                .expect("a run must never hang");
        Ran {
            result,
            events: sink.events(),
        }
    }
}

impl Ran {
    /// Every event's type.
    pub fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(TraceEvent::kind).collect()
    }

    /// Events of one type.
    pub fn of(&self, kind: &str) -> Vec<&EventBody> {
        self.events
            .iter()
            .filter(|e| e.kind() == kind)
            .map(|e| &e.body)
            .collect()
    }

    /// `node.enter` node ids, in order.
    pub fn entered(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::NodeEnter { node_id, .. } => Some(node_id.clone()),
                _ => None,
            })
            .collect()
    }

    /// `loop.iteration` as (tail, iteration, max, stopped).
    pub fn loops(&self) -> Vec<(String, u32, u32, bool)> {
        self.events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::LoopIteration {
                    tail,
                    iteration,
                    max,
                    stopped,
                    ..
                } => Some((tail.clone(), *iteration, *max, *stopped)),
                _ => None,
            })
            .collect()
    }

    /// The `budget.hit` events as (budget key, limit, node).
    pub fn budget_hits(&self) -> Vec<(String, u64, Option<String>)> {
        self.events
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::BudgetHit {
                    budget,
                    limit,
                    node_id,
                    ..
                } => Some((budget.as_str().to_owned(), *limit, node_id.clone())),
                _ => None,
            })
            .collect()
    }

    /// Checks what every run must hold: run.start first, run.end last, seq 1.. without gaps,
    /// and each node.enter closed by one node.exit.
    pub fn assert_well_formed(&self) {
        assert_eq!(self.events.first().map(TraceEvent::kind), Some("run.start"));
        assert_eq!(self.events.last().map(TraceEvent::kind), Some("run.end"));
        for (i, e) in self.events.iter().enumerate() {
            assert_eq!(e.seq, i as u64 + 1, "seq numbers have no gaps");
        }
        let mut open = std::collections::BTreeSet::new();
        for e in &self.events {
            match &e.body {
                EventBody::NodeEnter { entry, .. } => {
                    assert!(open.insert(*entry), "entry {entry} entered twice")
                }
                EventBody::NodeExit { entry, .. } => {
                    assert!(open.remove(entry), "entry {entry} exited unopened")
                }
                _ => {}
            }
        }
        if self.result.dropped == 0 {
            assert!(open.is_empty(), "entries never exited: {open:?}");
        }
    }
}
