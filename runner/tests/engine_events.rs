//! Trace events in a run (seed rules §9, §8, §10c): cancellation mid-model-call, content capture
//! (redacted, cut to 2 KB), no content by default, the 2000-event cap with reserved slots.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod engine_support;

use engine_support::Case;
use orrery_crds::run::ApprovalKind;
use orrery_runner::approval::ScriptedDecision;
use orrery_runner::events::{
    CONTENT_CUT_BYTES, DecisionKind, EventBody, EventSink, MAX_EVENTS, MemorySink, NodeStatus,
    Outcome, TraceEvent,
};
use orrery_runner::model::ToolSpec;
use orrery_runner::tools::{Tool, ToolContext, ToolError, ToolOutput};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_cancel_mid_model_call_ends_the_run_cancelled_promptly_rule_10_12() {
    let case = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent}\n  - {id: b, kind: LLMAgent}\nedges:\n  - {from: a, to: b}\n",
        "nodes:\n  a: [{reply: slow, delayMs: 60000}]\n",
    );
    let cancel = case.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let ran = case.run().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "cancel must not wait for the model"
    );
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    assert_eq!(ran.entered(), ["a"]);
    assert!(matches!(
        ran.of("node.exit")[0],
        EventBody::NodeExit {
            status: NodeStatus::Stopped,
            ..
        }
    ));
    assert!(ran.budget_hits().is_empty());
}

#[tokio::test]
async fn a_cancel_while_a_person_decides_settles_the_approval_as_cancelled_rule_4_14() {
    let case = Case::new(
        "pattern: Router\nnodes:\n  - {id: a, kind: LLMAgent}\n  - {id: gate, kind: HumanApproval}\n  - {id: b, kind: LLMAgent}\nedges:\n  - {from: a, to: gate}\n  - {from: gate, to: b, when: approved}\n",
        "{}",
    )
    .decisions([ScriptedDecision::Wait]);
    let cancel = case.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        cancel.cancel();
    });
    let ran = case.run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    assert!(matches!(
        ran.of("approval.decided")[0],
        EventBody::ApprovalDecided {
            decision: DecisionKind::Cancelled,
            ..
        }
    ));
}

#[tokio::test]
async fn without_capture_events_carry_no_text_rule_8_4() {
    let ran = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent, tools: [\"mcp:docs.search\"]}\n",
        "nodes:\n  a: [{toolCalls: [{name: mcp_docs_search, arguments: {q: secret-query}}]}, {reply: \"secret answer\"}]\n",
    )
    .input("secret input")
    .run()
    .await;
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    let json = serde_json::to_string(&ran.events).unwrap();
    for secret in ["secret input", "secret answer", "secret-query"] {
        assert!(!json.contains(secret), "{secret} leaked into events");
    }
    // The caller still gets the output.
    assert_eq!(ran.result.output.as_deref(), Some("secret answer"));

    // Errors carry no model-written text either: an invented tool name (long, or short and
    // plain), a tool's error text, an unknown label (the review's reproduction).
    let long_name = format!("n_{}_user@example.com", "y".repeat(3000));
    let ran = Case::new(
        r#"
pattern: Router
nodes:
  - {id: start, kind: LLMAgent, tools: ["mcp:docs.search"]}
  - {id: crit, kind: LLMAgent, output: {labels: [ok, redo]}}
  - {id: end, kind: LLMAgent}
edges:
  - {from: start, to: crit}
  - {from: crit, to: end, when: ok}
"#,
        &format!(
            r#"
nodes:
  start:
    - toolCalls: [{{name: "{long_name}"}}, {{name: mcp_docs_secretname}}, {{name: mcp_docs_search}}]
    - reply: fine
  crit:
    - label: "lbl-user@example.com-SECRET-sk-{}"
"#,
            "x".repeat(3000)
        ),
    )
    .tool("mcp:docs.search", Arc::new(FailingTool))
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Failed);
    let json = serde_json::to_string(&ran.events).unwrap();
    for secret in [
        "yyyyyyyy",
        "secretname",
        "user@example.com",
        "SECRET",
        "secret tool error",
    ] {
        assert!(
            !json.contains(secret),
            "{secret} leaked into events: {json}"
        );
    }
    let error = ran.result.error.clone().unwrap().message;
    assert!(
        !error.contains("SECRET") && error.len() < 400,
        "the run's error names the label by its size: {error}"
    );
    let tools: Vec<String> = ran
        .of("tool.call")
        .into_iter()
        .map(|e| match e {
            EventBody::ToolCall { tool, .. } => tool.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        tools,
        [
            "(unknown tool, 3019 characters)",
            "(unknown tool, 19 characters)",
            "mcp_docs_search"
        ]
    );
}

/// A tool whose result is an error text (the model sees it; events only its size).
struct FailingTool;

#[async_trait::async_trait]
impl Tool for FailingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "mcp_docs_search".into(),
            description: "fails".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(
        &self,
        _arguments: serde_json::Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: "secret tool error".into(),
            is_error: true,
        })
    }
}

/// A tool that asks a person to confirm, and (badly) does not pass the run's cancel on.
struct AskingTool;

#[async_trait::async_trait]
impl Tool for AskingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "mcp_docs_search".into(),
            description: "asks".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(
        &self,
        _arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let never = tokio_util::sync::CancellationToken::new();
        let _ = ctx
            .people
            .ask(
                ApprovalKind::Action,
                &ctx.node_id,
                "Confirm?",
                "deploy everything",
                &never,
            )
            .await;
        Err(ToolError::failed(
            orrery_runner::tools::FailureKind::Internal,
            "unreachable in this test",
        ))
    }
}

#[tokio::test]
async fn a_cancel_while_a_tool_asks_a_person_still_records_the_approval_cancelled_rules_4_14_4_15()
{
    let case = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent, tools: [\"mcp:docs.search\"]}\n",
        "nodes:\n  a: [{toolCalls: [{name: mcp_docs_search}]}, {reply: done}]\n",
    )
    .tool("mcp:docs.search", Arc::new(AskingTool))
    .decisions([ScriptedDecision::Wait]);
    let cancel = case.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        cancel.cancel();
    });
    let ran = case.run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    let types = ran.types();
    let requested = types
        .iter()
        .position(|t| *t == "approval.requested")
        .unwrap();
    let decided = types.iter().position(|t| *t == "approval.decided").unwrap();
    assert!(requested < decided);
    match ran.of("approval.decided")[0] {
        EventBody::ApprovalDecided { decision, kind, .. } => {
            assert_eq!(*decision, DecisionKind::Cancelled);
            assert_eq!(*kind, ApprovalKind::Action);
        }
        other => panic!("{other:?}"),
    }
}

/// A sink stuck on its first event until the test opens it.
struct StuckSink {
    gate: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    opened: std::sync::atomic::AtomicBool,
    seen: MemorySink,
}

impl EventSink for StuckSink {
    fn emit(&self, event: &TraceEvent) {
        if !self.opened.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = self.gate.lock().unwrap().recv();
        }
        self.seen.emit(event);
    }
}

#[tokio::test]
async fn a_stuck_sink_never_holds_up_the_run_and_run_end_still_comes_last() {
    let (open, gate) = std::sync::mpsc::channel();
    let stuck = Arc::new(StuckSink {
        gate: std::sync::Mutex::new(gate),
        opened: std::sync::atomic::AtomicBool::new(false),
        seen: MemorySink::new(),
    });
    // `run()` fails the test if the run hangs: a run that waited for the sink would, since
    // the gate opens only after it returns.
    let ran = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent}\n  - {id: b, kind: LLMAgent}\n  - {id: c, kind: LLMAgent}\nedges:\n  - {from: a, to: b}\n  - {from: b, to: c}\n",
        "{}",
    )
    .sink(stuck.clone())
    .options(|o| {
        o.sink_queue = 2;
        o.sink_drain_timeout = Duration::from_millis(300);
    })
    .run()
    .await;
    assert!(
        stuck.seen.events().is_empty(),
        "the run ended while the stuck sink still held its first event"
    );
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    assert!(ran.result.dropped > 0, "events past the queue were dropped");
    open.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while stuck.seen.events().last().map(TraceEvent::kind) != Some("run.end") {
        assert!(Instant::now() < deadline, "run.end never reached the sink");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = stuck.seen.events();
    assert_eq!(seen.len() as u64, ran.result.events);
    for (i, e) in seen.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "dropped events get no number");
    }
    match &seen.last().unwrap().body {
        EventBody::RunEnd { dropped, .. } => assert_eq!(*dropped, ran.result.dropped),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_input_over_8192_characters_is_refused_before_any_node_runs_rule_1_28() {
    let spec = "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent}\n";
    let ran = Case::new(spec, "{}").input(&"é".repeat(8193)).run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Failed);
    assert_eq!(ran.types(), ["run.start", "run.end"]);
    let message = ran.result.error.clone().unwrap().message;
    assert!(
        message.contains("8193 characters") && message.contains("8192"),
        "{message}"
    );
    // Characters, not bytes: 8192 two-byte characters are fine.
    let ran = Case::new(spec, "{}").input(&"é".repeat(8192)).run().await;
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
}

#[tokio::test]
async fn captured_content_is_redacted_and_cut_to_two_kilobytes_rule_8_5() {
    let long = "x".repeat(5000);
    let ran = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent}\n",
        &format!("nodes:\n  a: [{{reply: \"contact alice@example.com {long}\"}}]\n"),
    )
    .input("my key is sk-abcdefghijklmnopqrstuvwxyz0123456789 and mail bob@example.com")
    .options(|o| o.capture_content = true)
    .run()
    .await;
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    let input = ran
        .events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::RunStart { input, .. } => input.clone(),
            _ => None,
        })
        .unwrap();
    assert!(
        !input.contains("bob@example.com") && !input.contains("sk-abcdefghij"),
        "{input}"
    );
    assert!(input.contains("[REDACTED_EMAIL]"), "{input}");
    let answer = ran
        .events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::NodeExit {
                answer,
                answer_size,
                ..
            } => {
                assert_eq!(*answer_size, 5000 + "contact alice@example.com ".len());
                answer.clone()
            }
            _ => None,
        })
        .unwrap();
    assert!(answer.len() <= CONTENT_CUT_BYTES, "{}", answer.len());
    assert!(
        answer.starts_with("contact [REDACTED_EMAIL]"),
        "{}",
        &answer[..40]
    );
    match &ran.events.last().unwrap().body {
        EventBody::RunEnd { output, .. } => {
            assert!(output.as_ref().unwrap().len() <= CONTENT_CUT_BYTES)
        }
        other => panic!("{other:?}"),
    }
    // The run's own output is whole and unredacted: redaction is for the trace only.
    assert!(
        ran.result
            .output
            .clone()
            .unwrap()
            .contains("alice@example.com")
    );
}

#[tokio::test]
async fn past_2000_events_ordinary_events_drop_but_approvals_and_run_end_keep_their_slots_rule_9_17()
 {
    let calls: String = (0..2100)
        .map(|i| format!("{{name: mcp_docs_search, arguments: {{i: {i}}}}},"))
        .collect();
    let ran = Case::new(
        r#"
pattern: Router
budgets: {maxToolCalls: 5000}
nodes:
  - {id: busy, kind: LLMAgent, tools: ["mcp:docs.search"]}
  - {id: gate, kind: HumanApproval}
  - {id: last, kind: LLMAgent}
edges:
  - {from: busy, to: gate}
  - {from: gate, to: last, when: approved}
"#,
        &format!("nodes:\n  busy: [{{toolCalls: [{calls}]}}, {{reply: done}}]\n"),
    )
    .decisions([ScriptedDecision::Approve])
    // A queue to the sinks longer than the run's events: what drops here is the cap's doing
    // alone. With the default 1024, a writer thread slowed by a loaded machine drops ordinary
    // events for the full queue first (by design: a sink never holds up a run), the cap is then
    // never reached, and ordinary events rightly follow the approval.
    .options(|o| o.sink_queue = 10_000)
    .run()
    .await;
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    assert_eq!(ran.events.len() as u64, ran.result.events);
    assert!(ran.events.len() as u64 <= MAX_EVENTS);
    assert!(ran.result.dropped > 0);
    let types = ran.types();
    assert!(types.contains(&"approval.requested") && types.contains(&"approval.decided"));
    assert_eq!(types.last(), Some(&"run.end"));
    match &ran.events.last().unwrap().body {
        EventBody::RunEnd { dropped, .. } => assert_eq!(*dropped, ran.result.dropped),
        other => panic!("{other:?}"),
    }
    // Dropped, not sampled: nothing after the cap but the reserved kinds.
    let cap_reached = types
        .iter()
        .position(|t| *t == "approval.requested")
        .unwrap();
    assert!(
        types[cap_reached..]
            .iter()
            .all(|t| ["approval.requested", "approval.decided", "run.end"].contains(t)),
        "after the cap: {:?}; the 10 before it: {:?}",
        &types[cap_reached..],
        &types[cap_reached.saturating_sub(10)..cap_reached]
    );
    for (i, e) in ran.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
    }
}

#[tokio::test]
async fn every_event_validates_against_the_published_schema_shape() {
    let ran = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent, tools: [\"mcp:docs.search\"]}\n",
        "nodes:\n  a: [{toolCalls: [{name: mcp_docs_search}]}, {reply: ok}]\n",
    )
    .run()
    .await;
    let schema = orrery_runner::events::schema();
    let variants = schema["oneOf"]
        .as_array()
        .or_else(|| schema["anyOf"].as_array())
        .expect("a tagged union");
    let tags: Vec<String> = variants
        .iter()
        .filter_map(|v| {
            v["properties"]["type"]["const"]
                .as_str()
                .or_else(|| v["properties"]["type"]["enum"][0].as_str())
        })
        .map(str::to_owned)
        .collect();
    assert_eq!(
        tags.len(),
        orrery_runner::events::EVENT_TYPES.len(),
        "{tags:?}"
    );
    for event in &ran.events {
        let json = serde_json::to_value(event).unwrap();
        let kind = json["type"].as_str().unwrap();
        let variant = variants
            .iter()
            .find(|v| {
                v["properties"]["type"]["const"].as_str() == Some(kind)
                    || v["properties"]["type"]["enum"][0].as_str() == Some(kind)
            })
            .unwrap();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(variant["required"].as_array().into_iter().flatten())
            .filter_map(|r| r.as_str())
            .collect();
        required.dedup();
        for field in required {
            assert!(
                json.get(field).is_some(),
                "{kind} lacks required field {field}"
            );
        }
    }
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_still_emits_run_end_rule_9_18() {
    let case = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent}\n",
        "{}",
    );
    case.cancel_token().cancel();
    let ran = case.run().await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Cancelled);
    assert_eq!(ran.types(), ["run.start", "run.end"]);
}

#[tokio::test]
async fn a_node_exit_lists_each_model_call_with_its_provider_model_tokens_and_timing() {
    let ran = Case::new(
        "pattern: Pipeline\nnodes:\n  - {id: a, kind: LLMAgent, tools: [\"mcp:docs.search\"]}\n",
        r#"
nodes:
  a:
    - toolCalls: [{name: mcp_docs_search, arguments: {q: one}}]
      usage: {inputTokens: 30, outputTokens: 5}
      delayMs: 20
    - reply: done
      usage: {inputTokens: 50, outputTokens: 12}
"#,
    )
    .tool(
        "mcp:docs.search",
        engine_support::CountingTool::new("mcp_docs_search"),
    )
    .run()
    .await;
    ran.assert_well_formed();
    assert_eq!(ran.result.outcome, Outcome::Succeeded);
    let Some(EventBody::NodeExit {
        calls,
        model_calls,
        tokens,
        duration_ms,
        ..
    }) = ran.of("node.exit").first().copied()
    else {
        panic!("no node.exit");
    };
    assert_eq!(*model_calls, 2);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let usage: Vec<(u64, u64)> = calls
        .iter()
        .map(|c| (c.input_tokens, c.output_tokens))
        .collect();
    assert_eq!(usage, [(30, 5), (50, 12)]);
    assert_eq!(
        calls
            .iter()
            .map(|c| c.input_tokens + c.output_tokens)
            .sum::<u64>(),
        *tokens,
        "the calls' tokens are the entry's"
    );
    for call in calls {
        assert_eq!(call.provider, "orrery.scripted");
        assert!(call.error.is_none());
        assert!(call.start_ms + call.duration_ms <= *duration_ms, "{call:?}");
    }
    assert!(calls[0].duration_ms >= 20, "the scripted delay is timed");
    assert!(
        calls[1].start_ms >= calls[0].start_ms + calls[0].duration_ms,
        "the second call comes after the first and its tool: {calls:?}"
    );
}
