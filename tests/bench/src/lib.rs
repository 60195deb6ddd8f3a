//! What the benchmark binaries share: the trace events they post as a runner would.

use orrery_crds::events::{EventBody, NodeStatus, Outcome, TraceEvent};
use orrery_crds::run::RunTotals;

/// Tokens each benchmark node spends.
pub const NODE_TOKENS: u64 = 123;

/// The `step`-th node event of a pipeline of `steps` LLM nodes (1-based): odd ones enter a
/// node, even ones leave it; names, sizes and counts only, as a trace carries them with content
/// capture off.
pub fn node_event(step: u64, steps: u64) -> EventBody {
    let entry = step.div_ceil(2);
    let node_id = format!("step-{}", entry % steps.max(1));
    if step % 2 == 1 {
        EventBody::NodeEnter {
            node_id,
            kind: "LLMAgent".into(),
            entry,
            depth: 0,
            parent_entry: None,
            model: Some("scripted".into()),
            input_size: 512,
            screen_flags: Vec::new(),
            input: None,
        }
    } else {
        EventBody::NodeExit {
            node_id,
            kind: "LLMAgent".into(),
            entry,
            depth: 0,
            status: NodeStatus::Ok,
            tokens: NODE_TOKENS,
            model_calls: 1,
            calls: vec![orrery_crds::events::ModelCall {
                provider: "orrery.scripted".into(),
                model: "scripted".into(),
                start_ms: 1,
                duration_ms: 248,
                input_tokens: NODE_TOKENS / 2,
                output_tokens: NODE_TOKENS - NODE_TOKENS / 2,
                error: None,
            }],
            duration_ms: 250,
            label: None,
            answer_size: 68,
            error: None,
            answer: None,
        }
    }
}

/// A successful `run.end` after `nodes` node exits.
pub fn run_end(nodes: u64) -> EventBody {
    EventBody::RunEnd {
        outcome: Outcome::Succeeded,
        error: None,
        totals: RunTotals {
            tokens: NODE_TOKENS * nodes,
            ..RunTotals::default()
        },
        dropped: 0,
        output_size: 68,
        output: None,
    }
}

/// Event `seq` of run `run_id` with `body`, stamped now.
pub fn stamped(run_id: &str, seq: u64, body: EventBody) -> TraceEvent {
    TraceEvent {
        seq,
        run_id: run_id.to_owned(),
        ts: orrery_runner::events::now_rfc3339(),
        body,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;

    #[test]
    fn node_events_enter_then_leave_each_step_in_turn() {
        let kinds: Vec<(String, String)> = (1..=4)
            .map(|step| match node_event(step, 10) {
                EventBody::NodeEnter { node_id, .. } => ("enter".to_owned(), node_id),
                EventBody::NodeExit { node_id, .. } => ("exit".to_owned(), node_id),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected = [
            ("enter", "step-1"),
            ("exit", "step-1"),
            ("enter", "step-2"),
            ("exit", "step-2"),
        ];
        assert_eq!(kinds, expected.map(|(k, n)| (k.to_owned(), n.to_owned())));
    }
}
