//! Following a StudioRun live in the terminal through the sidecar, as a person would: the
//! run's trace as Server-Sent Events (`GET /api/v1/runs/{ns}/{name}/events`, with the caller's
//! bearer token), each event printed by the same [`TerminalPrinter`] as `orrery run`, resumed
//! with `Last-Event-ID` when the stream drops, until `run.end`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use orrery_crds::events::{EventBody, TraceEvent};
use orrery_runner::events::{EventSink, PrinterOptions, TerminalPrinter};

/// How long to keep reconnecting when the sidecar does not answer.
const GIVE_UP: Duration = Duration::from_secs(120);

/// One Server-Sent Events frame's fields that matter here.
#[derive(Debug, Default, PartialEq)]
struct Frame {
    id: Option<u64>,
    data: String,
}

/// Splits a buffer into complete frames (ended by a blank line), leaving the rest in `buf`.
fn frames(buf: &mut String) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let raw: String = buf.drain(..end + 2).collect();
        let mut frame = Frame::default();
        for line in raw.lines() {
            if let Some(v) = line.strip_prefix("data:") {
                if !frame.data.is_empty() {
                    frame.data.push('\n');
                }
                frame.data.push_str(v.strip_prefix(' ').unwrap_or(v));
            } else if let Some(v) = line.strip_prefix("id:") {
                frame.id = v.trim().parse().ok();
            }
        }
        if !frame.data.is_empty() {
            out.push(frame);
        }
    }
    out
}

/// Prints the run's events until `run.end`; returns the outcome's name (`Succeeded`, …).
pub async fn follow(sidecar: &str, namespace: &str, name: &str, token: &str) -> Result<String> {
    let url = format!("{sidecar}/api/v1/runs/{namespace}/{name}/events");
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .context("an HTTP client")?;
    let printer = TerminalPrinter::stdout(PrinterOptions::detect());
    let mut last: u64 = 0;
    let mut waiting_since = Instant::now();
    loop {
        let response = http
            .get(&url)
            .bearer_auth(token)
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", last.to_string())
            .send()
            .await;
        let response = match response {
            Ok(r) if r.status().is_success() => r,
            Ok(r) if r.status().as_u16() == 404 || r.status().is_server_error() => {
                // The run's first events are not there yet, or the sidecar is starting.
                if waiting_since.elapsed() > GIVE_UP {
                    bail!("{url}: {} for {} s", r.status(), GIVE_UP.as_secs());
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                bail!("{url}: {status}: {body}");
            }
            Err(e) => {
                if waiting_since.elapsed() > GIVE_UP {
                    return Err(e).with_context(|| format!("{url}: no answer"));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        waiting_since = Instant::now();
        let mut stream = response.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            buf.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            for frame in frames(&mut buf) {
                let event: TraceEvent = serde_json::from_str(&frame.data)
                    .with_context(|| format!("an event from {url}"))?;
                last = frame.id.unwrap_or(event.seq).max(last);
                printer.emit(&event);
                if let EventBody::RunEnd { outcome, .. } = &event.body {
                    printer.flush();
                    return Ok(format!("{outcome:?}"));
                }
            }
        }
        // The stream ended without run.end (a restart, a dropped connection): resume.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_at_blank_lines_and_comments_are_skipped() {
        let mut buf = String::from(
            ": keep-alive\n\nid: 3\nevent: node.enter\ndata: {\"a\":1}\n\nid: 4\ndata: {\"b\"",
        );
        let got = frames(&mut buf);
        assert_eq!(
            got,
            vec![Frame {
                id: Some(3),
                data: "{\"a\":1}".into()
            }]
        );
        assert_eq!(buf, "id: 4\ndata: {\"b\"");
        buf.push_str(":2}\n\n");
        assert_eq!(
            frames(&mut buf),
            vec![Frame {
                id: Some(4),
                data: "{\"b\":2}".into()
            }]
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn a_data_field_over_several_lines_is_joined_with_newlines() {
        let mut buf = String::from("data: one\ndata: two\n\n");
        assert_eq!(frames(&mut buf)[0].data, "one\ntwo");
    }
}
