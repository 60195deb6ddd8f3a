//! `docs/behaviour.md` is the project's own list of the behaviour it guarantees, numbered so
//! that a comment or a test name can cite it ("rule 2.13", "rules 4.14, 4.15", "rules
//! 5.22–5.40", "seed rules §4a", `..._rule_2_13`). These tests keep the two sides honest:
//!
//! - every rule or section cited anywhere in the workspace's `.rs` files, `docs/*.md` and the
//!   top-level `*.md` files is numbered in `docs/behaviour.md` (so a reader of the code never
//!   needs the seeds' checklist), and so is every number in the rule column of
//!   `docs/validation-codes.md`;
//! - every test `docs/behaviour.md` names as proof exists, as a `fn` in the file it names, and
//!   every rule says how it is proven (`Tests:`), or that it is `Not yet tested` or `Not
//!   applicable here`; numbers run without gaps inside each section, each under its own section;
//! - no rule says `Not yet tested` while test code cites it (the document must not lag the tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Directories never walked.
const SKIP_DIRS: &[&str] = &["target", ".git", "node_modules"];

/// This file holds sample citations for its own tests; it is the checker, not a citer.
const SELF_PATH: &str = "crds/tests/behaviour_doc.rs";

const DOC: &str = "docs/behaviour.md";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// What a citation names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Cited {
    /// `rule 2.13`
    Rule(u32, u32),
    /// `rules 6.x` or `seed rules §9`
    Section(u32),
    /// `seed rules §4a`
    Subsection(u32, char),
}

impl std::fmt::Display for Cited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cited::Rule(s, n) => write!(f, "rule {s}.{n}"),
            Cited::Section(s) => write!(f, "section §{s}"),
            Cited::Subsection(s, c) => write!(f, "section §{s}{c}"),
        }
    }
}

/// One item of a citation list, before ranges are expanded.
const ITEM: &str = r"(?:§\d+[a-z]?|\d+\.(?:\d+|x)\b)";

/// `rule 1.2`, `rules 1.2, 1.4–1.6 and 2.x`, `rules 4.1/4.2`, `seed rules §9, §4a`.
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\brules?\s+({ITEM}(?:\s*(?:[-–—]|,|/|\band\b|\bor\b)\s*{ITEM})*)"
    ))
    .expect("the prose pattern compiles")
});

static ITEMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(§\d+[a-z]?|\d+\.(?:\d+|x)\b)(?:\s*[-–—]\s*(\d+\.\d+))?")
        .expect("the item pattern compiles")
});

/// `..._rule_2_13`, `..._rules_4_14_4_15` in identifiers.
static IDENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\b|_)rules?((?:_\d+_\d+)+)(?:_|\b)")
        .expect("the identifier pattern compiles")
});

/// Every number (or section) one citation list names; ranges (`5.22–5.24`) name every rule in
/// between.
fn expand(list: &str) -> Vec<Cited> {
    let mut out = Vec::new();
    for item in ITEMS.captures_iter(list) {
        let first = &item[1];
        if let Some(sec) = first.strip_prefix('§') {
            let (digits, letter): (String, String) = sec.chars().partition(char::is_ascii_digit);
            let n: u32 = digits.parse().expect("digits");
            out.push(match letter.chars().next() {
                Some(c) => Cited::Subsection(n, c.to_ascii_lowercase()),
                None => Cited::Section(n),
            });
            continue;
        }
        let (s, n) = first.split_once('.').expect("a dotted number");
        let s: u32 = s.parse().expect("digits");
        if n.eq_ignore_ascii_case("x") {
            out.push(Cited::Section(s));
            continue;
        }
        let n: u32 = n.parse().expect("digits");
        match item
            .get(2)
            .map(|m| m.as_str().split_once('.').expect("a dotted number"))
        {
            Some((s2, n2)) if s2.parse::<u32>().ok() == Some(s) => {
                let n2: u32 = n2.parse().expect("digits");
                out.extend((n..=n2.max(n)).map(|k| Cited::Rule(s, k)));
            }
            // a range across sections names its two ends
            Some((s2, n2)) => {
                out.push(Cited::Rule(s, n));
                out.push(Cited::Rule(
                    s2.parse().expect("digits"),
                    n2.parse().expect("digits"),
                ));
            }
            None => out.push(Cited::Rule(s, n)),
        }
    }
    out
}

/// The citations in one file's text, each with its 1-based line and the text that cited it.
/// Lines are joined (comment markers removed) so a list wrapped over two comment lines is read
/// whole.
fn citations(text: &str) -> Vec<(usize, String, Cited)> {
    let mut joined = String::new();
    let mut starts = Vec::new(); // (offset in joined, line number)
    for (i, line) in text.lines().enumerate() {
        let mut l = line.trim_start();
        for marker in ["//!", "///", "//", "* ", "#"] {
            if let Some(rest) = l.strip_prefix(marker) {
                l = rest.trim_start();
                break;
            }
        }
        starts.push((joined.len(), i + 1));
        joined.push_str(l);
        joined.push(' ');
    }
    let line_of = |offset: usize| {
        let k = starts.partition_point(|(o, _)| *o <= offset);
        starts[k.saturating_sub(1)].1
    };
    let mut out = Vec::new();
    for m in PROSE.captures_iter(&joined) {
        let whole = m.get(0).expect("the match");
        for c in expand(&m[1]) {
            out.push((line_of(whole.start()), whole.as_str().to_owned(), c));
        }
    }
    for m in IDENT.captures_iter(&joined) {
        let whole = m.get(0).expect("the match");
        let nums: Vec<u32> = m[1]
            .split('_')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("digits"))
            .collect();
        for pair in nums.chunks(2) {
            if let [s, n] = pair {
                out.push((
                    line_of(whole.start()),
                    whole.as_str().trim_matches('_').to_owned(),
                    Cited::Rule(*s, *n),
                ));
            }
        }
    }
    out.sort_by_key(|(line, _, _)| *line);
    out
}

/// The rule column of `docs/validation-codes.md`: `| `code` | severity | meaning | 1.32, 2.28 |`.
fn code_table_citations(text: &str) -> Vec<(usize, String, Cited)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        if cells.len() < 4 || !cells[0].trim().starts_with('`') {
            continue;
        }
        let last = cells[cells.len() - 1];
        for c in expand(last) {
            out.push((i + 1, format!("rule column `{}`", last.trim()), c));
        }
    }
    out
}

/// The files whose citations must resolve: every `.rs` file, `docs/*.md` and the top-level
/// `*.md` files, relative to the workspace root.
fn citing_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !SKIP_DIRS.contains(&name.as_ref()) {
                    walk(&path, root, out);
                }
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .to_path_buf();
            let top_md = rel.components().count() == 1 && name.ends_with(".md");
            let docs_md = rel.starts_with("docs") && name.ends_with(".md");
            if (name.ends_with(".rs") && rel != Path::new(SELF_PATH)) || top_md || docs_md {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// What `docs/behaviour.md` numbers.
#[derive(Debug, Default)]
struct Doc {
    sections: BTreeSet<u32>,
    subsections: BTreeSet<(u32, char)>,
    /// rule → (line, its text, the section it sits under)
    rules: BTreeMap<(u32, u32), (usize, String, Option<u32>)>,
    /// Problems with the document itself: duplicates, gaps, misplaced or unproven rules.
    problems: Vec<String>,
}

static SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^##\s+(\d+)\.\s").expect("the section pattern compiles"));
static SUBSECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^###\s+(\d+)([a-z])\.\s").expect("the subsection pattern compiles")
});
static RULE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^- \*\*(\d+)\.(\d+)\*\*\s").expect("the rule pattern compiles"));
/// A proof: `` `test_name` (`path/to/file.rs` `` (more may follow inside the parentheses).
static PROOF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`([A-Za-z_][A-Za-z0-9_]*)`\s*\(`([^`\s]+\.rs)`")
        .expect("the proof pattern compiles")
});

fn parse_doc(text: &str) -> Doc {
    let mut doc = Doc::default();
    let mut section = None;
    let mut current: Option<(u32, u32)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(c) = SECTION.captures(line) {
            let s = c[1].parse().expect("digits");
            section = Some(s);
            doc.sections.insert(s);
            current = None;
        } else if let Some(c) = SUBSECTION.captures(line) {
            let s: u32 = c[1].parse().expect("digits");
            let letter = c[2].chars().next().expect("a letter");
            if section != Some(s) {
                doc.problems.push(format!(
                    "{DOC}:{n}: subsection {s}{letter} is not under section {s}"
                ));
            }
            doc.subsections.insert((s, letter));
            current = None;
        } else if let Some(c) = RULE.captures(line) {
            let key = (c[1].parse().expect("digits"), c[2].parse().expect("digits"));
            if let Some((first, _, _)) = doc.rules.get(&key) {
                doc.problems.push(format!(
                    "{DOC}:{n}: rule {}.{} is numbered twice (first at line {first})",
                    key.0, key.1
                ));
            }
            doc.rules.insert(key, (n, line.to_owned(), section));
            current = Some(key);
        } else if line.trim().is_empty() || line.starts_with('#') || line.starts_with("- ") {
            current = None;
        } else if let Some(key) = current {
            let body = &mut doc.rules.get_mut(&key).expect("the current rule").1;
            body.push(' ');
            body.push_str(line.trim());
        }
    }
    for ((s, r), (line, body, under)) in &doc.rules {
        if *under != Some(*s) {
            doc.problems.push(format!(
                "{DOC}:{line}: rule {s}.{r} is not under section {s}"
            ));
        }
        let proven = body.contains("Tests:")
            || body.contains("Not yet tested")
            || body.contains("Not applicable here");
        if !proven {
            doc.problems.push(format!(
                "{DOC}:{line}: rule {s}.{r} says neither `Tests:`, `Not yet tested` nor `Not applicable here`"
            ));
        }
        if body.contains("Tests:") && !PROOF.is_match(body) {
            doc.problems.push(format!(
                "{DOC}:{line}: rule {s}.{r} has `Tests:` but names no test as `name` (`path.rs`)"
            ));
        }
    }
    // Numbers run 1, 2, 3… within each section, so no number is lost.
    let mut by_section: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (s, r) in doc.rules.keys() {
        by_section.entry(*s).or_default().push(*r);
    }
    for (s, numbers) in by_section {
        for (want, got) in (1..).zip(&numbers) {
            if want != *got {
                doc.problems.push(format!(
                    "{DOC}: section {s} jumps from {s}.{} to {s}.{got}",
                    want - 1
                ));
                break;
            }
        }
    }
    doc
}

impl Doc {
    fn has(&self, c: &Cited) -> bool {
        match c {
            Cited::Rule(s, n) => self.rules.contains_key(&(*s, *n)),
            Cited::Section(s) => self.sections.contains(s),
            Cited::Subsection(s, l) => self.subsections.contains(&(*s, *l)),
        }
    }
}

fn read(root: &Path, rel: &Path) -> String {
    std::fs::read_to_string(root.join(rel))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", rel.display()))
}

fn load_doc(root: &Path) -> Doc {
    parse_doc(&read(root, Path::new(DOC)))
}

#[test]
fn every_rule_cited_in_the_workspace_is_numbered_in_the_behaviour_document() {
    let root = repo_root();
    let doc = load_doc(&root);
    let mut missing = Vec::new();
    let mut count = 0;
    for rel in citing_files(&root) {
        let text = read(&root, &rel);
        let mut found = citations(&text);
        if rel == Path::new("docs/validation-codes.md") {
            found.extend(code_table_citations(&text));
        }
        for (line, cited_as, c) in found {
            count += 1;
            if !doc.has(&c) {
                missing.push(format!(
                    "{}:{line}: {c} (cited as \"{cited_as}\")",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        count > 50,
        "only {count} citations found: is the scanner still reading the tree?"
    );
    assert!(
        missing.is_empty(),
        "{} citation(s) name a rule or section that {DOC} does not number; number it there (in \
         the project's own words, with the test that proves it) or fix the citation:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn every_test_the_behaviour_document_names_exists_where_it_says() {
    let root = repo_root();
    let doc = load_doc(&root);
    let mut broken = Vec::new();
    let mut sources: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut count = 0;
    for ((s, r), (line, body, _)) in &doc.rules {
        for proof in PROOF.captures_iter(body) {
            count += 1;
            let (name, path) = (&proof[1], &proof[2]);
            let source = sources
                .entry(path.to_owned())
                .or_insert_with(|| std::fs::read_to_string(root.join(path)).ok());
            let Some(source) = source else {
                broken.push(format!(
                    "{DOC}:{line}: rule {s}.{r} names `{name}` in {path}, which does not exist"
                ));
                continue;
            };
            let defined = Regex::new(&format!(r"\bfn\s+{}\b", regex::escape(name)))
                .expect("the fn pattern compiles")
                .is_match(source);
            if !defined {
                broken.push(format!(
                    "{DOC}:{line}: rule {s}.{r} names `{name}`, which is not a fn in {path}"
                ));
            }
        }
    }
    assert!(
        count > 50,
        "only {count} tests named: is the proof format still `name` (`path.rs`)?"
    );
    assert!(
        broken.is_empty(),
        "{} test(s) named in {DOC} do not exist (renamed or moved? update the document):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_behaviour_document_numbers_each_rule_once_without_gaps_and_says_how_it_is_proven() {
    let doc = load_doc(&repo_root());
    assert!(
        doc.rules.len() > 400,
        "only {} rules parsed from {DOC}",
        doc.rules.len()
    );
    assert!(
        doc.problems.is_empty(),
        "{DOC} has problems:\n{}",
        doc.problems.join("\n")
    );
}

/// Whether a line of `rel` is test code: a crate's integration tests (`<crate>/tests/…`, the
/// end-to-end tests in `tests/tests/…`), a unit-test file (`tests.rs`, `*_tests.rs`), or the lines
/// of any other file from its first `#[cfg(test)]` on. The `tests/src` harness is not a test.
fn test_lines(rel: &Path, text: &str) -> Vec<bool> {
    let comps: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = comps.last().map(String::as_str).unwrap_or_default();
    let whole = comps.iter().skip(1).any(|c| c == "tests")
        || name == "tests.rs"
        || name.ends_with("_tests.rs");
    let mut in_tests = whole;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("#[cfg(test)]") {
                in_tests = true;
            }
            in_tests
        })
        .collect()
}

/// Every rule cited from test code, with where: `rule → ["path:line", …]`.
fn cited_by_tests(root: &Path) -> BTreeMap<(u32, u32), Vec<String>> {
    let mut out: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
    for rel in citing_files(root) {
        if rel.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = read(root, &rel);
        let is_test = test_lines(&rel, &text);
        for (line, _, c) in citations(&text) {
            if let Cited::Rule(s, n) = c
                && is_test.get(line - 1).copied().unwrap_or(false)
            {
                out.entry((s, n))
                    .or_default()
                    .push(format!("{}:{line}", rel.display()));
            }
        }
    }
    out
}

/// The rules that say they are untested (`Not yet tested`, the marker) while a test cites them.
fn stale_untested(doc: &Doc, cited: &BTreeMap<(u32, u32), Vec<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, (line, body, _)) in &doc.rules {
        if !body.contains("Not yet tested") {
            continue;
        }
        if let Some(places) = cited.get(key) {
            out.push(format!(
                "{DOC}:{line}: rule {}.{} says `Not yet tested`, but test code cites it at {}",
                key.0,
                key.1,
                places.join(", ")
            ));
        }
    }
    out
}

#[test]
fn no_rule_says_not_yet_tested_while_a_test_cites_it() {
    let root = repo_root();
    let doc = load_doc(&root);
    let cited = cited_by_tests(&root);
    assert!(
        cited.len() > 50,
        "only {} rules cited from test code: is the scanner still reading the tests?",
        cited.len()
    );
    let stale = stale_untested(&doc, &cited);
    assert!(
        stale.is_empty(),
        "{} rule(s) in {DOC} say `Not yet tested` while a test cites them: name the test that \
         proves the rule (`Tests:` `name` (`path.rs`)), or, if it only touches the rule, say what \
         is still untested without the marker:\n{}",
        stale.len(),
        stale.join("\n")
    );
}

#[test]
fn a_rule_marked_untested_but_cited_by_a_test_is_reported_and_code_outside_tests_is_not() {
    let doc = parse_doc(
        "## 3. Loops\n\n- **3.1** Bounded. Not yet tested.\n- **3.2** Named. Not yet tested.\n\
         - **3.3** Done. Tests: `t` (`x.rs`).\n",
    );
    let lib = "/// rule 3.2\nfn f() {}\n#[cfg(test)]\nmod tests {\n    // rule 3.1\n}\n";
    let lines = test_lines(Path::new("runner/src/engine/walk.rs"), lib);
    assert_eq!(lines, [false, false, true, true, true, true]);
    assert!(
        test_lines(Path::new("runner/tests/engine.rs"), "x")
            .iter()
            .all(|t| *t)
    );
    assert!(
        test_lines(Path::new("crds/src/plan/generated_tests.rs"), "x")
            .iter()
            .all(|t| *t)
    );
    assert!(
        !test_lines(Path::new("tests/src/studio.rs"), "x")
            .iter()
            .any(|t| *t)
    );
    let mut cited = BTreeMap::new();
    cited.insert((3, 1), vec!["runner/src/engine/walk.rs:5".to_owned()]);
    cited.insert((3, 3), vec!["runner/tests/engine.rs:1".to_owned()]);
    let stale = stale_untested(&doc, &cited);
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0].contains("rule 3.1"), "{stale:?}");
}

// The checker's own reading of citations, so a form it stops recognising fails here first.

#[test]
fn every_citation_form_in_use_is_read() {
    let text = "\
//! Rules 5.22–5.24; anchors 6–9.
/// The limit (rule 1.28) and rules 4.14, 4.15 and 4.1/4.2.
// a list wrapped over two lines (rules 5.18–5.19,
// 7.1; anchors 26) and sections (rules 6.x, seed rules §9, §4a)
fn a_test_rules_4_7_4_26() {}
fn b_rule_2_13() {}
fn every_rule_compiles() {}
";
    let got: Vec<(usize, Cited)> = citations(text)
        .into_iter()
        .map(|(l, _, c)| (l, c))
        .collect();
    let want = vec![
        (1, Cited::Rule(5, 22)),
        (1, Cited::Rule(5, 23)),
        (1, Cited::Rule(5, 24)),
        (2, Cited::Rule(1, 28)),
        (2, Cited::Rule(4, 14)),
        (2, Cited::Rule(4, 15)),
        (2, Cited::Rule(4, 1)),
        (2, Cited::Rule(4, 2)),
        (3, Cited::Rule(5, 18)),
        (3, Cited::Rule(5, 19)),
        (3, Cited::Rule(7, 1)),
        (4, Cited::Section(6)),
        (4, Cited::Section(9)),
        (4, Cited::Subsection(4, 'a')),
        (5, Cited::Rule(4, 7)),
        (5, Cited::Rule(4, 26)),
        (6, Cited::Rule(2, 13)),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_cited_rule_the_document_lacks_is_reported_and_a_numbered_one_is_not() {
    let doc = parse_doc(
        "## 2. Graph\n\n### 2a. Data\n\n- **2.1** Each node gets the answer before it. Tests: \
         `t` (`x.rs`).\n- **2.2** Single turn. Not yet tested.\n",
    );
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    assert!(doc.has(&Cited::Rule(2, 2)));
    assert!(doc.has(&Cited::Subsection(2, 'a')));
    assert!(!doc.has(&Cited::Rule(2, 3)));
    assert!(!doc.has(&Cited::Section(3)));
}

#[test]
fn a_gap_a_duplicate_and_an_unproven_rule_are_problems() {
    let doc = parse_doc(
        "## 1. Spec\n\n- **1.1** One. Not yet tested.\n- **1.1** Again. Not yet tested.\n- **1.3** \
         Three.\n- **1.4** Four. Tests: none named.\n",
    );
    let all = doc.problems.join("\n");
    assert!(all.contains("numbered twice"), "{all}");
    assert!(all.contains("jumps from 1.1 to 1.3"), "{all}");
    assert!(all.contains("rule 1.3 says neither"), "{all}");
    assert!(
        all.contains("rule 1.4 has `Tests:` but names no test"),
        "{all}"
    );
}
