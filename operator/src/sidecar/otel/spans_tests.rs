use super::*;
use crate::otel::proto::{KeyValue, Span, Value};
use serde_json::json;

const UID: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

fn run() -> RunIdentity {
    RunIdentity {
        uid: UID.into(),
        namespace: "team-a".into(),
        name: "review-42".into(),
    }
}

/// Events numbered from 1, one second apart.
fn events(bodies: Vec<serde_json::Value>) -> Vec<TraceEvent> {
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, mut body)| {
            body["seq"] = json!(i + 1);
            body["runId"] = json!(UID);
            body["ts"] = json!(format!("2026-12-07T10:00:{:02}.000Z", i + 1));
            serde_json::from_value(body)
                .map_err(|e| e.to_string())
                .unwrap_or_else(|e| unreachable!("a test event that does not parse: {e}"))
        })
        .collect()
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv: &KeyValue| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attr(span, key) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        unreachable!(
            "no span {name} among {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

fn secs(s: u64) -> u64 {
    unix_nanos("2026-12-07T10:00:00.000Z") + s * 1_000_000_000
}

/// A supervisor calling a child that calls an MCP tool and an A2A skill, then an approval,
/// all with content captured.
fn a_run() -> Vec<TraceEvent> {
    events(vec![
        json!({"type": "run.start", "composition": "review", "pattern": "Supervisor", "nodes": 3,
               "budgets": {"maxTokens": 1000, "maxToolCalls": 10, "maxDelegations": 5, "maxRemoteCalls": 5, "timeoutSeconds": 60}, "captureContent": true, "dryRunTools": false, "inputSize": 5,
               "input": "hello"}),
        json!({"type": "node.enter", "nodeId": "lead", "kind": "Supervisor", "entry": 1,
               "depth": 0, "model": "gpt", "inputSize": 5, "input": "hello"}),
        json!({"type": "node.enter", "nodeId": "writer", "kind": "LLMAgent", "entry": 2,
               "depth": 1, "parentEntry": 1, "model": "claude", "inputSize": 5}),
        json!({"type": "mcp.call", "nodeId": "writer", "entry": "docs", "tool": "search",
               "callId": "c1", "status": "ok", "durationMs": 500, "resultSize": 10,
               "arguments": "{\"q\":\"x\"}", "result": "found"}),
        json!({"type": "tool.call", "nodeId": "writer", "entry": 2, "tool": "docs_search",
               "reference": "mcp:docs.search", "callId": "c1", "status": "ok",
               "durationMs": 600, "resultSize": 10, "arguments": "{\"q\":\"x\"}",
               "result": "found"}),
        json!({"type": "a2a.message", "nodeId": "writer", "entry": "critic", "skill": "judge",
               "callId": "c2", "direction": "outbound", "method": "SendMessage", "size": 4,
               "text": "text"}),
        json!({"type": "a2a.message", "nodeId": "writer", "entry": "critic", "skill": "judge",
               "callId": "c2", "direction": "inbound", "taskState": "completed", "size": 2,
               "text": "ok"}),
        json!({"type": "tool.call", "nodeId": "writer", "entry": 2, "tool": "critic_judge",
               "reference": "a2a:critic.judge", "callId": "c2", "status": "ok",
               "durationMs": 1000, "resultSize": 2}),
        json!({"type": "node.exit", "nodeId": "writer", "kind": "LLMAgent", "entry": 2,
               "depth": 1, "status": "ok", "tokens": 120, "modelCalls": 2, "durationMs": 6000,
               "answerSize": 6, "answer": "a text"}),
        json!({"type": "node.exit", "nodeId": "lead", "kind": "Supervisor", "entry": 1,
               "depth": 0, "status": "ok", "tokens": 30, "modelCalls": 1, "durationMs": 8000,
               "answerSize": 6}),
        json!({"type": "node.enter", "nodeId": "review", "kind": "HumanApproval", "entry": 3,
               "depth": 0, "inputSize": 6}),
        json!({"type": "approval.requested", "approvalId": "a1", "nodeId": "review",
               "kind": "Approval", "digest": "ab", "size": 6, "complete": true,
               "expiresAt": "2026-12-08T10:00:00Z", "text": "a text"}),
        json!({"type": "approval.decided", "approvalId": "a1", "nodeId": "review",
               "kind": "Approval", "decision": "approved", "waitMs": 1000}),
        json!({"type": "route.taken", "nodeId": "review", "label": "approved"}),
        json!({"type": "node.exit", "nodeId": "review", "kind": "HumanApproval", "entry": 3,
               "depth": 0, "status": "ok", "tokens": 0, "modelCalls": 0, "durationMs": 3000,
               "label": "approved", "answerSize": 6}),
        json!({"type": "run.end", "outcome": "Succeeded", "totals": {"tokens": 150,
               "tokensByModel": {"gpt": 30, "claude": 120}, "toolCalls": 2},
               "dropped": 0, "outputSize": 6, "output": "a text"}),
    ])
}

fn all_spans(content: bool, events: &[TraceEvent]) -> Vec<Span> {
    let mut spans = RunSpans::new(run(), content);
    events.iter().flat_map(|e| spans.push(e)).collect()
}

#[test]
fn a_run_is_one_trace_whose_id_is_the_run_uid_and_whose_root_is_the_run() {
    let spans = all_spans(false, &a_run());
    assert_eq!(
        spans.len(),
        9,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let trace = hex::decode(UID.replace('-', "")).unwrap_or_default();
    assert!(spans.iter().all(|s| s.trace_id == trace));
    let root = named(&spans, "run review");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(root.span_id, span_id(UID, "run").to_vec());
    assert_eq!(
        (root.start_time_unix_nano, root.end_time_unix_nano),
        (secs(1), secs(16))
    );
    assert_eq!(
        text(root, "orrery.run.namespace").as_deref(),
        Some("team-a")
    );
    assert_eq!(text(root, "orrery.run.name").as_deref(), Some("review-42"));
    assert_eq!(text(root, "orrery.composition").as_deref(), Some("review"));
    assert_eq!(text(root, "orrery.outcome").as_deref(), Some("Succeeded"));
    assert_eq!(attr(root, "orrery.tokens"), Some(&Value::Int(150)));
    assert_eq!(root.status.as_ref().map(|s| s.code), Some(STATUS_OK));
    let route = root.events.iter().find(|e| e.name == "orrery.route");
    assert!(route.is_some(), "the route is an event of the run's span");
}

#[test]
fn node_entries_tool_calls_and_remote_calls_nest_under_who_made_them() {
    let spans = all_spans(false, &a_run());
    let root = named(&spans, "run review");
    let lead = named(&spans, "invoke_agent lead");
    let writer = named(&spans, "invoke_agent writer");
    let search = named(&spans, "execute_tool docs_search");
    let mcp = named(&spans, "tools/call search");
    let judge = named(&spans, "execute_tool critic_judge");
    let a2a = named(&spans, "SendMessage judge");
    let review = named(&spans, "HumanApproval review");
    let approval = named(&spans, "approval review");
    assert_eq!(lead.parent_span_id, root.span_id);
    assert_eq!(
        writer.parent_span_id, lead.span_id,
        "a supervisor's child is under its call"
    );
    assert_eq!(search.parent_span_id, writer.span_id);
    assert_eq!(mcp.parent_span_id, search.span_id);
    assert_eq!(judge.parent_span_id, writer.span_id);
    assert_eq!(a2a.parent_span_id, judge.span_id);
    assert_eq!(review.parent_span_id, root.span_id);
    assert_eq!(approval.parent_span_id, review.span_id);
    assert_eq!(approval.kind, crate::otel::proto::KIND_INTERNAL);
    assert_eq!(mcp.kind, crate::otel::proto::KIND_CLIENT);
    // A tool call's span covers its duration, ending at its event.
    assert_eq!(search.end_time_unix_nano, secs(5));
    assert_eq!(search.start_time_unix_nano, secs(5) - 600_000_000);
    // The approval's span covers the wait.
    assert_eq!(
        (approval.start_time_unix_nano, approval.end_time_unix_nano),
        (secs(12), secs(13))
    );
    assert_eq!(
        text(approval, "orrery.approval.decision").as_deref(),
        Some("approved")
    );
    // GenAI attributes.
    assert_eq!(
        text(writer, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(text(writer, "gen_ai.agent.name").as_deref(), Some("writer"));
    assert_eq!(
        text(writer, "gen_ai.request.model").as_deref(),
        Some("claude")
    );
    assert_eq!(
        text(search, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        text(search, "gen_ai.tool.name").as_deref(),
        Some("docs_search")
    );
    assert_eq!(text(search, "gen_ai.tool.call.id").as_deref(), Some("c1"));
    assert_eq!(text(mcp, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(
        text(a2a, "orrery.a2a.task_state").as_deref(),
        Some("completed")
    );
    assert!(
        spans
            .iter()
            .all(|s| text(s, "orrery.run.uid").as_deref() == Some(UID))
    );
}

#[test]
fn no_content_is_exported_unless_allowed_even_of_a_run_that_captured_it() {
    let content_keys = [
        "orrery.run.input",
        "orrery.run.output",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "orrery.a2a.request",
        "orrery.a2a.reply",
        "orrery.approval.text",
    ];
    let without = all_spans(false, &a_run());
    for span in &without {
        for key in content_keys {
            assert_eq!(attr(span, key), None, "{key} on {}", span.name);
        }
    }
    let with = all_spans(true, &a_run());
    let found: Vec<&str> = content_keys
        .into_iter()
        .filter(|key| with.iter().any(|s| attr(s, key).is_some()))
        .collect();
    assert_eq!(
        found, content_keys,
        "allowed, the captured content is exported"
    );
    assert_eq!(
        text(
            named(&with, "execute_tool docs_search"),
            "gen_ai.tool.call.arguments"
        )
        .as_deref(),
        Some("{\"q\":\"x\"}")
    );
}

#[test]
fn spans_go_out_as_they_end_not_at_the_runs_end() {
    let events = a_run();
    let mut spans = RunSpans::new(run(), false);
    let counts: Vec<usize> = events.iter().map(|e| spans.push(e).len()).collect();
    // mcp.call, the two tool calls, the A2A reply, the node exits, the approval and the run
    // each end a span when they arrive; the rest end none.
    assert_eq!(counts, [0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1]);
}

#[test]
fn the_same_run_exported_twice_gives_the_same_span_ids() {
    let once = all_spans(false, &a_run());
    let again = all_spans(false, &a_run());
    assert_eq!(once, again);
    let mut ids: Vec<&Vec<u8>> = once.iter().map(|s| &s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), once.len(), "every span has an id of its own");
    let mut other = run();
    other.uid = "00000000-0000-4000-8000-000000000001".into();
    let mut spans = RunSpans::new(other, false);
    let theirs: Vec<Span> = a_run().iter().flat_map(|e| spans.push(e)).collect();
    assert!(theirs.iter().all(|s| !ids.contains(&&s.span_id)));
}

#[test]
fn an_event_out_of_order_or_after_the_end_is_ignored() {
    let events = a_run();
    let mut spans = RunSpans::new(run(), false);
    assert!(spans.push(&events[1]).is_empty(), "seq 2 before seq 1");
    assert_eq!(spans.next_seq(), 1);
    let all: Vec<Span> = events.iter().flat_map(|e| spans.push(e)).collect();
    assert_eq!(all.len(), 9);
    assert!(spans.ended());
    assert!(spans.push(&events[15]).is_empty());
}

#[test]
fn a_failed_node_and_a_run_that_ended_early_say_why_and_close_what_was_open() {
    let events = events(vec![
        json!({"type": "run.start", "composition": "c", "pattern": "Sequential", "nodes": 2,
               "budgets": {"maxTokens": 1000, "maxToolCalls": 10, "maxDelegations": 5, "maxRemoteCalls": 5, "timeoutSeconds": 60}, "captureContent": false, "dryRunTools": false, "inputSize": 1}),
        json!({"type": "node.enter", "nodeId": "a", "kind": "LLMAgent", "entry": 1,
               "depth": 0, "inputSize": 1}),
        json!({"type": "node.exit", "nodeId": "a", "kind": "LLMAgent", "entry": 1,
               "depth": 0, "status": "failed", "tokens": 0, "modelCalls": 1,
               "durationMs": 1, "answerSize": 0, "error": "the model answered 500"}),
        json!({"type": "node.enter", "nodeId": "b", "kind": "LLMAgent", "entry": 2,
               "depth": 0, "inputSize": 1}),
        json!({"type": "budget.hit", "budget": "maxTokens", "limit": 10, "used": 12,
               "nodeId": "b"}),
        json!({"type": "run.end", "outcome": "BudgetExhausted",
               "error": {"node": "b", "message": "maxTokens 10 used up"},
               "totals": {}, "dropped": 0, "outputSize": 0}),
    ]);
    let spans = all_spans(false, &events);
    let a = named(&spans, "invoke_agent a");
    assert_eq!(
        a.status.as_ref().map(|s| (s.code, s.message.as_str())),
        Some((STATUS_ERROR, "the model answered 500"))
    );
    assert_eq!(a.events.first().map(|e| e.name.as_str()), Some("exception"));
    let b = named(&spans, "invoke_agent b");
    assert_eq!(b.status.as_ref().map(|s| s.code), Some(STATUS_ERROR));
    assert_eq!(
        b.end_time_unix_nano,
        secs(6),
        "an entry still open ends with the run"
    );
    let root = named(&spans, "run c");
    assert_eq!(
        root.status.as_ref().map(|s| s.message.as_str()),
        Some("BudgetExhausted: node b: maxTokens 10 used up")
    );
    assert!(root.events.iter().any(|e| e.name == "orrery.budget.hit"));
}

#[test]
fn a_uid_that_is_not_a_uuid_still_gets_a_trace_id() {
    assert_eq!(trace_id("not-a-uuid"), trace_id("not-a-uuid"));
    assert_ne!(trace_id("not-a-uuid"), [0; 16]);
    assert_ne!(trace_id("not-a-uuid"), trace_id("another"));
}

#[test]
fn each_model_call_of_a_node_is_a_chat_span_under_it_with_its_tokens_and_its_place_in_time() {
    let events = events(vec![
        json!({"type": "run.start", "composition": "review", "pattern": "Pipeline", "nodes": 1,
               "budgets": {"maxTokens": 1000, "maxToolCalls": 10, "maxDelegations": 5, "maxRemoteCalls": 5, "timeoutSeconds": 60}, "captureContent": false, "dryRunTools": false, "inputSize": 5}),
        json!({"type": "node.enter", "nodeId": "writer", "kind": "LLMAgent", "entry": 1,
               "depth": 0, "model": "claude", "inputSize": 5}),
        json!({"type": "node.exit", "nodeId": "writer", "kind": "LLMAgent", "entry": 1,
        "depth": 0, "status": "failed", "tokens": 120, "modelCalls": 1, "durationMs": 900,
        "answerSize": 0, "error": "the model call failed (claude): HTTP 529",
        "calls": [
            {"provider": "anthropic", "model": "claude-sonnet-4-5", "startMs": 100,
             "durationMs": 400, "inputTokens": 80, "outputTokens": 40},
            {"provider": "anthropic", "model": "claude-sonnet-4-5", "startMs": 600,
             "durationMs": 250, "inputTokens": 0, "outputTokens": 0,
             "error": "HTTP 529 overloaded"}
        ]}),
        json!({"type": "run.end", "outcome": "Failed", "totals": {"tokens": 120,
               "tokensByModel": {"claude": 120}, "toolCalls": 0}, "dropped": 0,
               "outputSize": 0}),
    ]);
    let spans = all_spans(false, &events);
    let node = named(&spans, "invoke_agent writer");
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "chat claude-sonnet-4-5")
        .collect();
    assert_eq!(chats.len(), 2, "one chat span per model call");
    for chat in &chats {
        assert_eq!(chat.parent_span_id, node.span_id, "under the node's entry");
        assert_eq!(chat.kind, KIND_CLIENT);
        assert_eq!(text(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(
            text(chat, "gen_ai.provider.name").as_deref(),
            Some("anthropic")
        );
        assert_eq!(
            text(chat, "gen_ai.request.model").as_deref(),
            Some("claude-sonnet-4-5")
        );
    }
    assert_ne!(chats[0].span_id, chats[1].span_id);
    let (answered, failed) = (chats[0], chats[1]);
    assert_eq!(
        attr(answered, "gen_ai.usage.input_tokens"),
        Some(&Value::Int(80))
    );
    assert_eq!(
        attr(answered, "gen_ai.usage.output_tokens"),
        Some(&Value::Int(40))
    );
    // The node entered at 2 s; the calls sit at their offsets from it.
    assert_eq!(answered.start_time_unix_nano, secs(2) + 100_000_000);
    assert_eq!(answered.end_time_unix_nano, secs(2) + 500_000_000);
    assert_eq!(failed.start_time_unix_nano, secs(2) + 600_000_000);
    assert_eq!(failed.end_time_unix_nano, secs(2) + 850_000_000);
    assert!(answered.status.is_none(), "an answered call has no error");
    let status = failed.status.as_ref().map(|s| (s.code, s.message.as_str()));
    assert_eq!(status, Some((STATUS_ERROR, "HTTP 529 overloaded")));
    assert!(
        failed.events.iter().any(|e| e.name == "exception"),
        "a failed call records the exception"
    );
}
