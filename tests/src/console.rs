//! The web console end to end: what a sidecar serves of it ([`check_served`]) and its browser
//! specs (`web/e2e/`, Playwright in Debian's Chromium) run against a Studio ([`run_specs`]).
//!
//! The specs learn where the Studio is from the environment ([`SpecEnv`]; the contract is in
//! `web/e2e/fixtures.ts` and `web/README.md`). Playwright comes from `web/node_modules`, which
//! scripts/test.sh's `web` step installs (`cd web && npm ci --engine-strict`); the browser is
//! `/usr/lib/chromium/chromium` (`scripts/install-packages.sh chromium fonts-liberation`) or
//! `ORRERY_CHROMIUM`.

use crate::harness::workspace_root;
use crate::images::console_source;
use crate::shared_studio::SharedInfo;
use crate::studio::{http_client, token};
use crate::testenv::{ALICE, BOB};
use anyhow::{Context as _, Result, bail, ensure};
use orrery_operator::sidecar::console::CONSOLE_CSP;
use reqwest::StatusCode;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

/// The browser Playwright launches unless `ORRERY_CHROMIUM` names another
/// (`web/playwright.config.ts` says the same).
pub const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The console's sources and its Playwright setup.
pub fn web_dir() -> PathBuf {
    workspace_root().join("web")
}

/// One reply, as far as the checks below read it.
struct Reply {
    status: StatusCode,
    csp: String,
    cache: String,
    content_type: String,
    body: Vec<u8>,
}

async fn get(url: &str) -> Result<Reply> {
    let response = http_client()?
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (csp, cache, content_type) = (
        header("content-security-policy"),
        header("cache-control"),
        header("content-type"),
    );
    let status = response.status();
    let body = response.bytes().await?.to_vec();
    Ok(Reply {
        status,
        csp,
        cache,
        content_type,
        body,
    })
}

/// The `/assets/…` files a built `index.html` loads.
fn assets_of(index: &str) -> Vec<String> {
    index
        .split('"')
        .filter(|part| part.starts_with("/assets/"))
        .map(str::to_owned)
        .collect()
}

/// Checks that the sidecar at `url` serves the built console ([`console_source`], which the
/// operator image carries): `/` and the page path `page` are its `index.html`, byte for byte,
/// `no-cache`, under the console's policy ([`CONSOLE_CSP`]); every asset it loads is the
/// build's file, `immutable`, under the same policy; the API keeps its own `default-src 'none'`.
pub async fn check_served(url: &str, page: &str) -> Result<()> {
    let dir = console_source();
    let index_file = dir.join("index.html");
    let index =
        std::fs::read(&index_file).with_context(|| format!("reading {}", index_file.display()))?;
    for path in ["/", page] {
        let reply = get(&format!("{url}{path}")).await?;
        ensure!(
            reply.status == StatusCode::OK,
            "GET {path}: {}",
            reply.status
        );
        ensure!(
            reply.csp == CONSOLE_CSP,
            "GET {path} is served under the console's policy, not {:?}",
            reply.csp
        );
        ensure!(
            reply.content_type.starts_with("text/html") && reply.cache == "no-cache",
            "GET {path}: {} {}",
            reply.content_type,
            reply.cache
        );
        ensure!(
            reply.body == index,
            "GET {path} is not the built {}",
            index_file.display()
        );
    }
    let assets = assets_of(&String::from_utf8_lossy(&index));
    ensure!(!assets.is_empty(), "the built index.html loads no /assets/");
    for asset in assets {
        let reply = get(&format!("{url}{asset}")).await?;
        let file = dir.join(asset.trim_start_matches('/'));
        ensure!(
            reply.status == StatusCode::OK
                && reply.csp == CONSOLE_CSP
                && reply.cache.contains("immutable"),
            "GET {asset}: {} {:?} {:?}",
            reply.status,
            reply.csp,
            reply.cache
        );
        ensure!(
            reply.body == std::fs::read(&file)?,
            "GET {asset} is not the built {}",
            file.display()
        );
    }
    let api = get(&format!("{url}/api/v1/me")).await?;
    ensure!(
        api.status == StatusCode::UNAUTHORIZED && api.csp.starts_with("default-src 'none'"),
        "the API keeps its own policy: {} {:?}",
        api.status,
        api.csp
    );
    Ok(())
}

/// What the specs are told about the Studio (`web/e2e/fixtures.ts` reads it).
#[derive(Clone)]
pub struct SpecEnv {
    /// `ORRERY_CONSOLE_URL`: the sidecar serving the console.
    pub url: String,
    /// `ORRERY_CONSOLE_NAMESPACE`: the namespace the install serves.
    pub namespace: String,
    /// `ORRERY_TOKEN_ALICE`.
    pub alice: String,
    /// `ORRERY_TOKEN_BOB`.
    pub bob: String,
    /// `ORRERY_CONSOLE_FINISHED_A` and `_B`: two finished runs of alice's, of one Composition,
    /// for History, replay and compare (unset when the Studio holds none).
    pub finished: Option<[String; 2]>,
    /// `ORRERY_CONSOLE_RESTART_FILE`: where a spec asks for the sidecar to be killed or started
    /// again (`crate::spec_sidecar`); unset when the sidecar is not the test's to restart.
    pub restart_file: Option<PathBuf>,
    /// `ORRERY_KUBECTL` and `ORRERY_KUBECONFIG`: a kubectl and the control plane's kubeconfig
    /// (its contexts are the users: `admin`, `alice`, …), for a spec that changes the cluster as
    /// a person at a terminal would (`kubectl patch`); unset where the specs may not.
    pub kubectl: Option<(PathBuf, PathBuf)>,
}

impl std::fmt::Debug for SpecEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpecEnv")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl SpecEnv {
    /// The environment for specs against a shared studio, with alice's and bob's tokens.
    pub fn of(studio: &SharedInfo) -> Result<SpecEnv> {
        Ok(SpecEnv {
            url: studio.sidecar_url.clone(),
            namespace: studio.namespace.clone(),
            alice: token(studio.env, ALICE)?,
            bob: token(studio.env, BOB)?,
            finished: Some(FINISHED_RUNS.map(str::to_owned)),
            restart_file: None,
            kubectl: Some((studio.env.kubectl_exe(), studio.env.kubeconfig.clone())),
        })
    }

    /// The variables, each with its value or `None` for one to leave unset (an optional one
    /// this Studio does not give, removed even if the test's own environment has it).
    fn vars(&self) -> Vec<(&'static str, Option<std::ffi::OsString>)> {
        let [a, b] = self
            .finished
            .as_ref()
            .map_or([None, None], |[a, b]| [Some(a.into()), Some(b.into())]);
        vec![
            ("ORRERY_CONSOLE_URL", Some((&self.url).into())),
            ("ORRERY_CONSOLE_NAMESPACE", Some((&self.namespace).into())),
            ("ORRERY_TOKEN_ALICE", Some((&self.alice).into())),
            ("ORRERY_TOKEN_BOB", Some((&self.bob).into())),
            ("ORRERY_CONSOLE_FINISHED_A", a),
            ("ORRERY_CONSOLE_FINISHED_B", b),
            (
                "ORRERY_CONSOLE_RESTART_FILE",
                self.restart_file.as_ref().map(Into::into),
            ),
            (
                "ORRERY_KUBECTL",
                self.kubectl.as_ref().map(|(exe, _)| exe.into()),
            ),
            (
                "ORRERY_KUBECONFIG",
                self.kubectl.as_ref().map(|(_, config)| config.into()),
            ),
        ]
    }
}

/// The names of the two finished runs a console Studio holds for the specs
/// (`ORRERY_CONSOLE_FINISHED_A`, `_B`): its installer starts and waits for them.
pub const FINISHED_RUNS: [&str; 2] = ["finished-a", "finished-b"];

/// Which specs a run takes, by the title of their `test.describe` group.
#[derive(Debug, Clone, Copy)]
pub enum Specs<'a> {
    /// The specs whose title contains this text (`--grep`); none is an error.
    Group(&'a str),
    /// Every spec outside these groups (`--grep-invert`); none is fine.
    AllBut(&'a [&'a str]),
}

/// `text` as a regular expression matching itself (Playwright's `--grep` is one).
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Runs `npx playwright test` in `web/` on `specs` against the Studio `env` describes, its
/// output streamed to this process's standard error line by line (prefixed with `name`, which
/// also names its results directory `web/test-results/<name>`); an error carrying Playwright's
/// report when a spec failed. Blocks until Playwright ends.
pub fn run_specs(env: &SpecEnv, specs: Specs<'_>, name: &str) -> Result<()> {
    let web = web_dir();
    ensure!(
        web.join("node_modules/@playwright/test").is_dir(),
        "{} has no @playwright/test: install the console's packages first: \
         cd web && npm ci --engine-strict (scripts/test.sh's web step does)",
        web.display()
    );
    let chromium = std::env::var_os("ORRERY_CHROMIUM")
        .filter(|c| !c.is_empty())
        .map_or_else(|| PathBuf::from(CHROMIUM), PathBuf::from);
    ensure!(
        chromium.is_file(),
        "no browser at {}: scripts/install-packages.sh chromium fonts-liberation \
         (or set ORRERY_CHROMIUM); Playwright never downloads one",
        chromium.display()
    );
    let npx = on_path("npx").context(
        "npx (npm) is not on PATH: the console's browser tests need Node 20.19 or later",
    )?;
    let mut command = Command::new(&npx);
    command
        .current_dir(&web)
        .args(["--no", "playwright", "test", "--reporter=list", "--output"])
        .arg(Path::new("test-results").join(name));
    match specs {
        Specs::Group(title) => {
            command.args(["--grep", &literal(title)]);
        }
        Specs::AllBut(titles) => {
            let all: Vec<String> = titles.iter().map(|t| literal(t)).collect();
            command
                .args(["--grep-invert", &all.join("|")])
                .arg("--pass-with-no-tests");
        }
    }
    for (key, value) in env.vars() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
        .env("ORRERY_CHROMIUM", &chromium)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!("npx playwright test ({specs:?}) in {}", web.display());
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let said = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut readers = Vec::new();
    let pipes: [Option<Box<dyn std::io::Read + Send>>; 2] = [
        child.stdout.take().map(|p| Box::new(p) as _),
        child.stderr.take().map(|p| Box::new(p) as _),
    ];
    for pipe in pipes.into_iter().flatten() {
        let said = said.clone();
        let prefix = format!("[playwright {name}] ");
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                // Straight to the process's standard error (not the test harness's capture),
                // so a long run shows progress as it goes.
                let _ = writeln!(std::io::stderr().lock(), "{prefix}{line}");
                said.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        }));
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for {what}"))?;
    for reader in readers {
        let _ = reader.join();
    }
    if !status.success() {
        let report = said
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n");
        bail!(
            "{what} failed ({status}); traces of the failed tests are under web/test-results/{name}/ \
             (npx playwright show-trace <trace.zip>); its report:\n{report}"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_greps_for_itself_alone() {
        assert_eq!(
            literal("a bad token is refused (401) with the sidecar's reason."),
            r"a bad token is refused \(401\) with the sidecar's reason\."
        );
    }

    #[test]
    fn the_assets_of_an_index_are_its_asset_urls() {
        let index = r#"<script type="module" crossorigin src="/assets/index-A1.js"></script>
<link rel="stylesheet" crossorigin href="/assets/index-B2.css"><link rel="icon" href="/assets/icon-C3.svg">"#;
        assert_eq!(
            assets_of(index),
            [
                "/assets/index-A1.js",
                "/assets/index-B2.css",
                "/assets/icon-C3.svg"
            ]
        );
    }
}
