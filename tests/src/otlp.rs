//! An OTLP/HTTP trace receiver for the tests of the sidecar's trace export: `testenv otlpsink`
//! (built with the control plane from the Go module proxy, `tests/testenv/otlpsink.go`) decodes
//! each request with the OpenTelemetry project's own protobuf types and prints every span as a
//! JSON line, which [`OtlpSink`] collects.

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A span attribute's value as the receiver read it.
pub type AttrValue = serde_json::Value;

/// A span event.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SinkEvent {
    /// Its name.
    pub name: String,
    /// When.
    pub time_unix_nano: u64,
    /// Its attributes.
    pub attributes: BTreeMap<String, AttrValue>,
}

/// A span's status.
#[derive(Clone, Debug, Deserialize)]
pub struct SinkStatus {
    /// `STATUS_CODE_UNSET`, `STATUS_CODE_OK` or `STATUS_CODE_ERROR`.
    pub code: String,
    /// Why, for an error.
    pub message: String,
}

/// One span the receiver got.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SinkSpan {
    /// Hex.
    pub trace_id: String,
    /// Hex.
    pub span_id: String,
    /// Hex, empty for a root.
    pub parent_span_id: String,
    /// Its name.
    pub name: String,
    /// `SPAN_KIND_INTERNAL`, `SPAN_KIND_CLIENT`, …
    pub kind: String,
    /// Start, Unix nanoseconds.
    pub start_unix_nano: u64,
    /// End, Unix nanoseconds.
    pub end_unix_nano: u64,
    /// Its attributes.
    pub attributes: BTreeMap<String, AttrValue>,
    /// Its resource's attributes.
    pub resource: BTreeMap<String, AttrValue>,
    /// Its instrumentation scope's name.
    pub scope: String,
    /// Its events.
    pub events: Vec<SinkEvent>,
    /// Its status.
    pub status: SinkStatus,
    /// The `Authorization` header of the request that carried it.
    pub authorization: String,
}

impl SinkSpan {
    /// A string attribute.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(|v| v.as_str())
    }

    /// An integer attribute.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(|v| v.as_i64())
    }
}

/// A running `testenv otlpsink`; killed when dropped.
pub struct OtlpSink {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    spans: Arc<Mutex<Vec<SinkSpan>>>,
    child: Child,
}

impl OtlpSink {
    /// Starts a receiver that answers its first `fail` requests 503.
    pub fn start(fail: u32) -> Result<OtlpSink> {
        OtlpSink::start_with(fail, false)
    }

    /// Starts a receiver that only counts the spans it takes ([`OtlpSink::count`]): a
    /// benchmark's collector.
    pub fn start_quiet() -> Result<OtlpSink> {
        OtlpSink::start_with(0, true)
    }

    fn start_with(fail: u32, quiet: bool) -> Result<OtlpSink> {
        let bin = crate::testenv::bin_dir()?.join("testenv");
        let mut args = vec!["otlpsink".to_owned(), "--fail".to_owned(), fail.to_string()];
        if quiet {
            args.push("--quiet".to_owned());
        }
        let mut child = Command::new(&bin)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {} otlpsink", bin.display()))?;
        let stdout = child.stdout.take().context("otlpsink's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .context("otlpsink printed nothing")?
            .context("otlpsink's first line")?;
        let Some(url) = first.strip_prefix("listening ") else {
            bail!("otlpsink's first line: {first}");
        };
        let spans = Arc::new(Mutex::new(Vec::new()));
        let collected = spans.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(std::result::Result::ok) {
                match serde_json::from_str::<SinkSpan>(&line) {
                    Ok(span) => collected
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(span),
                    Err(e) => eprintln!("otlpsink: unreadable line ({e}): {line}"),
                }
            }
        });
        Ok(OtlpSink {
            url: url.to_owned(),
            spans,
            child,
        })
    }

    /// How many spans the receiver took so far (printed or not).
    pub async fn count(&self) -> Result<u64> {
        let text = reqwest::Client::builder()
            .no_proxy()
            .build()?
            .get(format!("{}/count", self.url))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        text.trim()
            .parse()
            .with_context(|| format!("otlpsink's count: {text:?}"))
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<SinkSpan> {
        self.spans.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits up to `timeout` until `done` holds of the spans received.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        what: &str,
        done: impl Fn(&[SinkSpan]) -> bool,
    ) -> Result<Vec<SinkSpan>> {
        let start = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) {
                return Ok(spans);
            }
            if start.elapsed() > timeout {
                bail!(
                    "the collector did not get {what} in {timeout:?}; it got {:?}",
                    spans.iter().map(|s| &s.name).collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for OtlpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
