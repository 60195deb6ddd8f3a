//! Remote tools inside whole runs: the engine with [`RemoteToolFactory`] (rules 6.2, 7.4, 9.6;
//! the seeds' acceptance "a canary in an earlier tool result never reaches the remote").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod remote_support;

use orrery_crds::composition::CompositionSpec;
use orrery_crds::plan::plan;
use orrery_crds::registry::{McpTransport, ModelEntry, ModelScript, RegistryEntry};
use orrery_crds::validate::{DeploymentLimits, RegistryView};
use orrery_runner::approval::ScriptedDecisions;
use orrery_runner::demo::{FleetConfig, start_fleet};
use orrery_runner::engine::{RunOptions, RunResult};
use orrery_runner::events::{EventBody, MemorySink, Outcome, TraceEvent};
use orrery_runner::launch::{self, Prepared};
use orrery_runner::model::ProviderFactory;
use orrery_runner::pin::store::PinStore;
use orrery_runner::secrets::LocalSecrets;
use remote_support::a2a_fixture::{A2aFixture, Behaviour, Setup};
use remote_support::mcp_fixture::{McpFixture, text_result, tool};
use remote_support::{a2a_entry, factory, mcp_entry};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const CANARY: &str = "CANARY-7f3a91c2-never-leaves";

fn model_entry(script_yaml: &str) -> RegistryEntry {
    RegistryEntry::from_model(
        "m",
        ModelEntry::scripted(
            "scripted-test",
            serde_yaml::from_str::<ModelScript>(script_yaml).unwrap(),
        ),
    )
}

fn prepared(spec_yaml: &str, entries: Vec<RegistryEntry>) -> Prepared {
    let spec: CompositionSpec = serde_yaml::from_str(spec_yaml).unwrap();
    let limits = DeploymentLimits {
        default_model: Some("m".into()),
        ..DeploymentLimits::default()
    };
    let view = RegistryView::from_entries(&entries);
    let plan = plan(&spec, &view, &limits).unwrap_or_else(|v| panic!("{:?}", v.errors));
    Prepared {
        name: "test".into(),
        pattern: spec.pattern.as_str().to_owned(),
        plan,
        entries: entries
            .into_iter()
            .map(|e| (e.metadata.name.clone().unwrap(), e))
            .collect(),
        warnings: Vec::new(),
    }
}

async fn run(prepared: &Prepared, input: &str) -> (RunResult, Vec<TraceEvent>) {
    let providers = ProviderFactory::new(
        reqwest::Client::new(),
        Arc::new(LocalSecrets::new(None, Arc::new(|_: &str| None))),
    );
    let f = factory(Arc::new(PinStore::in_memory()), false, &[]);
    let built = launch::build(prepared, &providers, &f).await.unwrap();
    let sink = Arc::new(MemorySink::new());
    let mut options = RunOptions::new("remote-run");
    options.capture_content = true;
    let result = launch::run(
        prepared,
        built,
        input.into(),
        Arc::new(ScriptedDecisions::new([])),
        vec![sink.clone()],
        options,
        CancellationToken::new(),
    )
    .await;
    (result, sink.events())
}

#[tokio::test]
async fn a_canary_in_an_earlier_tool_result_never_reaches_the_remote() {
    let docs = McpFixture::start(
        vec![tool(
            "lookup",
            "Looks a term up",
            json!({"readOnlyHint": true}),
        )],
        BTreeMap::from([(
            "lookup".to_owned(),
            text_result(&format!("secret notes {CANARY}")),
        )]),
    )
    .await;
    let agent = A2aFixture::start(Setup::new(Behaviour::Echo)).await;
    let prepared = prepared(
        r#"
pattern: Pipeline
nodes:
  - {id: writer, kind: LLMAgent, tools: ["mcp:docs.lookup", "a2a:agent.draft"]}
"#,
        vec![
            mcp_entry(
                "docs",
                &docs.url(),
                McpTransport::StreamableHttp,
                &["lookup"],
                &["lookup"],
            ),
            a2a_entry("agent", &agent.card_url(), |_| {}),
            model_entry(
                r#"
nodes:
  writer:
    - toolCalls: [{name: mcp_docs_lookup, arguments: {q: notes}}]
    - toolCalls: [{name: a2a_agent_draft, arguments: {request: "Draft release notes for 1.2"}}]
    - reply: "{{tool_results}}"
"#,
            ),
        ],
    );
    let (result, events) = run(&prepared, &format!("the run's input, also {CANARY}")).await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.error);
    let output = result.output.unwrap();
    assert!(
        output.contains(CANARY),
        "the model had the canary in its session: {output}"
    );
    assert!(
        output.contains("draft: Draft release notes for 1.2"),
        "{output}"
    );
    let received = agent.requests();
    assert!(!received.is_empty());
    for r in &received {
        assert!(
            !r.body.contains(CANARY),
            "the canary reached the remote: {}",
            r.body
        );
        assert!(r.headers.values().all(|v| !v.contains(CANARY)));
    }
    assert_eq!(result.totals.remote_calls, 1);
    assert_eq!(result.totals.delegations, 1);
    let kinds: Vec<&str> = events.iter().map(TraceEvent::kind).collect();
    assert!(
        kinds.contains(&"mcp.call") && kinds.contains(&"a2a.message"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn the_critic_loop_example_runs_against_the_demo_fleet_with_real_remote_tools() {
    let fleet = start_fleet(FleetConfig::ephemeral()).await.unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples");
    let files = [
        root.join("compositions/critic-loop.yaml"),
        root.join("registry"),
    ];
    let mut prepared =
        launch::prepare(&files, Some("critic-loop"), &DeploymentLimits::default()).unwrap();
    prepared
        .entries
        .get_mut("demo-tools")
        .unwrap()
        .spec
        .mcp
        .as_mut()
        .unwrap()
        .url = fleet.tools_url();
    prepared
        .entries
        .get_mut("demo-writer")
        .unwrap()
        .spec
        .a2a
        .as_mut()
        .unwrap()
        .card_url = fleet.writer_card_url();
    let (result, events) = run(&prepared, "Kafka consumer lag").await;
    assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.error);
    let mcp: Vec<&EventBody> = events
        .iter()
        .map(|e| &e.body)
        .filter(|b| matches!(b, EventBody::McpCall { .. }))
        .collect();
    assert!(!mcp.is_empty());
    for body in &mcp {
        let EventBody::McpCall {
            node_id,
            entry,
            status,
            ..
        } = body
        else {
            unreachable!()
        };
        assert_eq!(
            (node_id.as_str(), entry.as_str()),
            ("research", "demo-tools")
        );
        assert_eq!(*status, orrery_runner::events::CallStatus::Ok);
    }
    let replies = events
        .iter()
        .filter(|e| {
            matches!(
                &e.body,
                EventBody::A2aMessage {
                    direction: orrery_runner::events::Direction::Inbound,
                    text: Some(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        replies, 2,
        "the writer drafted twice (the critic rejected once)"
    );
    assert_eq!(result.totals.remote_calls, 2);
    fleet.shutdown().await.unwrap();
}
