//! Reading the runner's module graph from its sources, for `tests/modules.rs`: which module
//! names which, by the `crate::`, `super::` and `self::` paths in its files (see there).
#![allow(clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its crate (`lib` or `bin`) and the names down to it (`["lib", "engine", "walk"]`).
pub type ModPath = Vec<String>;

/// For every folder module, its modules and the modules of the same folder each one names, with
/// the files naming them (for the failure message).
pub type Graph = BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>;

/// What is known of the crate before its paths are followed: its modules, and what each module
/// re-exports by `pub use` (the name, and the path it stands for: a module and the names after it).
#[derive(Default)]
struct Tree {
    modules: BTreeSet<ModPath>,
    reexports: BTreeMap<(ModPath, String), (ModPath, Vec<String>)>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as its path relative to `src` (`/`-separated) and its text.
fn read_sources(dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            read_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src()).expect("a file under src");
            let name: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let text = std::fs::read_to_string(&path).expect("read a source file");
            out.insert(name.join("/"), text);
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The source with its comments and the insides of its string and character literals blanked,
/// so that only code is read (a `crate::` in a doc link or a message is no dependency).
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let word_start = !is_ident(out.chars().next_back().unwrap_or(' '));
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // A raw string: `r"…"`, `r#"…"#`, `br"…"`.
        let raw_at = if c == 'b' && at(i + 1) == 'r' {
            i + 1
        } else {
            i
        };
        if word_start && at(raw_at) == 'r' {
            let hashes = (raw_at + 1..).take_while(|&j| at(j) == '#').count();
            if at(raw_at + 1 + hashes) == '"' {
                let mut j = raw_at + 2 + hashes;
                while j < chars.len()
                    && !(chars[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#'))
                {
                    j += 1;
                }
                out.push_str("\"\"");
                i = j + 1 + hashes;
                continue;
            }
        }
        if c == '"' || (word_start && c == 'b' && at(i + 1) == '"') {
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
            continue;
        }
        // A character literal (`'x'`, `'\n'`, `'{'`); a lifetime (`'static`) is code.
        if c == '\'' {
            if at(i + 1) == '\\' {
                let mut j = i + 3;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
                continue;
            }
            if at(i + 2) == '\'' {
                out.push_str("' '");
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The use tree or path starting at `chars[*i]` (an identifier): every path it names, each with
/// its alias (`a as b`). `{a, b::{c, d}}` groups are followed; a path ends where the next token
/// is neither `::` nor a group (`walk::walk(`, `Vec::<T>`).
fn use_tree(chars: &[char], i: &mut usize) -> Vec<(Vec<String>, Option<String>)> {
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let skip_space = |i: &mut usize| {
        while at(*i).is_whitespace() {
            *i += 1;
        }
    };
    skip_space(i);
    if at(*i) == '{' {
        *i += 1;
        let mut out = Vec::new();
        loop {
            skip_space(i);
            match at(*i) {
                '}' => {
                    *i += 1;
                    return out;
                }
                ',' => *i += 1,
                '\0' => return out,
                _ => {
                    let before = *i;
                    out.extend(use_tree(chars, i));
                    if *i == before {
                        *i += 1; // not a path: step over it
                    }
                }
            }
        }
    }
    if at(*i) == '*' {
        *i += 1;
        return vec![(vec!["*".to_owned()], None)];
    }
    let start = *i;
    while is_ident(at(*i)) {
        *i += 1;
    }
    if start == *i {
        return Vec::new();
    }
    let name: String = chars[start..*i].iter().collect();
    if at(*i) == ':'
        && at(*i + 1) == ':'
        && (is_ident(at(*i + 2)) || matches!(at(*i + 2), '{' | '*'))
    {
        *i += 2;
        return use_tree(chars, i)
            .into_iter()
            .map(|(mut rest, alias)| {
                rest.insert(0, name.clone());
                (rest, alias)
            })
            .collect();
    }
    let mut j = *i;
    while at(j).is_whitespace() {
        j += 1;
    }
    if at(j) == 'a' && at(j + 1) == 's' && at(j + 2).is_whitespace() {
        j += 2;
        while at(j).is_whitespace() {
            j += 1;
        }
        let alias_start = j;
        while is_ident(at(j)) {
            j += 1;
        }
        let alias: String = chars[alias_start..j].iter().collect();
        *i = j;
        return vec![(vec![name], Some(alias))];
    }
    vec![(vec![name], None)]
}

/// Every path in `code` that starts at `crate`, `super` or `self`, with its offset in `code`
/// (in characters).
fn rooted_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let before = if i == 0 { ' ' } else { chars[i - 1] };
        if !is_ident(chars[i]) || is_ident(before) {
            i += 1;
            continue;
        }
        let start = i;
        let word: String = chars[i..].iter().take_while(|c| is_ident(**c)).collect();
        let rooted = matches!(word.as_str(), "crate" | "super" | "self")
            && !matches!(before, ':' | '$')
            && chars.get(i + word.len()) == Some(&':');
        if rooted {
            let mut j = i;
            for (path, _) in use_tree(&chars, &mut j) {
                out.push((start, path));
            }
            i = j.max(i + word.len());
        } else {
            i += word.len();
        }
    }
    out
}

/// The `mod name {` blocks of `code`: each one's name and span (in characters).
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut open: Vec<(Option<String>, usize)> = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '{' => {
                let (name, before) = word_before(&chars, i);
                let (keyword, _) = word_before(&chars, before);
                let is_mod = keyword == "mod" && !name.is_empty();
                open.push((is_mod.then_some(name), i));
            }
            '}' => {
                if let Some((Some(name), start)) = open.pop() {
                    out.push((name, start, i));
                }
            }
            _ => {}
        }
    }
    out
}

/// The identifier that ends right before `chars[end]` (whitespace between them skipped), and
/// where it starts.
fn word_before(chars: &[char], end: usize) -> (String, usize) {
    let mut i = end;
    while i > 0 && chars[i - 1].is_whitespace() {
        i -= 1;
    }
    let stop = i;
    while i > 0 && is_ident(chars[i - 1]) {
        i -= 1;
    }
    (chars[i..stop].iter().collect(), i)
}

/// The names of the `mod name;` declarations in `text`.
fn declared_modules(code: &str) -> Vec<String> {
    code.split(';')
        .filter_map(|statement| {
            let statement = statement.trim_end();
            let (head, name) = statement.rsplit_once(char::is_whitespace)?;
            let is_mod = head.trim_end().ends_with("mod");
            (is_mod && !name.is_empty() && name.chars().all(is_ident)).then(|| name.to_owned())
        })
        .collect()
}

/// Where the use tree of every `pub use` / `pub(…) use` in `code` starts.
fn reexport_trees(code: &[char]) -> Vec<usize> {
    let mut out = Vec::new();
    for i in 0..code.len() {
        let (word, start) = word_before(code, i);
        if word != "use" || start + 3 != i || !code[i].is_whitespace() {
            continue;
        }
        let mut before = start;
        while before > 0 && code[before - 1].is_whitespace() {
            before -= 1;
        }
        if before > 0 && code[before - 1] == ')' {
            // `pub(crate) use`: step back over the parenthesis
            while before > 0 && code[before - 1] != '(' {
                before -= 1;
            }
            before = before.saturating_sub(1);
        }
        if word_before(code, before).0 == "pub" {
            out.push(i);
        }
    }
    out
}

/// The module of every file, from its place under `src`: `engine/mod.rs` is `engine`,
/// `engine/walk.rs` is `engine::walk`, and a file named by `#[path = "x_tests.rs"] mod tests;`
/// in `dir/x.rs` is `dir::x::tests`. The modules `main.rs` declares are the binary's.
fn module_paths(files: &BTreeMap<String, String>) -> BTreeMap<String, ModPath> {
    let bin_modules = files
        .get("main.rs")
        .map(|t| declared_modules(&code_of(t)))
        .unwrap_or_default();
    let plain = |file: &str| -> ModPath {
        let mut parts: Vec<&str> = file.split('/').collect();
        let last = parts.pop().unwrap_or_default();
        let root = match (parts.first(), last) {
            (None, "main.rs") => return vec!["bin".to_owned()],
            (None, "lib.rs") => return vec!["lib".to_owned()],
            (Some(first), _) if bin_modules.iter().any(|m| m == first) => "bin",
            (None, _) if bin_modules.iter().any(|m| format!("{m}.rs") == last) => "bin",
            _ => "lib",
        };
        let mut path = vec![root.to_owned()];
        path.extend(parts.iter().map(|p| (*p).to_owned()));
        if last != "mod.rs" {
            path.push(last.trim_end_matches(".rs").to_owned());
        }
        path
    };
    let mut out: BTreeMap<String, ModPath> = files.keys().map(|f| (f.clone(), plain(f))).collect();
    for (file, text) in files {
        let dir = file
            .rsplit_once('/')
            .map(|(d, _)| format!("{d}/"))
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (n, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix("#[path = \"") else {
                continue;
            };
            let target = rest.split('"').next().unwrap_or_default();
            let declaration = lines[n + 1..].iter().find(|l| !l.starts_with("#["));
            if let Some(name) = declaration.and_then(|l| declared_modules(l).pop()) {
                let mut module = plain(file);
                module.push(name);
                out.insert(format!("{dir}{target}"), module);
            }
        }
    }
    out
}

impl Tree {
    /// The crate's modules and re-exports.
    fn of(files: &BTreeMap<String, String>, modules: &BTreeMap<String, ModPath>) -> Tree {
        let mut tree = Tree {
            modules: modules.values().cloned().collect(),
            ..Tree::default()
        };
        for (file, text) in files {
            let module = &modules[file];
            let code: Vec<char> = code_of(text).chars().collect();
            for mut start in reexport_trees(&code) {
                for (path, alias) in use_tree(&code, &mut start) {
                    let Some(name) = alias.or_else(|| path.last().cloned()) else {
                        continue;
                    };
                    if name == "*" {
                        continue; // a glob re-export names nothing in particular
                    }
                    let base = match path.first().map(String::as_str) {
                        Some("crate" | "super" | "self") => Some((module.clone(), path)),
                        Some(first) => {
                            let mut child = module.clone();
                            child.push(first.to_owned());
                            // a path into a child module; any other is another crate's
                            let mut relative = vec!["self".to_owned()];
                            relative.extend(path);
                            tree.modules
                                .contains(&child)
                                .then_some((module.clone(), relative))
                        }
                        None => None,
                    };
                    if let Some(target) = base {
                        tree.reexports.insert((module.clone(), name), target);
                    }
                }
            }
        }
        tree
    }

    /// The module a path written in module `from` names: as far down the tree as its names are
    /// modules, following re-exports; `None` for a path that leaves the crate.
    fn resolve(&self, from: &[String], path: &[String], hops: u32) -> Option<ModPath> {
        let mut at: ModPath = from.to_vec();
        let mut rest = path;
        while let Some((first, tail)) = rest.split_first() {
            match first.as_str() {
                "crate" => at.truncate(1),
                "super" => {
                    at.pop();
                    if at.is_empty() {
                        return None;
                    }
                }
                "self" => {}
                _ => break,
            }
            rest = tail;
        }
        // an inline module (`mod tests {`) is not in the tree: start from its file's module
        while !self.modules.contains(&at) && at.len() > 1 {
            at.pop();
        }
        for name in rest {
            let mut child = at.clone();
            child.push(name.clone());
            if self.modules.contains(&child) {
                at = child;
                continue;
            }
            if let Some((base, target)) = self.reexports.get(&(at.clone(), name.clone()))
                && hops < 8
            {
                return self.resolve(base, target, hops + 1);
            }
            break;
        }
        Some(at)
    }
}

/// The dependency graph of every folder module of the crate whose files are `files`.
pub fn graph_of(files: &BTreeMap<String, String>) -> Graph {
    let modules = module_paths(files);
    let tree = Tree::of(files, &modules);
    let mut graph = Graph::new();
    for (file, text) in files {
        let code = code_of(text);
        let inline = inline_modules(&code);
        for (offset, path) in rooted_paths(&code) {
            let mut from = modules[file].clone();
            let mut enclosing: Vec<&(String, usize, usize)> = inline
                .iter()
                .filter(|(_, start, end)| *start < offset && offset < *end)
                .collect();
            enclosing.sort_by_key(|(_, start, _)| *start);
            from.extend(enclosing.iter().map(|(name, _, _)| name.clone()));
            let Some(to) = tree.resolve(&from, &path, 0) else {
                continue;
            };
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared == 0 || shared >= from.len() || shared >= to.len() {
                continue; // another crate, or a module and its own ancestor or descendant
            }
            graph
                .entry(from[..shared].to_vec())
                .or_default()
                .entry(from[shared].clone())
                .or_default()
                .entry(to[shared].clone())
                .or_default()
                .insert(file.clone());
        }
    }
    graph
}

/// The runner's graph, read from `runner/src`.
pub fn graph() -> Graph {
    let mut files = BTreeMap::new();
    read_sources(&src(), &mut files);
    graph_of(&files)
}

/// The groups of modules of one folder that depend on each other (each at least two modules,
/// and every module of a group reaches every other).
pub fn cycles(
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for node in edges.keys() {
        if groups.iter().any(|g| g.contains(node)) {
            continue;
        }
        let from_node = reach(node);
        let group: BTreeSet<String> = from_node
            .iter()
            .filter(|other| reach(other).contains(node))
            .cloned()
            .collect();
        if !group.is_empty() {
            groups.push(group);
        }
    }
    groups
}

/// The cycles of the folders `which` picks, written out with the files naming each edge.
pub fn report(graph: &Graph, which: impl Fn(&ModPath) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, edges) in graph.iter().filter(|(folder, _)| which(folder)) {
        for group in cycles(edges) {
            let steps: Vec<String> = group
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|(to, _)| group.contains(*to))
                        .map(move |(to, files)| format!("  {from} -> {to} (in {files:?})"))
                })
                .collect();
            out.push(format!(
                "in {}: {} depend on each other:\n{}",
                folder.join("::"),
                group.iter().cloned().collect::<Vec<_>>().join(", "),
                steps.join("\n")
            ));
        }
    }
    out
}
