//! The walk over a seed spec: every key checked, every problem collected with its JSON path.

use super::{ImportOptions, SPEC_VERSION, display_path};
use crate::CompositionSpec;
use crate::budget::Budgets;
use crate::common::{Loc, PathSegment, ValidationIssue};
use crate::composition::{Edge, ID_PATTERN, Node, NodeKind, NodeOutput, Pattern};
use regex::Regex;
use serde_json::{Map, Value};
use std::sync::LazyLock;

static ID: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(ID_PATTERN).ok());
/// A Kubernetes object name (RFC 1123 subdomain).
static OBJECT_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").ok()
});

/// Walks the JSON, collecting problems.
#[derive(Default)]
pub(super) struct Reader {
    /// Every problem found so far.
    pub(super) problems: Vec<ValidationIssue>,
    /// The edges read so far, (from, to, when) → their index, to refuse one listed twice.
    seen_edges: Vec<(EdgeKey, usize)>,
}

/// What makes two edges the same one: (from, to, when).
type EdgeKey = (String, String, Option<String>);

fn at(loc: &[PathSegment], key: impl Into<PathSegment>) -> Loc {
    let mut out = loc.to_vec();
    out.push(key.into());
    out
}

impl Reader {
    fn problem(&mut self, loc: Loc, code: &str, message: impl Into<String>) {
        self.problems.push(ValidationIssue {
            field: display_path(&loc),
            loc,
            code: code.to_owned(),
            message: message.into(),
        });
    }

    /// The object at `loc`, with unknown keys reported.
    fn object<'v>(
        &mut self,
        value: &'v Value,
        loc: &[PathSegment],
        keys: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = value else {
            self.problem(loc.to_vec(), "invalid_type", "expected an object");
            return None;
        };
        for key in map.keys().filter(|k| !keys.contains(&k.as_str())) {
            self.problem(
                at(loc, key.as_str()),
                "unknown_key",
                format!("unknown key {key:?}; the keys here are {}", keys.join(", ")),
            );
        }
        Some(map)
    }

    /// An optional string (absent and null are none).
    fn string(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        loc: &[PathSegment],
    ) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.problem(at(loc, key), "invalid_type", "expected a string");
                None
            }
        }
    }

    fn required_string(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        loc: &[PathSegment],
    ) -> Option<String> {
        if matches!(map.get(key), None | Some(Value::Null)) {
            self.problem(at(loc, key), "missing_key", format!("{key} is required"));
            return None;
        }
        self.string(map, key, loc)
    }

    fn unsigned(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        loc: &[PathSegment],
        min: u64,
    ) -> Option<u64> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n >= min => Some(n),
                _ => {
                    self.problem(
                        at(loc, key),
                        "invalid_value",
                        format!("expected a whole number of at least {min}"),
                    );
                    None
                }
            },
        }
    }

    fn array<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        key: &str,
        loc: &[PathSegment],
    ) -> &'v [Value] {
        match map.get(key) {
            None | Some(Value::Null) => &[],
            Some(Value::Array(items)) => items,
            Some(_) => {
                self.problem(at(loc, key), "invalid_type", "expected a list");
                &[]
            }
        }
    }

    /// An id (node id, label, child) checked against our id pattern.
    fn id(&mut self, value: &Value, loc: Loc) -> Option<String> {
        let Value::String(s) = value else {
            self.problem(loc, "invalid_type", "expected a string");
            return None;
        };
        if !ID.as_ref().is_some_and(|re| re.is_match(s)) {
            self.problem(loc, "invalid_id", format!("{s:?} does not match {ID_PATTERN} (lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters); rename it in the spec"));
            return None;
        }
        Some(s.clone())
    }

    pub(super) fn spec(
        &mut self,
        value: &Value,
        options: &ImportOptions,
    ) -> Option<(String, CompositionSpec)> {
        let root: Loc = Vec::new();
        let keys = [
            "spec_version",
            "name",
            "pattern",
            "budgets",
            "nodes",
            "edges",
        ];
        let map = self.object(value, &root, &keys)?;
        match map.get("spec_version") {
            None => self.problem(at(&root, "spec_version"), "missing_spec_version", "spec_version is required (this import reads spec_version 1)"),
            Some(v) => match v.as_u64() {
                Some(SPEC_VERSION) => {}
                Some(n) if n > SPEC_VERSION => self.problem(at(&root, "spec_version"), "unsupported_spec_version", format!("spec_version {n} is newer than this import reads ({SPEC_VERSION}); upgrade orrery")),
                _ => self.problem(at(&root, "spec_version"), "invalid_value", format!("spec_version must be {SPEC_VERSION}")),
            },
        }
        let spec_name = self.string(map, "name", &root);
        let name = match (&options.name, spec_name) {
            (Some(given), _) => {
                if !is_object_name(given) {
                    self.problem(root.clone(), "invalid_name", format!("the name {given:?} given with -n is not a valid Kubernetes name (lowercase letters, digits, '-' and '.')"));
                }
                Some(given.clone())
            }
            (None, Some(name)) => {
                if !is_object_name(&name) {
                    self.problem(at(&root, "name"), "invalid_name", format!("{name:?} is not a valid Kubernetes name (lowercase letters, digits, '-' and '.', at most 253 characters); pass another with -n NAME"));
                }
                Some(name)
            }
            (None, None) => {
                self.problem(
                    at(&root, "name"),
                    "missing_key",
                    "the spec has no name; pass one with -n NAME",
                );
                None
            }
        };
        let pattern = self.pattern(map, &root);
        let budgets = match map.get("budgets") {
            None | Some(Value::Null) => Budgets::default(),
            Some(b) => self.budgets(b, &at(&root, "budgets")),
        };
        let nodes_loc = at(&root, "nodes");
        if matches!(map.get("nodes"), None | Some(Value::Null)) {
            self.problem(nodes_loc.clone(), "missing_key", "nodes is required");
        }
        let nodes: Vec<Node> = self
            .array(map, "nodes", &root)
            .iter()
            .enumerate()
            .filter_map(|(i, n)| self.node(n, &at(&nodes_loc, i)))
            .collect();
        let edges_loc = at(&root, "edges");
        let edges: Vec<Edge> = self
            .array(map, "edges", &root)
            .iter()
            .enumerate()
            .filter_map(|(i, e)| self.edge(e, &at(&edges_loc, i)).map(|edge| (i, edge)))
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|(i, edge)| self.once(&edges_loc, i, edge))
            .collect();
        self.seen_edges.clear();
        let spec = CompositionSpec {
            description: None,
            pattern: pattern?,
            budgets,
            nodes,
            edges,
        };
        Some((name?, spec))
    }

    fn pattern(&mut self, map: &Map<String, Value>, root: &[PathSegment]) -> Option<Pattern> {
        let text = self.required_string(map, "pattern", root)?;
        let pattern = match text.as_str() {
            "pipeline" => Pattern::Pipeline,
            "router" => Pattern::Router,
            "critic_loop" => Pattern::CriticLoop,
            "fan_out_fan_in" => Pattern::FanOutFanIn,
            "supervisor" => Pattern::Supervisor,
            "debate" => Pattern::Debate,
            "map_reduce" => Pattern::MapReduce,
            "plan_and_execute" => Pattern::PlanAndExecute,
            "handoff" => Pattern::Handoff,
            other => {
                self.problem(
                    at(root, "pattern"),
                    "invalid_value",
                    format!("unknown pattern {other:?}"),
                );
                return None;
            }
        };
        Some(pattern)
    }

    fn budgets(&mut self, value: &Value, loc: &[PathSegment]) -> Budgets {
        let keys = [
            "max_tokens",
            "max_tool_calls",
            "max_delegations",
            "max_remote_calls",
            "timeout_s",
        ];
        let Some(map) = self.object(value, loc, &keys) else {
            return Budgets::default();
        };
        Budgets {
            max_tokens: self.unsigned(map, "max_tokens", loc, 1),
            max_tool_calls: self.unsigned(map, "max_tool_calls", loc, 0),
            max_delegations: self.unsigned(map, "max_delegations", loc, 0),
            max_remote_calls: self.unsigned(map, "max_remote_calls", loc, 0),
            timeout_seconds: self.unsigned(map, "timeout_s", loc, 1),
        }
    }

    fn node(&mut self, value: &Value, loc: &[PathSegment]) -> Option<Node> {
        let keys = [
            "id",
            "kind",
            "model",
            "instruction",
            "tools",
            "output",
            "prompt",
            "description",
            "children",
        ];
        let map = self.object(value, loc, &keys)?;
        let id = match map.get("id") {
            None | Some(Value::Null) => {
                self.problem(at(loc, "id"), "missing_key", "id is required");
                None
            }
            Some(v) => self.id(v, at(loc, "id")),
        };
        let kind = self.required_string(map, "kind", loc).and_then(|k| {
            let kind = match k.as_str() {
                "llm_agent" => NodeKind::LlmAgent,
                "remote_a2a" => NodeKind::RemoteA2a,
                "router" => NodeKind::Router,
                "parallel" => NodeKind::Parallel,
                "join" => NodeKind::Join,
                "supervisor" => NodeKind::Supervisor,
                "human_approval" => NodeKind::HumanApproval,
                other => {
                    self.problem(
                        at(loc, "kind"),
                        "invalid_value",
                        format!("unknown node kind {other:?}"),
                    );
                    return None;
                }
            };
            Some(kind)
        });
        let tools_loc = at(loc, "tools");
        let tools = self
            .array(map, "tools", loc)
            .iter()
            .enumerate()
            .filter_map(|(i, t)| self.tool(t, at(&tools_loc, i)))
            .collect();
        let output = match map.get("output") {
            None | Some(Value::Null) => None,
            Some(o) => self.output(o, &at(loc, "output")),
        };
        let children_loc = at(loc, "children");
        let children = self
            .array(map, "children", loc)
            .iter()
            .enumerate()
            .filter_map(|(i, c)| self.id(c, at(&children_loc, i)))
            .collect();
        Some(Node {
            id: id?,
            kind: kind?,
            description: self.string(map, "description", loc),
            instruction: self.string(map, "instruction", loc),
            tools,
            model: self.string(map, "model", loc),
            output,
            children,
            prompt: self.string(map, "prompt", loc),
        })
    }

    fn tool(&mut self, value: &Value, loc: Loc) -> Option<String> {
        let Value::String(s) = value else {
            self.problem(loc, "invalid_type", "expected a tool reference string");
            return None;
        };
        if s.starts_with("catalog:") {
            self.problem(loc, "catalog_tool", format!("{s:?} names a deployment catalogue tool, which has no equivalent here; serve it from an MCP server and reference it as mcp:<entry>.<tool>"));
            return None;
        }
        Some(s.clone())
    }

    fn output(&mut self, value: &Value, loc: &[PathSegment]) -> Option<NodeOutput> {
        let map = self.object(value, loc, &["labels"])?;
        let labels_loc = at(loc, "labels");
        let labels = self
            .array(map, "labels", loc)
            .iter()
            .enumerate()
            .filter_map(|(i, l)| self.id(l, at(&labels_loc, i)))
            .collect();
        Some(NodeOutput { labels })
    }

    fn edge(&mut self, value: &Value, loc: &[PathSegment]) -> Option<Edge> {
        let map = self.object(
            value,
            loc,
            &["from", "to", "when", "max_iterations", "screen"],
        )?;
        let from = self.required_string(map, "from", loc);
        let to = self.required_string(map, "to", loc);
        let when = self.string(map, "when", loc);
        let max_iterations = self.unsigned(map, "max_iterations", loc, 0).and_then(|n| {
            u32::try_from(n)
                .map_err(|_| {
                    self.problem(
                        at(loc, "max_iterations"),
                        "invalid_value",
                        "max_iterations is too large",
                    )
                })
                .ok()
        });
        let screen = match map.get("screen") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.problem(at(loc, "screen"), "invalid_type", "expected true or false");
                false
            }
        };
        Some(Edge {
            from: from?,
            to: to?,
            when,
            max_iterations,
            screen,
        })
    }
}

impl Reader {
    /// The edge, unless the seed already listed the same one (from, to, when): the runner would
    /// take the first and never the second, so a seed that lists one twice is refused, naming
    /// both places (`duplicate_edge`, as the validator does for a Composition, rule 1.35).
    fn once(&mut self, edges_loc: &[PathSegment], index: usize, edge: Edge) -> Option<Edge> {
        let key = (edge.from.clone(), edge.to.clone(), edge.when.clone());
        if let Some((_, first)) = self.seen_edges.iter().find(|(k, _)| *k == key) {
            let first = *first;
            let when = edge
                .when
                .as_deref()
                .map(|w| format!(" when {w:?}"))
                .unwrap_or_default();
            self.problem(
                at(edges_loc, index),
                crate::codes::DUPLICATE_EDGE,
                format!(
                    "the edge {:?} → {:?}{when} is already edges[{first}]; list each edge once",
                    edge.from, edge.to
                ),
            );
            return None;
        }
        self.seen_edges.push((key, index));
        Some(edge)
    }
}

fn is_object_name(name: &str) -> bool {
    name.len() <= 253 && OBJECT_NAME.as_ref().is_some_and(|re| re.is_match(name))
}
