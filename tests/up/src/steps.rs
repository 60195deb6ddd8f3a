//! The steps of `orrery up` as the terminal shows them: numbered, timed, with an estimate for
//! the slow first builds (from the last run on this machine when there was one), and a line
//! every 30 s while a long step runs, so a cold build never looks hung.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

/// How often a running step says it is still running.
const TICK: Duration = Duration::from_secs(30);

/// A step's duration below which it is shown as cached.
const CACHED: Duration = Duration::from_secs(3);

/// Clears its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// Numbers, times and remembers the steps.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    timings_file: PathBuf,
    timings: BTreeMap<String, f64>,
}

/// Formats a duration the way people read it: `0.4 s`, `42 s`, `3 min 10 s`.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.1} s")
    } else if secs < 90.0 {
        format!("{secs:.0} s")
    } else {
        let whole = d.as_secs();
        format!("{} min {} s", whole / 60, whole % 60)
    }
}

impl Progress {
    /// `total` steps; durations are remembered in `timings_file` (JSON, step → seconds).
    pub fn new(total: usize, timings_file: &Path) -> Progress {
        let timings = std::fs::read_to_string(timings_file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Progress {
            total,
            done: 0,
            timings_file: timings_file.to_path_buf(),
            timings,
        }
    }

    /// Prints a step's line and runs it on a blocking thread, with a line every 30 s while it
    /// runs. `key` names the step in the timings file; `cold` is what a first build on this
    /// project's 2-core machines takes, shown when this machine has no time of its own yet.
    pub async fn step<T, F>(&mut self, key: &str, what: &str, cold: Option<&str>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        self.done += 1;
        let estimate = match (self.timings.get(key), cold) {
            (Some(secs), _) => format!(" (last time {})", human(Duration::from_secs_f64(*secs))),
            (None, Some(cold)) => format!(" (the first time {cold}; cached after)"),
            (None, None) => String::new(),
        };
        eprintln!("[{}/{}] {what}{estimate} …", self.done, self.total);
        let started = Instant::now();
        let running = Arc::new(AtomicBool::new(true));
        // Stops the ticker however this step ends, cancelled (Ctrl-C) included.
        let _stop_ticker = StopOnDrop(running.clone());
        let ticker = {
            let running = running.clone();
            let what = what.to_owned();
            std::thread::spawn(move || {
                let mut next = TICK;
                while running.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    if started.elapsed() >= next {
                        eprintln!("      … {what}: {} so far", human(started.elapsed()));
                        next += TICK;
                    }
                }
            })
        };
        let result = tokio::task::spawn_blocking(f).await;
        running.store(false, Ordering::Relaxed);
        let _ = tokio::task::spawn_blocking(move || ticker.join()).await;
        let took = started.elapsed();
        let value = result??;
        let cached = if took < CACHED && cold.is_some() {
            " (cached)"
        } else {
            ""
        };
        eprintln!("      done in {}{cached}", human(took));
        self.timings.insert(key.to_owned(), took.as_secs_f64());
        if let Ok(text) = serde_json::to_string_pretty(&self.timings) {
            // Only an estimate for next time: a write failure loses nothing else.
            let _ = std::fs::write(&self.timings_file, text);
        }
        Ok(value)
    }

    /// Prints a step that is a wait or a check rather than a build (numbered, then timed by
    /// the caller's `done` line).
    pub fn begin(&mut self, what: &str) -> Instant {
        self.done += 1;
        eprintln!("[{}/{}] {what} …", self.done, self.total);
        Instant::now()
    }

    /// The line after a [`Progress::begin`] step.
    pub fn end(&self, started: Instant, detail: &str) {
        let sep = if detail.is_empty() { "" } else { ": " };
        eprintln!("      done in {}{sep}{detail}", human(started.elapsed()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_seconds_then_minutes() {
        assert_eq!(human(Duration::from_millis(420)), "0.4 s");
        assert_eq!(human(Duration::from_secs(42)), "42 s");
        assert_eq!(human(Duration::from_secs(190)), "3 min 10 s");
    }

    #[tokio::test]
    async fn a_steps_time_is_remembered_as_the_estimate_for_next_time() {
        let dir = std::env::temp_dir().join(format!("orrery-up-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("timings.json");
        let mut progress = Progress::new(1, &file);
        let out = progress
            .step("build", "building", Some("about 1 min"), || Ok(7))
            .await
            .expect("the step");
        assert_eq!(out, 7);
        let again = Progress::new(1, &file);
        assert!(again.timings.contains_key("build"), "{:?}", again.timings);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[tokio::test]
    async fn a_failing_step_reports_its_error() {
        let file = std::env::temp_dir().join("orrery-up-progress-never-written.json");
        let mut progress = Progress::new(1, &file);
        let err = progress
            .step("x", "failing", None, || -> Result<()> {
                anyhow::bail!("the build broke")
            })
            .await
            .expect_err("an error");
        assert!(err.to_string().contains("the build broke"), "{err:#}");
        assert!(!file.exists());
    }
}
