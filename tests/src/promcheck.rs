//! The Prometheus project's own reading of a `/metrics` text, for the tests of the operator's
//! and the sidecar's metrics: `testenv promcheck` (built with the control plane from the Go
//! module proxy, `tests/testenv/promcheck.go`) parses it with expfmt's text parser, the one a
//! Prometheus scrape uses, and lints it with promlint, what `promtool check metrics` runs
//! (counters end in `_total`, base units, help present, no reserved suffixes, ...).

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// What promcheck read.
#[derive(Debug, Deserialize)]
pub struct PromReport {
    /// Each family by name.
    pub families: BTreeMap<String, PromFamily>,
    /// What the linter found (none is the aim).
    pub problems: Vec<PromProblem>,
}

/// One metric family.
#[derive(Debug, Deserialize)]
pub struct PromFamily {
    /// `COUNTER`, `GAUGE`, `HISTOGRAM`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Its help text.
    pub help: String,
    /// Its series.
    pub metrics: Vec<PromSample>,
}

/// One series of a family.
#[derive(Debug, Deserialize)]
pub struct PromSample {
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// A counter's or gauge's value.
    pub value: Option<f64>,
    /// A histogram's observation count.
    pub count: Option<u64>,
    /// A histogram's sum.
    pub sum: Option<f64>,
    /// A histogram's cumulative buckets by upper bound.
    pub buckets: Option<BTreeMap<String, f64>>,
}

/// One finding of the linter.
#[derive(Debug, Deserialize)]
pub struct PromProblem {
    /// The family.
    pub metric: String,
    /// What is wrong.
    pub text: String,
}

impl PromReport {
    /// The series of `family` whose labels include every one of `labels`.
    pub fn series<'a>(
        &'a self,
        family: &str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a PromSample> + 'a {
        self.families
            .get(family)
            .into_iter()
            .flat_map(|f| f.metrics.iter())
            .filter(move |m| {
                labels
                    .iter()
                    .all(|(k, v)| m.labels.get(*k).map(String::as_str) == Some(*v))
            })
    }

    /// The sum of the values of `family`'s series that have `labels` (None: no such series).
    pub fn value(&self, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let values: Vec<f64> = self
            .series(family, labels)
            .filter_map(|m| m.value)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    /// The sum of the observation counts of histogram `family`'s series that have `labels`.
    pub fn count(&self, family: &str, labels: &[(&str, &str)]) -> Option<u64> {
        let counts: Vec<u64> = self
            .series(family, labels)
            .filter_map(|m| m.count)
            .collect();
        (!counts.is_empty()).then(|| counts.iter().sum())
    }
}

/// Reads `text` as Prometheus does and lints it.
pub fn promcheck(text: &str) -> Result<PromReport> {
    let bin = crate::testenv::bin_dir()?.join("testenv");
    let mut child = Command::new(&bin)
        .arg("promcheck")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {} promcheck", bin.display()))?;
    child
        .stdin
        .take()
        .context("promcheck's stdin")?
        .write_all(text.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "promcheck refused the text: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("promcheck's report")
}
