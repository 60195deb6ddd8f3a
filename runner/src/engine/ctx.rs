//! The state one run shares across its nodes, branches and delegations.

use super::{ModelBinding, RunOptions};
use crate::approval::People;
use crate::events::{EventBody, NodeStatus, Outcome, Trace};
use crate::ledger::{BudgetHit, Ledger};
use crate::tools::Tool;
use orrery_crds::plan::{NodeIdx, Plan, PlannedTool};
use orrery_crds::run::RunError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// A node's tool: what the plan says, and the built tool.
#[derive(Clone)]
pub(crate) struct NodeTool {
    pub planned: PlannedTool,
    pub tool: Arc<dyn Tool>,
}

/// Why the run is ending (the first reason stands).
#[derive(Clone, Debug)]
pub(crate) struct Ending {
    pub outcome: Outcome,
    pub error: Option<RunError>,
}

/// The ending, and whether the run is past the point where one can still be decided.
#[derive(Default)]
struct EndState {
    ending: Option<Ending>,
    /// The walk is over: nothing (a late deadline, a straggling task) changes the outcome now.
    sealed: bool,
}

/// One run's shared state.
pub(crate) struct RunCtx {
    pub plan: Plan,
    pub models: BTreeMap<String, ModelBinding>,
    pub node_tools: Vec<Vec<NodeTool>>,
    pub trace: Trace,
    pub ledger: Arc<Ledger>,
    pub people: Arc<People>,
    /// Fires when the run must stop: an external cancel, a budget, a failure.
    pub token: CancellationToken,
    pub max_tool_rounds: u32,
    ending: Mutex<EndState>,
    next_entry: AtomicU64,
    /// Open entries (entered, not yet exited) and their node ids.
    running: Mutex<BTreeMap<u64, String>>,
}

/// An open node entry (between its `node.enter` and `node.exit`).
pub(crate) struct OpenEntry {
    pub idx: NodeIdx,
    pub entry: u64,
    pub depth: u32,
    pub started: Instant,
}

/// What a node's `node.exit` reports.
#[derive(Default)]
pub(crate) struct ExitReport {
    pub tokens: u64,
    pub model_calls: u32,
    /// Each model call (answered, failed or cancelled), for `node.exit`'s `calls`.
    pub calls: Vec<orrery_crds::events::ModelCall>,
    pub label: Option<String>,
    pub answer: Option<String>,
    pub error: Option<String>,
}

impl RunCtx {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: Plan,
        models: BTreeMap<String, ModelBinding>,
        node_tools: Vec<Vec<NodeTool>>,
        trace: Trace,
        ledger: Arc<Ledger>,
        people: Arc<People>,
        token: CancellationToken,
        options: &RunOptions,
    ) -> Self {
        RunCtx {
            plan,
            models,
            node_tools,
            trace,
            ledger,
            people,
            token,
            max_tool_rounds: options.max_tool_rounds.max(1),
            ending: Mutex::new(EndState::default()),
            next_entry: AtomicU64::new(1),
            running: Mutex::new(BTreeMap::new()),
        }
    }

    fn end_state(&self) -> std::sync::MutexGuard<'_, EndState> {
        self.ending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the run with `outcome` (the first call wins) and stops everything in flight.
    /// Returns true when this call decided the ending. Once the run is sealed it does nothing.
    pub fn end(&self, outcome: Outcome, node: Option<&str>, message: String) -> bool {
        {
            let mut state = self.end_state();
            if state.sealed {
                return false;
            }
            if state.ending.is_some()
                || (self.token.is_cancelled() && outcome != Outcome::BudgetExhausted)
            {
                drop(state);
                self.token.cancel();
                return false;
            }
            state.ending = Some(Ending {
                outcome,
                error: Some(RunError {
                    node: node.map(str::to_owned),
                    message,
                }),
            });
        }
        self.token.cancel();
        true
    }

    /// Ends the run `BudgetExhausted` with a `budget.hit` event (once, for the first budget),
    /// naming `node`. Every `BudgetExhausted` ending goes through here (rule 3.4).
    pub fn budget_hit(&self, hit: BudgetHit, node: Option<&str>) {
        let nodes: Vec<String> = node.map(str::to_owned).into_iter().collect();
        self.budget_hit_at(hit, &nodes);
    }

    /// Ends the run `BudgetExhausted` with a `budget.hit` event, naming the nodes that were
    /// running: one node is named as the node; several are listed in the message, and the hit
    /// is the run's. Nothing happens once the run is sealed (it already finished).
    pub fn budget_hit_at(&self, hit: BudgetHit, running: &[String]) {
        let node = match running {
            [one] => Some(one.as_str()),
            _ => None,
        };
        let during = if running.len() > 1 {
            format!(" while nodes {} were running", running.join(", "))
        } else {
            String::new()
        };
        let message = format!(
            "budget {} is spent ({} of {}){during}; raise spec.budgets.{} or simplify the composition",
            hit.budget, hit.used, hit.limit, hit.budget
        );
        let decided = {
            let mut state = self.end_state();
            if state.sealed || state.ending.is_some() {
                false
            } else {
                state.ending = Some(Ending {
                    outcome: Outcome::BudgetExhausted,
                    error: Some(RunError {
                        node: node.map(str::to_owned),
                        message,
                    }),
                });
                true
            }
        };
        if decided {
            self.trace.emit(EventBody::BudgetHit {
                budget: hit.budget,
                limit: hit.limit,
                used: hit.used,
                node_id: node.map(str::to_owned),
            });
            self.token.cancel();
        } else if !self.is_sealed() {
            self.token.cancel();
        }
    }

    /// Marks the walk as over: from now on nothing changes the run's outcome.
    pub fn seal(&self) {
        self.end_state().sealed = true;
    }

    /// Whether the walk is over.
    pub fn is_sealed(&self) -> bool {
        self.end_state().sealed
    }

    /// The ending, once decided (taken: called once, when the run ends).
    pub fn take_ending(&self) -> Option<Ending> {
        self.end_state().ending.take()
    }

    /// The nodes running now (entered and not exited), in the order they were entered, each
    /// once.
    pub fn running_nodes(&self) -> Vec<String> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mut nodes: Vec<String> = Vec::new();
        for node in running.values() {
            if !nodes.contains(node) {
                nodes.push(node.clone());
            }
        }
        nodes
    }

    /// Emits `node.enter` and opens an entry.
    pub fn enter(
        &self,
        idx: NodeIdx,
        depth: u32,
        parent_entry: Option<u64>,
        input: &str,
        screen_flags: Vec<String>,
    ) -> OpenEntry {
        let node = &self.plan.nodes[idx];
        let entry = self.next_entry.fetch_add(1, Ordering::SeqCst);
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(entry, node.id.clone());
        self.trace.emit(EventBody::NodeEnter {
            node_id: node.id.clone(),
            kind: node.kind.as_str().to_owned(),
            entry,
            depth,
            parent_entry,
            model: if node.kind.calls_model() {
                node.model.clone()
            } else {
                None
            },
            input_size: input.len(),
            screen_flags,
            input: self.trace.content(input),
        });
        OpenEntry {
            idx,
            entry,
            depth,
            started: Instant::now(),
        }
    }

    /// Emits `node.exit` for an entry.
    pub fn exit(&self, open: &OpenEntry, status: NodeStatus, report: ExitReport) {
        let node = &self.plan.nodes[open.idx];
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&open.entry);
        self.trace.emit(EventBody::NodeExit {
            node_id: node.id.clone(),
            kind: node.kind.as_str().to_owned(),
            entry: open.entry,
            depth: open.depth,
            status,
            tokens: report.tokens,
            model_calls: report.model_calls,
            calls: report.calls,
            duration_ms: u64::try_from(open.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            label: report.label,
            answer_size: report.answer.as_ref().map_or(0, String::len),
            error: report.error,
            answer: report.answer.as_deref().and_then(|a| self.trace.content(a)),
        });
    }

    /// Fails the node of `open` and the run with it.
    pub fn fail(&self, open: &OpenEntry, message: String, report: ExitReport) {
        let node_id = self.plan.nodes[open.idx].id.clone();
        self.exit(
            open,
            NodeStatus::Failed,
            ExitReport {
                error: Some(message.clone()),
                ..report
            },
        );
        self.end(Outcome::Failed, Some(&node_id), message);
    }
}
