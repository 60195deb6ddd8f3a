//! A sidecar the console's browser specs kill and start again while they run (issue 23's "drop"
//! specs, `web/e2e/drop.spec.ts`): [`run_specs_restarting`] runs the specs on a blocking thread
//! and, on the test's runtime meanwhile, serves their requests on the [`TestSidecar`] that
//! serves the console.
//!
//! The contract, a file (`ORRERY_CONSOLE_RESTART_FILE`, [`crate::console::SpecEnv::restart_file`];
//! `web/e2e/fixtures.ts` and `web/README.md` say the same):
//!
//! - a spec asks by writing `{"id": "<any text>", "action": "kill" | "start"}` to the file
//!   (written elsewhere and renamed there, so it is never read half-written);
//! - the test reads it within a tenth of a second, removes it and does it: `kill` kills the
//!   sidecar as a crash would ([`TestSidecar::kill`]: every connection cut, the port refusing
//!   connections), `start` starts it again on the same address and store
//!   ([`TestSidecar::restart`]);
//! - then it writes `{"id", "action", "error": null | "<why not>"}` to the file's name with
//!   `.done` after it (renamed there too), which the spec waits for. A `kill` of a sidecar
//!   already down, or a `start` of one already up, is an error (a spec that lost count).

use crate::console::{SpecEnv, Specs, run_specs};
use crate::sidecar_fixture::{TestSidecar, temp_dir};
use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the request file is looked for.
const POLL: Duration = Duration::from_millis(100);

/// One request of a spec.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The spec's name for it, echoed in the answer.
    pub id: String,
    /// What to do.
    pub action: Action,
}

/// What a spec may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Kill the sidecar as a crash would, and leave it down.
    Kill,
    /// Start it again, on the same address and store.
    Start,
}

/// The answer to a request, once done.
#[derive(Debug, Serialize)]
struct Done<'a> {
    id: &'a str,
    action: Action,
    error: Option<String>,
}

/// What the specs asked, in order.
#[derive(Debug, Default)]
pub struct Served {
    /// Every request done, in order (the failed ones too).
    pub done: Vec<Action>,
}

impl Served {
    /// How many times the sidecar was killed.
    pub fn kills(&self) -> usize {
        self.done.iter().filter(|a| **a == Action::Kill).count()
    }
}

/// The answer's path for a request file.
fn done_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".done");
    PathBuf::from(name)
}

/// Writes `text` to `path` through a temporary file renamed there.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", path.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// The request in `file`, if there is one (removed once read).
fn take_request(file: &Path) -> Result<Option<Request>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    std::fs::remove_file(file).with_context(|| format!("removing {}", file.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("a request in {} that is not one: {text:?}", file.display()))
}

/// Does `request` on `sidecar` (up or not, as `up` says).
async fn serve(request: &Request, sidecar: &mut TestSidecar, up: &mut bool) -> Result<()> {
    match (request.action, *up) {
        (Action::Kill, true) => {
            sidecar.kill().await;
            *up = false;
        }
        (Action::Start, false) => {
            sidecar.restart().await?;
            *up = true;
        }
        (Action::Kill, false) => bail!("the sidecar is down already"),
        (Action::Start, true) => bail!("the sidecar is up already"),
    }
    Ok(())
}

/// Runs `specs` against `env` (as [`run_specs`], on a blocking thread, results under
/// `web/test-results/<name>`) with `ORRERY_CONSOLE_RESTART_FILE` set to a file of a fresh
/// temporary directory, serving the specs' requests on `sidecar` (the one `env.url` names)
/// until Playwright ends. The sidecar is started again if the specs left it down. Returns what
/// was asked; an error when a spec failed, or a request was not one.
pub async fn run_specs_restarting(
    env: &SpecEnv,
    specs: Specs<'static>,
    name: &'static str,
    sidecar: &mut TestSidecar,
) -> Result<Served> {
    let file = temp_dir("spec-sidecar")?.join("request.json");
    let env = SpecEnv {
        restart_file: Some(file.clone()),
        ..env.clone()
    };
    let mut playwright = tokio::task::spawn_blocking(move || run_specs(&env, specs, name));
    let mut served = Served::default();
    let mut up = true;
    let mut bad = None;
    let ran = loop {
        tokio::select! {
            ran = &mut playwright => break ran.context("the thread running Playwright")?,
            () = tokio::time::sleep(POLL) => {}
        }
        let request = match take_request(&file) {
            Ok(Some(request)) => request,
            Ok(None) => continue,
            Err(e) => {
                // Said at the end; the spec waiting for its answer fails on its own.
                bad.get_or_insert(e);
                continue;
            }
        };
        let error = serve(&request, sidecar, &mut up)
            .await
            .err()
            .map(|e| format!("{e:#}"));
        served.done.push(request.action);
        let done = Done {
            id: &request.id,
            action: request.action,
            error,
        };
        write_atomically(&done_path(&file), &serde_json::to_string(&done)?)?;
    };
    if !up {
        sidecar
            .restart()
            .await
            .context("starting the sidecar the specs left down")?;
    }
    ran?;
    if let Some(e) = bad {
        return Err(e);
    }
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_once_and_its_answer_lands_beside_it() -> Result<()> {
        let file = temp_dir("spec-sidecar-test")?.join("request.json");
        assert_eq!(take_request(&file)?, None);
        write_atomically(&file, r#"{"id": "drop-1", "action": "kill"}"#)?;
        assert_eq!(
            take_request(&file)?,
            Some(Request {
                id: "drop-1".into(),
                action: Action::Kill
            })
        );
        assert_eq!(take_request(&file)?, None, "read once");
        write_atomically(&file, r#"{"id": "x", "action": "reboot"}"#)?;
        assert!(take_request(&file).is_err(), "an unknown action is refused");
        let done = Done {
            id: "drop-1",
            action: Action::Start,
            error: None,
        };
        write_atomically(&done_path(&file), &serde_json::to_string(&done)?)?;
        assert_eq!(
            std::fs::read_to_string(file.with_file_name("request.json.done"))?,
            r#"{"id":"drop-1","action":"start","error":null}"#
        );
        Ok(())
    }
}
