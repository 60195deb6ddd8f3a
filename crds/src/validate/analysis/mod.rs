//! The graph analysis the validator and the planner share: one home for what a composition's
//! graph *is* (first node, reachability, back edges, loops, parallel sections, supervisor
//! tree). It never reports; the rule modules read it and report, and [`crate::plan`] builds
//! the plan from it.
//!
//! The main graph holds every node except later duplicates of an id and supervisor children,
//! and every edge whose ends are both main nodes, that is no self-loop and no repeat of an
//! earlier edge. Back edges come from a depth-first search (petgraph) from a virtual root
//! joined to every first node, in spec edge order, so results are deterministic.
//!
//! The first node is the one no forward edge enters (back edges do not count). Usually that is
//! a node no edge enters at all; when every node has an incoming edge (a critic loop that
//! starts at its head: `draft → review`, `review → draft` when `again`), it is the head of the
//! loop that nothing outside enters, see [`loop_head_first`].
//!
//! The walk of each Parallel's branches is its child module `sections`; its types are
//! re-exported here, where the rule modules find them.

mod sections;

use crate::composition::{CompositionSpec, NodeKind};
use petgraph::algo::dominators::{Dominators, simple_fast};
use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{DfsEvent, depth_first_search};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

pub(crate) use sections::{BranchEnd, SectionInfo};

/// Past this many nodes (far over the 30 allowed) the graph is not searched.
const GRAPH_ANALYSIS_NODE_CAP: usize = 1000;
/// Past this many edges (far over the 120 allowed) the graph is not searched.
const GRAPH_ANALYSIS_EDGE_CAP: usize = 5000;

/// The labels a HumanApproval routes on.
pub(crate) const APPROVAL_LABELS: [&str; 2] = ["approved", "rejected"];

/// One loop: a back edge and the nodes it repeats.
#[derive(Clone, Debug)]
pub(crate) struct LoopInfo {
    /// The back edge.
    pub back_edge: usize,
    /// Its target.
    pub head: usize,
    /// Its source.
    pub tail: usize,
    /// The natural loop of the back edge, in topological order (head first).
    pub body: Vec<usize>,
    /// The smallest loop whose body strictly holds this one's.
    pub parent: Option<usize>,
    /// 1 for an outermost loop.
    pub depth: u32,
    /// Whether the head dominates the tail (the loop has one entry: its head).
    pub single_entry: bool,
}

/// What the validator and planner know about a composition's graph.
pub(crate) struct Analysis<'a> {
    /// The spec analysed.
    pub spec: &'a CompositionSpec,
    /// Node index by id (first occurrence).
    pub index: HashMap<&'a str, usize>,
    /// Nodes left out: later duplicates of an id.
    pub ignored: Vec<bool>,
    /// Children per Supervisor node (known, distinct ids, in order).
    pub children: Vec<Vec<usize>>,
    /// The first Supervisor listing the node as a child.
    pub parent: Vec<Option<usize>>,
    /// Resolved ends of each edge.
    pub ends: Vec<Option<(usize, usize)>>,
    /// Whether the edge is on the main graph.
    pub in_graph: Vec<bool>,
    /// Main-graph edges out of each node, in spec order.
    pub out_edges: Vec<Vec<usize>>,
    /// Main-graph edges into each node, in spec order.
    pub in_edges: Vec<Vec<usize>>,
    /// Labels each node routes on (HumanApproval: approved, rejected).
    pub labels: Vec<Vec<String>>,
    /// The first node(s): the main nodes no edge enters, in spec order; when every main node has
    /// an incoming edge, the one loop head [`loop_head_first`] picks. Empty only when no node is
    /// on the main graph (every node is a supervisor's child).
    pub roots: Vec<usize>,
    /// Reached from some first node.
    pub reachable: Vec<bool>,
    /// Whether the edge closes a loop.
    pub back_edge: Vec<bool>,
    /// Loops, one per back edge, in edge order.
    pub loops: Vec<LoopInfo>,
    /// Parallel sections, in node order.
    pub sections: Vec<SectionInfo>,
    /// Topological order of the main graph (back edges ignored).
    pub order: Vec<usize>,
}

impl<'a> Analysis<'a> {
    /// Analyses a spec. Never fails: whatever is malformed is left out of the graph.
    pub fn new(spec: &'a CompositionSpec) -> Self {
        let n = spec.nodes.len();
        let mut index = HashMap::new();
        let mut ignored = vec![false; n];
        for (i, node) in spec.nodes.iter().enumerate() {
            if index.contains_key(node.id.as_str()) {
                ignored[i] = true;
            } else {
                index.insert(node.id.as_str(), i);
            }
        }
        let mut children = vec![Vec::new(); n];
        let mut parent = vec![None; n];
        for (i, node) in spec.nodes.iter().enumerate() {
            if ignored[i] || node.kind != NodeKind::Supervisor {
                continue;
            }
            for child in &node.children {
                if let Some(&c) = index.get(child.as_str())
                    && c != i
                    && !children[i].contains(&c)
                {
                    children[i].push(c);
                    if parent[c].is_none() {
                        parent[c] = Some(i);
                    }
                }
            }
        }
        let main = |i: usize| !ignored[i] && parent[i].is_none();
        let ends: Vec<Option<(usize, usize)>> = spec
            .edges
            .iter()
            .map(|e| Some((*index.get(e.from.as_str())?, *index.get(e.to.as_str())?)))
            .collect();
        let mut in_graph = vec![false; spec.edges.len()];
        let mut seen = HashSet::new();
        let mut out_edges = vec![Vec::new(); n];
        let mut in_edges = vec![Vec::new(); n];
        for (j, edge) in spec.edges.iter().enumerate() {
            let Some((f, t)) = ends[j] else { continue };
            if f == t || !main(f) || !main(t) || !seen.insert((f, t, edge.when.as_deref())) {
                continue;
            }
            in_graph[j] = true;
            out_edges[f].push(j);
            in_edges[t].push(j);
        }
        let labels = spec
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| node_labels(node, parent[i].is_some()))
            .collect();
        let mut roots: Vec<usize> = (0..n)
            .filter(|&i| main(i) && in_edges[i].is_empty())
            .collect();
        if roots.is_empty() {
            roots.extend(loop_head_first(spec, n, &main, &ends, &in_graph, &in_edges));
        }

        let mut analysis = Analysis {
            spec,
            index,
            ignored,
            children,
            parent,
            ends,
            in_graph,
            out_edges,
            in_edges,
            labels,
            roots,
            reachable: vec![false; n],
            back_edge: vec![false; spec.edges.len()],
            loops: Vec::new(),
            sections: Vec::new(),
            order: Vec::new(),
        };
        if n > GRAPH_ANALYSIS_NODE_CAP || spec.edges.len() > GRAPH_ANALYSIS_EDGE_CAP {
            // Far over the limits (refused as too_many_nodes / too_many_edges): skip the
            // recursive search rather than risk the stack on a hostile input.
            analysis.reachable = vec![true; n];
            return analysis;
        }
        analysis.find_loops();
        analysis.order = analysis.topological_order();
        for lp in &mut analysis.loops {
            let pos = position_map(&analysis.order);
            lp.body
                .sort_by_key(|v| pos.get(v).copied().unwrap_or(usize::MAX));
        }
        analysis.nest_loops();
        analysis.sections = (0..n)
            .filter(|&i| analysis.is_main(i) && spec.nodes[i].kind == NodeKind::Parallel)
            .map(|p| analysis.walk_section(p))
            .collect();
        analysis
    }

    /// Whether the node is on the main graph (not a duplicate, not a supervisor child).
    pub fn is_main(&self, i: usize) -> bool {
        !self.ignored.get(i).copied().unwrap_or(true)
            && self.parent.get(i).is_some_and(Option::is_none)
    }

    /// The node's kind.
    pub fn kind(&self, i: usize) -> Option<NodeKind> {
        self.spec.nodes.get(i).map(|n| n.kind)
    }

    /// The node's id ("" when out of range).
    pub fn id(&self, i: usize) -> &'a str {
        self.spec.nodes.get(i).map(|n| n.id.as_str()).unwrap_or("")
    }

    /// The target of an edge on the graph.
    pub fn target(&self, edge: usize) -> Option<usize> {
        self.ends.get(edge).copied().flatten().map(|(_, t)| t)
    }

    /// The source of an edge on the graph.
    pub fn source(&self, edge: usize) -> Option<usize> {
        self.ends.get(edge).copied().flatten().map(|(f, _)| f)
    }

    /// Whether the node routes on labels.
    pub fn labelled(&self, i: usize) -> bool {
        self.labels.get(i).is_some_and(|l| !l.is_empty())
    }

    /// Whether the node's answer can end the run: no outgoing edge, or a label with none.
    pub fn is_terminal(&self, i: usize) -> bool {
        let outs = &self.out_edges[i];
        outs.is_empty()
            || self.labels[i].iter().any(|label| {
                !outs
                    .iter()
                    .any(|&j| self.spec.edges[j].when.as_deref() == Some(label.as_str()))
            })
    }

    fn find_loops(&mut self) {
        let n = self.spec.nodes.len();
        let mut graph: DiGraph<(), usize> = DiGraph::with_capacity(n + 1, self.spec.edges.len());
        for _ in 0..=n {
            graph.add_node(());
        }
        let root = NodeIndex::new(n);
        // petgraph lists a node's neighbours newest first: add edges in reverse so the search
        // follows them in spec order.
        for j in (0..self.spec.edges.len()).rev() {
            if let (true, Some((f, t))) = (self.in_graph[j], self.ends[j]) {
                graph.add_edge(NodeIndex::new(f), NodeIndex::new(t), j);
            }
        }
        for &r in self.roots.iter().rev() {
            graph.add_edge(root, NodeIndex::new(r), usize::MAX);
        }
        let mut back_pairs = BTreeSet::new();
        let mut reached = vec![false; n + 1];
        depth_first_search(&graph, Some(root), |event| match event {
            DfsEvent::Discover(u, _) => reached[u.index()] = true,
            DfsEvent::BackEdge(u, v) => {
                back_pairs.insert((u.index(), v.index()));
            }
            _ => {}
        });
        self.reachable = reached.into_iter().take(n).collect();
        let doms = simple_fast(&graph, root);
        for j in 0..self.spec.edges.len() {
            let Some((tail, head)) = self.ends[j] else {
                continue;
            };
            if !self.in_graph[j] || !back_pairs.contains(&(tail, head)) {
                continue;
            }
            self.back_edge[j] = true;
            self.loops.push(LoopInfo {
                back_edge: j,
                head,
                tail,
                body: self.natural_loop(head, tail),
                parent: None,
                depth: 1,
                single_entry: dominates(&doms, head, tail),
            });
        }
    }

    /// The head and every node that reaches the tail without passing through the head.
    fn natural_loop(&self, head: usize, tail: usize) -> Vec<usize> {
        let mut body = BTreeSet::from([head, tail]);
        let mut queue = VecDeque::from([tail]);
        while let Some(v) = queue.pop_front() {
            if v == head {
                continue;
            }
            for &j in &self.in_edges[v] {
                if let Some(u) = self.source(j)
                    && self.reachable[u]
                    && body.insert(u)
                {
                    queue.push_back(u);
                }
            }
        }
        body.into_iter().collect()
    }

    fn nest_loops(&mut self) {
        let bodies: Vec<BTreeSet<usize>> = self
            .loops
            .iter()
            .map(|l| l.body.iter().copied().collect())
            .collect();
        for a in 0..self.loops.len() {
            self.loops[a].parent = (0..self.loops.len())
                .filter(|&b| {
                    b != a && bodies[a].len() < bodies[b].len() && bodies[a].is_subset(&bodies[b])
                })
                .min_by_key(|&b| (bodies[b].len(), b));
        }
        for a in 0..self.loops.len() {
            let mut depth = 1;
            let mut cur = self.loops[a].parent;
            // Each parent's body is strictly larger, so the chain is at most #loops long.
            while let Some(p) = cur
                && depth <= self.loops.len() as u32
            {
                depth += 1;
                cur = self.loops[p].parent;
            }
            self.loops[a].depth = depth;
        }
    }

    /// Kahn's algorithm on the main graph without back edges, lowest spec index first; nodes
    /// left on a cycle (only in a spec that does not validate) follow in spec order.
    fn topological_order(&self) -> Vec<usize> {
        let n = self.spec.nodes.len();
        let mut indegree = vec![0usize; n];
        for (j, (&on, &back)) in self.in_graph.iter().zip(&self.back_edge).enumerate() {
            if on
                && !back
                && let Some(t) = self.target(j)
            {
                indegree[t] += 1;
            }
        }
        let mut ready: BTreeSet<usize> = (0..n)
            .filter(|&i| self.is_main(i) && indegree[i] == 0)
            .collect();
        let mut order = Vec::with_capacity(n);
        let mut placed = vec![false; n];
        while let Some(v) = ready.pop_first() {
            order.push(v);
            placed[v] = true;
            for &j in &self.out_edges[v] {
                if self.back_edge[j] {
                    continue;
                }
                if let Some(t) = self.target(j) {
                    indegree[t] = indegree[t].saturating_sub(1);
                    if indegree[t] == 0 && !placed[t] {
                        ready.insert(t);
                    }
                }
            }
        }
        order.extend((0..n).filter(|&i| self.is_main(i) && !placed[i]));
        order
    }
}

/// The first node of a main graph in which every node has an incoming edge: such a graph starts
/// with a loop that nothing outside enters, so its first node is that loop's head, whose every
/// incoming edge is a back edge. The candidates are the nodes of the strongly connected
/// components no other component enters (petgraph's Kosaraju, which searches without
/// recursion); among them, the first in spec order whose every incoming edge carries
/// `maxIterations` (the author marked them as the edges that go back), else the first in spec
/// order (its loop is then reported as `unbounded_cycle`). `None` when no node is on the main
/// graph.
fn loop_head_first(
    spec: &CompositionSpec,
    n: usize,
    main: &dyn Fn(usize) -> bool,
    ends: &[Option<(usize, usize)>],
    in_graph: &[bool],
    in_edges: &[Vec<usize>],
) -> Option<usize> {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, ends.len());
    for _ in 0..n {
        graph.add_node(());
    }
    let on_graph = || {
        ends.iter()
            .zip(in_graph)
            .filter_map(|(end, &on)| if on { *end } else { None })
    };
    for (f, t) in on_graph() {
        graph.add_edge(NodeIndex::new(f), NodeIndex::new(t), ());
    }
    let mut component = vec![usize::MAX; n];
    for (c, members) in kosaraju_scc(&graph).iter().enumerate() {
        for v in members {
            component[v.index()] = c;
        }
    }
    let mut entered = HashSet::new();
    for (f, t) in on_graph() {
        if component[f] != component[t] {
            entered.insert(component[t]);
        }
    }
    let candidates: Vec<usize> = (0..n)
        .filter(|&i| main(i) && !entered.contains(&component[i]))
        .collect();
    let marked = |i: usize| {
        in_edges[i].iter().all(|&j| {
            spec.edges
                .get(j)
                .is_some_and(|e| e.max_iterations.is_some())
        })
    };
    candidates
        .iter()
        .copied()
        .find(|&i| marked(i))
        .or_else(|| candidates.first().copied())
}

/// The labels a node routes on.
fn node_labels(node: &crate::composition::Node, is_child: bool) -> Vec<String> {
    match node.kind {
        NodeKind::HumanApproval => APPROVAL_LABELS.iter().map(|s| (*s).to_owned()).collect(),
        NodeKind::LlmAgent | NodeKind::Router | NodeKind::Supervisor if !is_child => {
            let mut labels: Vec<String> = Vec::new();
            for label in node.output.iter().flat_map(|o| &o.labels) {
                if !labels.contains(label) {
                    labels.push(label.clone());
                }
            }
            labels
        }
        _ => Vec::new(),
    }
}

fn dominates(doms: &Dominators<NodeIndex>, head: usize, tail: usize) -> bool {
    doms.dominators(NodeIndex::new(tail))
        .is_some_and(|mut it| it.any(|d| d.index() == head))
}

/// Position of each node in an order.
pub(crate) fn position_map(order: &[usize]) -> HashMap<usize, usize> {
    order.iter().enumerate().map(|(pos, &v)| (v, pos)).collect()
}
