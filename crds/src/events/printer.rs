//! The live trace in a terminal: nodes entering and leaving (indented by depth), tokens, loop
//! counters, routes, tool calls, budgets filling, approvals and a final summary. Colour only
//! when asked for (a TTY without `NO_COLOR`), plain lines otherwise. Every text that comes from an
//! event is shown through [`visible_inline`]: a terminal escape in a model's answer, a remote's
//! task state or an error message is printed as `\x1b`, never executed.

use super::{
    CallStatus, DecisionKind, Direction, EventBody, NodeStatus, TraceEvent, visible_inline,
};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

/// How the printer writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrinterOptions {
    /// Use ANSI colours.
    pub colour: bool,
}

impl PrinterOptions {
    /// Colour when standard output is a terminal and `NO_COLOR` is unset or empty.
    pub fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        PrinterOptions {
            colour: std::io::stdout().is_terminal() && !no_color,
        }
    }
}

#[derive(Default)]
struct PrinterState {
    max_tokens: u64,
    max_tool_calls: u64,
    max_delegations: u64,
    max_remote_calls: u64,
    timeout_seconds: u64,
    tokens: u64,
    tool_calls: u64,
    depth_of_entry: HashMap<u64, u32>,
}

/// Prints events as readable lines.
pub struct TerminalPrinter {
    options: PrinterOptions,
    out: Mutex<(Box<dyn Write + Send>, PrinterState)>,
}

impl std::fmt::Debug for TerminalPrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalPrinter")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const BLUE: &str = "\x1b[34m";
const MAGENTA: &str = "\x1b[35m";
const CYAN: &str = "\x1b[36m";

/// One line of event text, safe for a terminal: control and invisible characters escaped, and
/// said so.
/// Two spaces per nesting level.
fn indent(depth: u32) -> String {
    "  ".repeat(depth as usize)
}

fn shown(text: &str) -> String {
    let v = visible_inline(text);
    if v.escaped == 0 {
        v.text.into_owned()
    } else {
        format!(
            "{} [{} control or invisible character{} shown escaped]",
            v.text,
            v.escaped,
            if v.escaped == 1 { "" } else { "s" }
        )
    }
}

impl TerminalPrinter {
    /// A printer to standard output.
    pub fn stdout(options: PrinterOptions) -> Self {
        TerminalPrinter::new(Box::new(std::io::stdout()), options)
    }

    /// A printer to any writer.
    pub fn new(out: Box<dyn Write + Send>, options: PrinterOptions) -> Self {
        TerminalPrinter {
            options,
            out: Mutex::new((out, PrinterState::default())),
        }
    }

    fn paint(&self, colour: &str, text: &str) -> String {
        if self.options.colour {
            format!("{colour}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// The line(s) for one event, updating the running counters: one function per event kind.
    fn render(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        match &event.body {
            EventBody::RunStart { .. } => self.run_start(event, st),
            EventBody::NodeEnter { .. } => self.node_enter(event, st),
            EventBody::NodeExit { .. } => self.node_exit(event, st),
            EventBody::LoopIteration { .. } => self.loop_iteration(event),
            EventBody::RouteTaken { .. } => self.route_taken(event),
            EventBody::ToolCall { .. } => self.tool_call(event, st),
            EventBody::BudgetHit { .. } => self.budget_hit(event),
            EventBody::ApprovalRequested { .. } => self.approval_requested(event),
            EventBody::ApprovalDecided { .. } => self.approval_decided(event),
            EventBody::McpCall { .. } => self.mcp_call(event),
            EventBody::A2aMessage { .. } => self.a2a_message(event),
            EventBody::RunEnd { .. } => self.run_end(event, st),
        }
    }

    /// The line(s) of a `run.start` event.
    fn run_start(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        let EventBody::RunStart {
            composition,
            pattern,
            nodes,
            budgets,
            capture_content,
            dry_run_tools,
            ..
        } = &event.body
        else {
            return String::new();
        };
        st.max_tokens = budgets.max_tokens;
        st.max_tool_calls = budgets.max_tool_calls;
        st.max_delegations = budgets.max_delegations;
        st.max_remote_calls = budgets.max_remote_calls;
        st.timeout_seconds = budgets.timeout_seconds;
        let mut s = format!(
            "{} {} {} ({}), {} nodes, run {}\n  {}",
            self.paint(BOLD, "▶"),
            self.paint(BOLD, "run"),
            self.paint(BOLD, &shown(composition)),
            shown(pattern),
            nodes,
            event.run_id,
            self.paint(
                DIM,
                &format!(
                    "budgets: tokens {} · tool calls {} · delegations {} · remote calls {} · timeout {} s",
                    budgets.max_tokens,
                    budgets.max_tool_calls,
                    budgets.max_delegations,
                    budgets.max_remote_calls,
                    budgets.timeout_seconds
                )
            )
        );
        if *dry_run_tools {
            s.push_str(&format!(
                "\n  {}",
                self.paint(
                    YELLOW,
                    "dry run: remote tools are answered with dry-run text, nothing is called"
                )
            ));
        }
        if *capture_content {
            s.push_str(&format!(
                "\n  {}",
                self.paint(DIM, "content capture on (redacted, 2 KB per field)")
            ));
        }
        s
    }

    /// The line(s) of a `node.enter` event.
    fn node_enter(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        let EventBody::NodeEnter {
            node_id,
            kind,
            entry,
            depth,
            model,
            screen_flags,
            ..
        } = &event.body
        else {
            return String::new();
        };
        st.depth_of_entry.insert(*entry, *depth);
        let mut s = format!(
            "{}{} {}",
            indent(*depth),
            self.paint(CYAN, "→"),
            self.paint(BOLD, &shown(node_id))
        );
        s.push_str(&self.paint(DIM, &format!(" {}", shown(kind))));
        if let Some(m) = model {
            s.push_str(&self.paint(DIM, &format!(" · model {}", shown(m))));
        }
        if !screen_flags.is_empty() {
            s.push_str(&self.paint(
                YELLOW,
                &format!(" · screen flagged: {}", shown(&screen_flags.join(", "))),
            ));
        }
        s
    }

    /// The line(s) of a `node.exit` event.
    fn node_exit(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        let EventBody::NodeExit {
            node_id,
            entry,
            depth,
            status,
            tokens,
            duration_ms,
            label,
            error,
            ..
        } = &event.body
        else {
            return String::new();
        };
        st.depth_of_entry.remove(entry);
        st.tokens += tokens;
        let (mark, colour, word) = match status {
            NodeStatus::Ok => ("←", GREEN, "ok"),
            NodeStatus::Failed => ("✗", RED, "failed"),
            NodeStatus::Stopped => ("■", YELLOW, "stopped"),
            NodeStatus::Expired => ("✗", RED, "expired (a rejection)"),
        };
        let mut s = format!(
            "{}{} {} {}",
            indent(*depth),
            self.paint(colour, mark),
            shown(node_id),
            self.paint(colour, word)
        );
        if let Some(l) = label {
            s.push_str(&format!(" · label {}", self.paint(MAGENTA, &shown(l))));
        }
        if *tokens > 0 {
            s.push_str(&format!(" · {tokens} tok"));
        }
        s.push_str(&self.paint(DIM, &format!(" · {duration_ms} ms")));
        if *tokens > 0 {
            s.push_str(&self.paint(DIM, &format!("   [tokens {}/{}]", st.tokens, st.max_tokens)));
        }
        if let Some(e) = error {
            s.push_str(&format!(
                "\n{}  {}",
                indent(*depth),
                self.paint(RED, &shown(e))
            ));
        }
        s
    }

    /// The line(s) of a `loop.iteration` event.
    fn loop_iteration(&self, event: &TraceEvent) -> String {
        let EventBody::LoopIteration {
            head,
            tail,
            iteration,
            max,
            stopped,
        } = &event.body
        else {
            return String::new();
        };
        let (head, tail) = (shown(head), shown(tail));
        if *stopped {
            self.paint(
                YELLOW,
                &format!("↻ loop {tail} → {head} reached its cap ({max}): the branch ends with the answer under review"),
            )
        } else {
            self.paint(YELLOW, &format!("↻ loop {tail} → {head} {iteration}/{max}"))
        }
    }

    /// The line(s) of a `route.taken` event.
    fn route_taken(&self, event: &TraceEvent) -> String {
        let EventBody::RouteTaken { node_id, label, to } = &event.body else {
            return String::new();
        };
        let target = to
            .as_deref()
            .map_or_else(|| "(no edge: the branch ends)".to_owned(), shown);
        format!(
            "{} {} chose {} → {target}",
            self.paint(MAGENTA, "⤷"),
            shown(node_id),
            self.paint(MAGENTA, &shown(label))
        )
    }

    /// The line(s) of a `tool.call` event.
    fn tool_call(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        let EventBody::ToolCall {
            entry,
            tool,
            status,
            duration_ms,
            dry_run,
            error,
            ..
        } = &event.body
        else {
            return String::new();
        };
        st.tool_calls += 1;
        let depth = st.depth_of_entry.get(entry).copied().unwrap_or(0) + 1;
        let (colour, word) = match status {
            CallStatus::Ok => (GREEN, "ok"),
            CallStatus::Error => (RED, "error"),
            CallStatus::Refused => (RED, "refused"),
            CallStatus::Cancelled => (YELLOW, "cancelled"),
        };
        let mut s = format!(
            "{}{} {} {}",
            indent(depth),
            self.paint(BLUE, "⚙"),
            shown(tool),
            self.paint(colour, word)
        );
        s.push_str(&self.paint(DIM, &format!(" · {duration_ms} ms")));
        if *dry_run {
            s.push_str(&self.paint(YELLOW, " · dry run"));
        }
        s.push_str(&self.paint(
            DIM,
            &format!("   [tool calls {}/{}]", st.tool_calls, st.max_tool_calls),
        ));
        if let Some(e) = error {
            s.push_str(&format!(" {}", self.paint(RED, &shown(e))));
        }
        s
    }

    /// The line(s) of a `budget.hit` event.
    fn budget_hit(&self, event: &TraceEvent) -> String {
        let EventBody::BudgetHit {
            budget,
            limit,
            used,
            node_id,
        } = &event.body
        else {
            return String::new();
        };
        let at = node_id
            .as_deref()
            .map(|n| format!(" at node {}", shown(n)))
            .unwrap_or_default();
        self.paint(
            RED,
            &format!("! budget {budget} spent: {used} of {limit}{at}"),
        )
    }

    /// The line(s) of a `approval.requested` event.
    fn approval_requested(&self, event: &TraceEvent) -> String {
        let EventBody::ApprovalRequested {
            approval_id,
            node_id,
            kind,
            digest,
            size,
            expires_at,
            ..
        } = &event.body
        else {
            return String::new();
        };
        let short = shown(digest.get(..12).unwrap_or(digest));
        let (approval_id, node_id, expires_at) =
            (shown(approval_id), shown(node_id), shown(expires_at));
        self.paint(
            YELLOW,
            &format!("? {kind:?} {approval_id} at {node_id}: waiting for a person · sha256 {short}… · {size} bytes · expires {expires_at}"),
        )
    }

    /// The line(s) of a `approval.decided` event.
    fn approval_decided(&self, event: &TraceEvent) -> String {
        let EventBody::ApprovalDecided {
            approval_id,
            decision,
            wait_ms,
            ..
        } = &event.body
        else {
            return String::new();
        };
        let (colour, mark, word) = match decision {
            DecisionKind::Approved => (GREEN, "✓", "approved"),
            DecisionKind::Rejected => (RED, "✗", "rejected"),
            DecisionKind::Expired => (RED, "✗", "expired (a rejection)"),
            DecisionKind::Cancelled => (YELLOW, "■", "cancelled"),
        };
        format!(
            "{} {} {} after {} ms",
            self.paint(colour, mark),
            shown(approval_id),
            self.paint(colour, word),
            wait_ms
        )
    }

    /// The line(s) of a `mcp.call` event.
    fn mcp_call(&self, event: &TraceEvent) -> String {
        let EventBody::McpCall {
            entry,
            tool,
            status,
            duration_ms,
            ..
        } = &event.body
        else {
            return String::new();
        };
        format!(
            "  {} mcp {}.{} {status:?} · {duration_ms} ms",
            self.paint(BLUE, "⇄"),
            shown(entry),
            shown(tool)
        )
    }

    /// The line(s) of a `a2a.message` event.
    fn a2a_message(&self, event: &TraceEvent) -> String {
        let EventBody::A2aMessage {
            entry,
            skill,
            direction,
            task_state,
            size,
            ..
        } = &event.body
        else {
            return String::new();
        };
        let arrow = match direction {
            Direction::Outbound => "⇢",
            Direction::Inbound => "⇠",
        };
        let state = task_state
            .as_deref()
            .map(|s| format!(" · {}", shown(s)))
            .unwrap_or_default();
        format!(
            "  {} a2a {}.{} · {size} bytes{state}",
            self.paint(BLUE, arrow),
            shown(entry),
            shown(skill)
        )
    }

    /// The line(s) of a `run.end` event.
    fn run_end(&self, event: &TraceEvent, st: &mut PrinterState) -> String {
        let EventBody::RunEnd {
            outcome,
            error,
            totals,
            dropped,
            ..
        } = &event.body
        else {
            return String::new();
        };
        let colour = match outcome {
            super::Outcome::Succeeded => GREEN,
            super::Outcome::Cancelled => YELLOW,
            _ => RED,
        };
        let by_model = if totals.tokens_by_model.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = totals
                .tokens_by_model
                .iter()
                .map(|(m, t)| format!("{} {t}", shown(m)))
                .collect();
            format!(" ({})", parts.join(", "))
        };
        let mut s = format!(
            "{} {} in {:.2} s\n  tokens {}/{}{} · tool calls {}/{} · delegations {}/{} · remote calls {}/{} · events {} ({} dropped)",
            self.paint(colour, "■"),
            self.paint(colour, outcome.as_str()),
            totals.wall_time_ms as f64 / 1000.0,
            totals.tokens,
            st.max_tokens,
            by_model,
            totals.tool_calls,
            st.max_tool_calls,
            totals.delegations,
            st.max_delegations,
            totals.remote_calls,
            st.max_remote_calls,
            event.seq,
            dropped
        );
        if let Some(e) = error {
            let at = e
                .node
                .as_deref()
                .map(|n| format!("node {}: ", shown(n)))
                .unwrap_or_default();
            s.push_str(&format!(
                "\n  {}",
                self.paint(colour, &format!("{at}{}", shown(&e.message)))
            ));
        }
        s
    }
}

impl TerminalPrinter {
    /// Prints one event (events in `seq` order, one at a time). A closed output is ignored: a
    /// closed terminal must not stop a run.
    pub fn print(&self, event: &TraceEvent) {
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let (out, state) = &mut *guard;
        let line = self.render(event, state);
        // A closed terminal must not stop the run.
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// Writes out anything buffered.
    pub fn flush(&self) {
        let _ = self.out.lock().unwrap_or_else(|e| e.into_inner()).0.flush();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::budget::BudgetLimits;
    use crate::events::Outcome;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn ev(seq: u64, body: EventBody) -> TraceEvent {
        TraceEvent {
            seq,
            run_id: "r1".into(),
            ts: "2026-01-01T00:00:00.000Z".into(),
            body,
        }
    }

    fn print(colour: bool, events: &[TraceEvent]) -> String {
        let buf = Buf::default();
        let p = TerminalPrinter::new(Box::new(buf.clone()), PrinterOptions { colour });
        for e in events {
            p.print(e);
        }
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    fn sample() -> Vec<TraceEvent> {
        vec![
            ev(
                1,
                EventBody::RunStart {
                    composition: "critic-loop".into(),
                    pattern: "CriticLoop".into(),
                    nodes: 3,
                    budgets: BudgetLimits {
                        max_tokens: 1000,
                        max_tool_calls: 5,
                        max_delegations: 5,
                        max_remote_calls: 2,
                        timeout_seconds: 60,
                    },
                    capture_content: false,
                    dry_run_tools: true,
                    input_size: 5,
                    input: None,
                },
            ),
            ev(
                2,
                EventBody::NodeEnter {
                    node_id: "writer".into(),
                    kind: "LLMAgent".into(),
                    entry: 1,
                    depth: 0,
                    parent_entry: None,
                    model: Some("scripted".into()),
                    input_size: 5,
                    screen_flags: vec![],
                    input: None,
                },
            ),
            ev(
                3,
                EventBody::NodeExit {
                    node_id: "writer".into(),
                    kind: "LLMAgent".into(),
                    entry: 1,
                    depth: 0,
                    status: NodeStatus::Ok,
                    tokens: 120,
                    model_calls: 1,
                    calls: Vec::new(),
                    duration_ms: 3,
                    label: None,
                    answer_size: 10,
                    error: None,
                    answer: None,
                },
            ),
            ev(
                4,
                EventBody::LoopIteration {
                    head: "writer".into(),
                    tail: "critic".into(),
                    iteration: 2,
                    max: 3,
                    stopped: false,
                },
            ),
            ev(
                5,
                EventBody::RunEnd {
                    outcome: Outcome::Succeeded,
                    error: None,
                    totals: crate::run::RunTotals {
                        tokens: 120,
                        ..Default::default()
                    },
                    dropped: 0,
                    output_size: 10,
                    output: None,
                },
            ),
        ]
    }

    #[test]
    fn the_live_trace_shows_budgets_filling_loop_counters_and_a_summary() {
        let text = print(false, &sample());
        assert!(
            text.contains("→ writer LLMAgent · model scripted"),
            "{text}"
        );
        assert!(text.contains("[tokens 120/1000]"), "{text}");
        assert!(text.contains("loop critic → writer 2/3"), "{text}");
        assert!(text.contains("Succeeded in"), "{text}");
        assert!(text.contains("dry run"), "{text}");
    }

    #[test]
    fn escapes_in_event_text_are_printed_visibly_never_executed_rule_4_26() {
        let mut events = sample();
        events.insert(
            4,
            ev(
                5,
                EventBody::NodeExit {
                    node_id: "critic".into(),
                    kind: "LLMAgent".into(),
                    entry: 2,
                    depth: 0,
                    status: NodeStatus::Expired,
                    tokens: 0,
                    model_calls: 0,
                    calls: Vec::new(),
                    duration_ms: 1,
                    label: None,
                    answer_size: 0,
                    error: Some("bad\x1b[2K\rall good \u{202e}txt".into()),
                    answer: None,
                },
            ),
        );
        let text = print(false, &events);
        assert!(!text.contains('\x1b') && !text.contains('\r') && !text.contains('\u{202e}'));
        assert!(
            text.contains("bad\\x1b[2K\\rall good \\u{202e}txt [3 control or invisible characters shown escaped]"),
            "{text}"
        );
        assert!(text.contains("critic expired (a rejection)"), "{text}");
    }

    #[test]
    fn plain_output_has_no_escape_codes_and_colour_output_has_them() {
        assert!(!print(false, &sample()).contains('\x1b'));
        assert!(print(true, &sample()).contains('\x1b'));
    }
}
