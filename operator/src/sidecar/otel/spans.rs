//! A run's trace events as OpenTelemetry spans, built as the events arrive: [`RunSpans::push`]
//! takes the next event in `seq` order and gives back the spans that event ended, so spans go
//! out while the run goes on, not only at its end.
//!
//! The span tree of a run:
//! - the run: a root span from `run.start` to `run.end` (`loop.iteration`, `route.taken` and
//!   `budget.hit` are its span events; its status is the run's outcome);
//! - a span per node entry (`node.enter` → `node.exit`), a child of the run, or of the
//!   supervisor entry that called it; parallel branches and a loop's reruns are siblings;
//! - under a node: a span per model call (`chat <model>`, from the `calls` its `node.exit`
//!   lists, with the provider, the model and the tokens as `gen_ai.usage.*`), a span per tool
//!   call (`tool.call`, which carries its duration), and under that the MCP call (`mcp.call`)
//!   or the A2A exchange (`a2a.message` out → in);
//! - under the approval node: a span per approval that covers the wait (`approval.requested`
//!   → `approval.decided`).
//!
//! Ids are derived, never random: the trace id is the run's UID (a UUID is 16 bytes), a span's
//! id is a hash of the UID and the span's place in the run, so a run exported again, by another
//! replica or after a restart, is the same trace with the same spans.
//!
//! Attributes follow the OpenTelemetry GenAI conventions where one fits (`gen_ai.operation.name`,
//! `gen_ai.agent.name`, `gen_ai.request.model`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, …),
//! and ours are under `orrery.*`. Content (inputs, answers, tool arguments and results,
//! approval text) is in the events only when the run captured it, redacted and cut by the
//! runner as the store holds it; it becomes attributes only with [`RunSpans::new`]'s `content`.

use crate::otel::proto::{
    KIND_CLIENT, KIND_INTERNAL, KeyValue, STATUS_ERROR, STATUS_OK, STATUS_UNSET, Span, SpanEvent,
    Status,
};
pub use crate::otel::{span_id, trace_id, unix_nanos};
use orrery_crds::events::{
    CallStatus, Direction, EventBody, ModelCall, NodeStatus, Outcome, TraceEvent,
};
use std::collections::HashMap;

/// The run a trace belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunIdentity {
    /// The StudioRun's UID.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

fn millis(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

/// A span begun and not yet ended.
#[derive(Debug)]
struct Open {
    span: Span,
}

impl Open {
    fn end(mut self, at: u64, status: Option<Status>) -> Span {
        self.span.end_time_unix_nano = at.max(self.span.start_time_unix_nano);
        if status.is_some() {
            self.span.status = status;
        }
        self.span
    }
}

fn error(message: impl Into<String>) -> Option<Status> {
    Some(Status {
        message: message.into(),
        code: STATUS_ERROR,
    })
}

/// One run's spans, built event by event.
#[derive(Debug)]
pub struct RunSpans {
    run: RunIdentity,
    trace: [u8; 16],
    content: bool,
    /// The `seq` the next event should have.
    next_seq: u64,
    root: Option<Open>,
    /// Node entries begun, by entry id.
    nodes: HashMap<u64, Open>,
    /// A node's latest entry, for the events that name the node but not the entry.
    latest: HashMap<String, u64>,
    approvals: HashMap<String, Open>,
    /// A2A exchanges sent and not yet answered, by call id.
    exchanges: HashMap<String, Open>,
    ended: bool,
}

impl RunSpans {
    /// The spans of `run`; `content` lets captured content become attributes.
    pub fn new(run: RunIdentity, content: bool) -> RunSpans {
        RunSpans {
            trace: trace_id(&run.uid),
            run,
            content,
            next_seq: 1,
            root: None,
            nodes: HashMap::new(),
            latest: HashMap::new(),
            approvals: HashMap::new(),
            exchanges: HashMap::new(),
            ended: false,
        }
    }

    /// The `seq` the next event should have (events before it were taken).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Whether `run.end` was taken: nothing more will come.
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn id(&self, place: &str) -> Vec<u8> {
        span_id(&self.run.uid, place).to_vec()
    }

    fn root_id(&self) -> Vec<u8> {
        self.id(crate::otel::RUN_SPAN)
    }

    fn node_id(&self, entry: u64) -> Vec<u8> {
        self.id(&format!("node/{entry}"))
    }

    fn tool_id(&self, entry: Option<u64>, call_id: &str) -> Vec<u8> {
        match entry {
            Some(entry) => self.id(&format!("tool/{entry}/{call_id}")),
            None => self.id(&format!("tool/-/{call_id}")),
        }
    }

    fn open(&self, place: &str, parent: Vec<u8>, name: String, kind: i32, start: u64) -> Open {
        Open {
            span: Span {
                trace_id: self.trace.to_vec(),
                span_id: self.id(place),
                parent_span_id: parent,
                name,
                kind,
                start_time_unix_nano: start,
                end_time_unix_nano: start,
                attributes: vec![KeyValue::string("orrery.run.uid", &self.run.uid)],
                events: Vec::new(),
                status: None,
            },
        }
    }

    fn content_attr(&self, attrs: &mut Vec<KeyValue>, key: &str, text: &Option<String>) {
        if self.content
            && let Some(text) = text
        {
            attrs.push(KeyValue::string(key, text.as_str()));
        }
    }

    /// The span of a node entry's `index`th model call (GenAI `chat`), a client span under
    /// the entry's span `parent` (which began at `began`), placed by the call's offset.
    fn model_call_span(
        &self,
        entry: u64,
        index: usize,
        parent: Vec<u8>,
        began: u64,
        call: &ModelCall,
    ) -> Span {
        let start = began.saturating_add(millis(call.start_ms));
        let mut open = self.open(
            &format!("node/{entry}/model/{index}"),
            parent,
            format!("chat {}", call.model),
            KIND_CLIENT,
            start,
        );
        open.span.attributes.extend([
            KeyValue::string("gen_ai.operation.name", "chat"),
            KeyValue::string("gen_ai.provider.name", call.provider.as_str()),
            KeyValue::string("gen_ai.request.model", call.model.as_str()),
            KeyValue::int("gen_ai.usage.input_tokens", call.input_tokens),
            KeyValue::int("gen_ai.usage.output_tokens", call.output_tokens),
            KeyValue::int("orrery.node.entry", entry),
        ]);
        let state = call.error.as_deref().map(|why| {
            open.span.events.push(SpanEvent {
                time_unix_nano: start.saturating_add(millis(call.duration_ms)),
                name: "exception".into(),
                attributes: vec![KeyValue::string("exception.message", why)],
            });
            Status {
                message: why.to_owned(),
                code: STATUS_ERROR,
            }
        });
        open.end(start.saturating_add(millis(call.duration_ms)), state)
    }

    /// Adds a span event to the run's root span (kept until the run ends).
    fn root_event(&mut self, at: u64, name: &str, attributes: Vec<KeyValue>) {
        if let Some(root) = self.root.as_mut() {
            root.span.events.push(SpanEvent {
                time_unix_nano: at,
                name: name.to_owned(),
                attributes,
            });
        }
    }

    /// Takes the next event; the spans it ended, to export. An event out of order (a `seq`
    /// other than [`RunSpans::next_seq`]) or after `run.end` is ignored.
    pub fn push(&mut self, event: &TraceEvent) -> Vec<Span> {
        if self.ended || event.seq != self.next_seq {
            return Vec::new();
        }
        self.next_seq += 1;
        let at = unix_nanos(&event.ts);
        let mut done = Vec::new();
        match &event.body {
            EventBody::RunStart {
                composition,
                pattern,
                nodes,
                capture_content,
                dry_run_tools,
                input_size,
                input,
                ..
            } => {
                let mut root = self.open(
                    crate::otel::RUN_SPAN,
                    Vec::new(),
                    format!("run {composition}"),
                    KIND_INTERNAL,
                    at,
                );
                let attrs = &mut root.span.attributes;
                attrs.extend([
                    KeyValue::string("orrery.run.namespace", &self.run.namespace),
                    KeyValue::string("orrery.run.name", &self.run.name),
                    KeyValue::string("orrery.composition", composition.as_str()),
                    KeyValue::string("orrery.pattern", pattern.as_str()),
                    KeyValue::int("orrery.nodes", *nodes as u64),
                    KeyValue::bool("orrery.capture_content", *capture_content),
                    KeyValue::bool("orrery.dry_run_tools", *dry_run_tools),
                    KeyValue::int("orrery.input.size", *input_size as u64),
                    KeyValue::string("gen_ai.operation.name", "invoke_workflow"),
                ]);
                let mut extra = Vec::new();
                self.content_attr(&mut extra, "orrery.run.input", input);
                root.span.attributes.extend(extra);
                self.root = Some(root);
            }
            EventBody::RunEnd {
                outcome,
                error: why,
                totals,
                dropped,
                output_size,
                output,
            } => {
                self.ended = true;
                // What was still open ends with the run: stopped by it.
                let mut rest: Vec<Open> = self.approvals.drain().map(|(_, o)| o).collect();
                rest.extend(self.exchanges.drain().map(|(_, o)| o));
                rest.extend(self.nodes.drain().map(|(_, o)| o));
                for open in rest {
                    done.push(open.end(at, error("the run ended before this ended")));
                }
                if let Some(mut root) = self.root.take() {
                    let attrs = &mut root.span.attributes;
                    attrs.extend([
                        KeyValue::string("orrery.outcome", outcome.as_str()),
                        KeyValue::int("orrery.tokens", totals.tokens),
                        KeyValue::int("orrery.tool_calls", totals.tool_calls),
                        KeyValue::int("orrery.delegations", totals.delegations),
                        KeyValue::int("orrery.remote_calls", totals.remote_calls),
                        KeyValue::int("orrery.events_dropped", *dropped),
                        KeyValue::int("orrery.output.size", *output_size as u64),
                    ]);
                    for (model, tokens) in &totals.tokens_by_model {
                        attrs.push(KeyValue::int(&format!("orrery.tokens.{model}"), *tokens));
                    }
                    let mut extra = Vec::new();
                    self.content_attr(&mut extra, "orrery.run.output", output);
                    root.span.attributes.extend(extra);
                    let status = match outcome {
                        Outcome::Succeeded => Some(Status {
                            message: String::new(),
                            code: STATUS_OK,
                        }),
                        other => error(match why {
                            Some(e) => match &e.node {
                                Some(node) => {
                                    format!("{}: node {node}: {}", other.as_str(), e.message)
                                }
                                None => format!("{}: {}", other.as_str(), e.message),
                            },
                            None => other.as_str().to_owned(),
                        }),
                    };
                    done.push(root.end(at, status));
                }
            }
            EventBody::NodeEnter {
                node_id,
                kind,
                entry,
                depth,
                parent_entry,
                model,
                input_size,
                screen_flags,
                input,
            } => {
                let parent = match parent_entry {
                    Some(p) => self.node_id(*p),
                    None => self.root_id(),
                };
                let agent = matches!(kind.as_str(), "LLMAgent" | "Supervisor");
                let name = if agent {
                    format!("invoke_agent {node_id}")
                } else {
                    format!("{kind} {node_id}")
                };
                let mut open = self.open(&format!("node/{entry}"), parent, name, KIND_INTERNAL, at);
                let attrs = &mut open.span.attributes;
                if agent {
                    attrs.push(KeyValue::string("gen_ai.operation.name", "invoke_agent"));
                    attrs.push(KeyValue::string("gen_ai.agent.name", node_id.as_str()));
                }
                if let Some(model) = model {
                    attrs.push(KeyValue::string("gen_ai.request.model", model.as_str()));
                }
                attrs.extend([
                    KeyValue::string("orrery.node.id", node_id.as_str()),
                    KeyValue::string("orrery.node.kind", kind.as_str()),
                    KeyValue::int("orrery.node.entry", *entry),
                    KeyValue::int("orrery.node.depth", u64::from(*depth)),
                    KeyValue::int("orrery.input.size", *input_size as u64),
                ]);
                if !screen_flags.is_empty() {
                    attrs.push(KeyValue::string(
                        "orrery.screen_flags",
                        screen_flags.join(","),
                    ));
                }
                let mut extra = Vec::new();
                self.content_attr(&mut extra, "gen_ai.input.messages", input);
                open.span.attributes.extend(extra);
                self.latest.insert(node_id.clone(), *entry);
                self.nodes.insert(*entry, open);
            }
            EventBody::NodeExit {
                entry,
                status,
                tokens,
                model_calls,
                calls,
                label,
                answer_size,
                error: why,
                answer,
                ..
            } => {
                if let Some(mut open) = self.nodes.remove(entry) {
                    let began = open.span.start_time_unix_nano;
                    let node_span = open.span.span_id.clone();
                    for (i, call) in calls.iter().enumerate() {
                        done.push(self.model_call_span(*entry, i, node_span.clone(), began, call));
                    }
                    let attrs = &mut open.span.attributes;
                    attrs.extend([
                        KeyValue::string(
                            "orrery.node.status",
                            match status {
                                NodeStatus::Ok => "ok",
                                NodeStatus::Failed => "failed",
                                NodeStatus::Stopped => "stopped",
                                NodeStatus::Expired => "expired",
                            },
                        ),
                        KeyValue::int("orrery.tokens", *tokens),
                        KeyValue::int("orrery.model_calls", u64::from(*model_calls)),
                        KeyValue::int("orrery.answer.size", *answer_size as u64),
                    ]);
                    if let Some(label) = label {
                        attrs.push(KeyValue::string("orrery.label", label.as_str()));
                    }
                    let mut extra = Vec::new();
                    self.content_attr(&mut extra, "gen_ai.output.messages", answer);
                    open.span.attributes.extend(extra);
                    let state = match (status, why) {
                        (NodeStatus::Ok, _) => None,
                        (NodeStatus::Failed, Some(why)) => {
                            open.span.events.push(SpanEvent {
                                time_unix_nano: at,
                                name: "exception".into(),
                                attributes: vec![KeyValue::string(
                                    "exception.message",
                                    why.as_str(),
                                )],
                            });
                            error(why.as_str())
                        }
                        (NodeStatus::Failed, None) => error("the node failed"),
                        (NodeStatus::Stopped, _) => error("stopped"),
                        (NodeStatus::Expired, _) => error("nobody decided in time"),
                    };
                    done.push(open.end(at, state));
                }
            }
            EventBody::LoopIteration {
                head,
                tail,
                iteration,
                max,
                stopped,
            } => self.root_event(
                at,
                "orrery.loop.iteration",
                vec![
                    KeyValue::string("orrery.loop.head", head.as_str()),
                    KeyValue::string("orrery.loop.tail", tail.as_str()),
                    KeyValue::int("orrery.loop.iteration", u64::from(*iteration)),
                    KeyValue::int("orrery.loop.max", u64::from(*max)),
                    KeyValue::bool("orrery.loop.stopped", *stopped),
                ],
            ),
            EventBody::RouteTaken { node_id, label, to } => {
                let mut attrs = vec![
                    KeyValue::string("orrery.node.id", node_id.as_str()),
                    KeyValue::string("orrery.label", label.as_str()),
                ];
                if let Some(to) = to {
                    attrs.push(KeyValue::string("orrery.route.to", to.as_str()));
                }
                self.root_event(at, "orrery.route", attrs);
            }
            EventBody::BudgetHit {
                budget,
                limit,
                used,
                node_id,
            } => {
                let mut attrs = vec![
                    KeyValue::string("orrery.budget", budget.as_str()),
                    KeyValue::int("orrery.budget.limit", *limit),
                    KeyValue::int("orrery.budget.used", *used),
                ];
                if let Some(node) = node_id {
                    attrs.push(KeyValue::string("orrery.node.id", node.as_str()));
                }
                self.root_event(at, "orrery.budget.hit", attrs);
            }
            EventBody::ToolCall {
                node_id: _,
                entry,
                tool,
                reference,
                call_id,
                status,
                duration_ms,
                dry_run,
                result_size,
                error: why,
                arguments,
                result,
            } => {
                let start = at.saturating_sub(millis(*duration_ms));
                let mut open = self.open(
                    &format!("tool/{entry}/{call_id}"),
                    self.node_id(*entry),
                    format!("execute_tool {tool}"),
                    KIND_INTERNAL,
                    start,
                );
                let attrs = &mut open.span.attributes;
                attrs.extend([
                    KeyValue::string("gen_ai.operation.name", "execute_tool"),
                    KeyValue::string("gen_ai.tool.name", tool.as_str()),
                    KeyValue::string("gen_ai.tool.call.id", call_id.as_str()),
                    KeyValue::string("orrery.tool.status", call_status(*status)),
                    KeyValue::int("orrery.result.size", *result_size as u64),
                ]);
                if !reference.is_empty() {
                    attrs.push(KeyValue::string(
                        "orrery.tool.reference",
                        reference.as_str(),
                    ));
                }
                if *dry_run {
                    attrs.push(KeyValue::bool("orrery.tool.dry_run", true));
                }
                let mut extra = Vec::new();
                self.content_attr(&mut extra, "gen_ai.tool.call.arguments", arguments);
                self.content_attr(&mut extra, "gen_ai.tool.call.result", result);
                open.span.attributes.extend(extra);
                let state = call_state(*status, why.as_deref());
                done.push(open.end(at, state));
            }
            EventBody::McpCall {
                node_id,
                entry,
                tool,
                call_id,
                status,
                duration_ms,
                result_size,
                arguments,
                result,
            } => {
                let node_entry = self.latest.get(node_id).copied();
                let place = format!("mcp/{}/{call_id}", node_entry.map_or(0, |e| e));
                let start = at.saturating_sub(millis(*duration_ms));
                let mut open = self.open(
                    &place,
                    self.tool_id(node_entry, call_id),
                    format!("tools/call {tool}"),
                    KIND_CLIENT,
                    start,
                );
                let attrs = &mut open.span.attributes;
                attrs.extend([
                    KeyValue::string("mcp.method.name", "tools/call"),
                    KeyValue::string("gen_ai.tool.name", tool.as_str()),
                    KeyValue::string("gen_ai.tool.call.id", call_id.as_str()),
                    KeyValue::string("orrery.registry_entry", entry.as_str()),
                    KeyValue::string("orrery.tool.status", call_status(*status)),
                    KeyValue::int("orrery.result.size", *result_size as u64),
                ]);
                let mut extra = Vec::new();
                self.content_attr(&mut extra, "gen_ai.tool.call.arguments", arguments);
                self.content_attr(&mut extra, "gen_ai.tool.call.result", result);
                open.span.attributes.extend(extra);
                done.push(open.end(at, call_state(*status, None)));
            }
            EventBody::A2aMessage {
                node_id,
                entry,
                skill,
                call_id,
                direction,
                method,
                task_state,
                size,
                text,
            } => match direction {
                Direction::Outbound => {
                    let node_entry = self.latest.get(node_id).copied();
                    let place = format!("a2a/{}/{call_id}", node_entry.map_or(0, |e| e));
                    let method = method.as_deref().unwrap_or("SendMessage");
                    let mut open = self.open(
                        &place,
                        self.tool_id(node_entry, call_id),
                        format!("{method} {skill}"),
                        KIND_CLIENT,
                        at,
                    );
                    let attrs = &mut open.span.attributes;
                    attrs.extend([
                        KeyValue::string("orrery.registry_entry", entry.as_str()),
                        KeyValue::string("orrery.a2a.skill", skill.as_str()),
                        KeyValue::string("orrery.a2a.method", method),
                        KeyValue::string("gen_ai.tool.call.id", call_id.as_str()),
                        KeyValue::int("orrery.request.size", *size as u64),
                    ]);
                    let mut extra = Vec::new();
                    self.content_attr(&mut extra, "orrery.a2a.request", text);
                    open.span.attributes.extend(extra);
                    self.exchanges.insert(call_id.clone(), open);
                }
                Direction::Inbound => {
                    if let Some(mut open) = self.exchanges.remove(call_id) {
                        open.span
                            .attributes
                            .push(KeyValue::int("orrery.reply.size", *size as u64));
                        if let Some(state) = task_state {
                            open.span
                                .attributes
                                .push(KeyValue::string("orrery.a2a.task_state", state.as_str()));
                        }
                        let mut extra = Vec::new();
                        self.content_attr(&mut extra, "orrery.a2a.reply", text);
                        open.span.attributes.extend(extra);
                        let state = match task_state.as_deref() {
                            Some("failed" | "rejected" | "canceled") => error(format!(
                                "the remote task ended {}",
                                task_state.as_deref().unwrap_or_default()
                            )),
                            _ => None,
                        };
                        done.push(open.end(at, state));
                    }
                }
            },
            EventBody::ApprovalRequested {
                approval_id,
                node_id,
                kind,
                size,
                complete,
                expires_at,
                text,
                ..
            } => {
                let parent = match self.latest.get(node_id) {
                    Some(entry) => self.node_id(*entry),
                    None => self.root_id(),
                };
                let mut open = self.open(
                    &format!("approval/{approval_id}"),
                    parent,
                    format!("approval {node_id}"),
                    KIND_INTERNAL,
                    at,
                );
                let attrs = &mut open.span.attributes;
                attrs.extend([
                    KeyValue::string("orrery.approval.id", approval_id.as_str()),
                    KeyValue::string("orrery.approval.kind", kind.as_str()),
                    KeyValue::string("orrery.node.id", node_id.as_str()),
                    KeyValue::int("orrery.approval.size", *size),
                    KeyValue::bool("orrery.approval.complete", *complete),
                    KeyValue::string("orrery.approval.expires_at", expires_at.as_str()),
                ]);
                let mut extra = Vec::new();
                self.content_attr(&mut extra, "orrery.approval.text", text);
                open.span.attributes.extend(extra);
                self.approvals.insert(approval_id.clone(), open);
            }
            EventBody::ApprovalDecided {
                approval_id,
                decision,
                wait_ms,
                comment,
                ..
            } => {
                if let Some(mut open) = self.approvals.remove(approval_id) {
                    open.span.attributes.extend([
                        KeyValue::string("orrery.approval.decision", decision.as_str()),
                        KeyValue::int("orrery.approval.wait_ms", *wait_ms),
                    ]);
                    let mut extra = Vec::new();
                    self.content_attr(&mut extra, "orrery.approval.comment", comment);
                    open.span.attributes.extend(extra);
                    let state = Some(Status {
                        message: String::new(),
                        code: STATUS_UNSET,
                    });
                    done.push(open.end(at, state));
                }
            }
        }
        done
    }
}

fn call_status(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Ok => "ok",
        CallStatus::Error => "error",
        CallStatus::Refused => "refused",
        CallStatus::Cancelled => "cancelled",
    }
}

fn call_state(status: CallStatus, why: Option<&str>) -> Option<Status> {
    match status {
        CallStatus::Ok => None,
        other => error(match why {
            Some(why) => format!("{}: {why}", call_status(other)),
            None => call_status(other).to_owned(),
        }),
    }
}

#[cfg(test)]
#[path = "spans_tests.rs"]
mod tests;
