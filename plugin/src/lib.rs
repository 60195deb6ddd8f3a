//! `kubectl orrery`: Orrery Studio's runs from the terminal, as yourself (issue 25).
//!
//! A binary of its own rather than the `orrery` CLI under a second name: the `orrery` binary is
//! also the runner pods' image, which carries no Kubernetes client, and this one is nothing but
//! one. It reads the kubeconfig exactly as kubectl does (`--kubeconfig`, `KUBECONFIG`, `--context`,
//! the context's namespace or `-n`), so the cluster sees the person: RBAC and the chart's
//! admission policies decide as for a hand-written `kubectl create` or `kubectl patch`, and every
//! refusal is printed as the apiserver words it.
//!
//! Here: `runs` (a table of the namespace's runs, or every namespace's with `-A`; `-w` follows
//! changes), `start` (a StudioRun of a Composition, owned by the caller, whose name comes from a
//! SelfSubjectReview) and `cancel`. Following a run's trace ([`logs`]) and reading approvals
//! before deciding them ([`approvals`]) need the sidecar, found and called as the person
//! ([`sidecar`]); shell completion is [`complete`].

pub mod approvals;
pub mod complete;
pub mod logs;
pub mod sidecar;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{
    Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use orrery_crds::StudioRun;
use orrery_crds::run::{Approvers, CompositionRef, StudioRunSpec};

/// What went wrong, in words a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The kubeconfig could not be read or has no such context.
    #[error("cannot use the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// The client could not be built from it.
    #[error("cannot reach the cluster with this kubeconfig: {0}")]
    Client(#[source] kube::Error),
    /// The apiserver refused, in its words.
    #[error("{what}: the cluster refused ({code} {reason}): {message}")]
    Refused {
        /// What was asked.
        what: String,
        /// HTTP status.
        code: u16,
        /// The apiserver's reason (`Forbidden`, `Invalid`, `NotFound`…).
        reason: String,
        /// Its message (an admission policy's says what to do).
        message: String,
    },
    /// The request did not reach an answer.
    #[error("{what}: {source}")]
    Failed {
        /// What was asked.
        what: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The cluster did not say who the caller is.
    #[error(
        "the cluster did not say who you are (SelfSubjectReview gave no user name); a run's owner must be the user creating it"
    )]
    NoUser,
    /// Bad input on the command line.
    #[error("{0}")]
    Usage(String),
    /// The kubeconfig user has no bearer token for the sidecar.
    #[error(
        "the sidecar (which holds the text under review and the trace, never stored in etcd) knows a caller only by a bearer token the cluster accepts, and this kubeconfig user {}.          Without a token, `runs`, `start`, `cancel` and `approve RUN ID --yes --digest DIGEST` (a status patch the API server checks) still work.          For the text and the trace, pass a token with --token: your OIDC id token, or `kubectl create token NAME -n NAMESPACE` for a service account (which may read a run it is allowed to, but never decide)",
        if *client_certificate { "signs in with a client certificate, which only the API server sees" } else { "has no token" }
    )]
    NoToken {
        /// Whether the user signs in with a client certificate.
        client_certificate: bool,
    },
    /// The sidecar's Service was not found.
    #[error(
        "cannot find Orrery's sidecar: no Service labelled app.kubernetes.io/component=sidecar in {}{}. Name the chart's namespace with --sidecar-namespace, or the sidecar's URL with --sidecar URL (or ORRERY_SIDECAR)",
        searched.join(" or "),
        if refusals.is_empty() { String::new() } else { format!(" (the cluster refused: {})", refusals.join("; ")) }
    )]
    NoSidecar {
        /// The namespaces looked in.
        searched: Vec<String>,
        /// Refusals met on the way.
        refusals: Vec<String>,
    },
    /// The sidecar did not answer.
    #[error("{what}: no answer from {reach}: {detail}")]
    SidecarUnreachable {
        /// What was asked.
        what: String,
        /// How the sidecar was found.
        reach: String,
        /// Why.
        detail: String,
    },
    /// The sidecar refused, in its words.
    #[error("{what}: the sidecar refused ({status}{}): {message}", if code.is_empty() { String::new() } else { format!(" {code}") })]
    SidecarRefused {
        /// What was asked.
        what: String,
        /// HTTP status.
        status: u16,
        /// The sidecar's code.
        code: String,
        /// Its message.
        message: String,
    },
    /// The sidecar answered something that is not what its API says.
    #[error("{what}: the sidecar's answer cannot be read: {detail}")]
    SidecarAnswer {
        /// What was asked.
        what: String,
        /// Why.
        detail: String,
    },
    /// A service account tried to decide.
    #[error(
        "you are signed in as {user}, a service account: a service account may read a run but never decide its approvals (only a person who owns the run or is named among its approvers may). Sign in as yourself"
    )]
    ServiceAccount {
        /// Its user name.
        user: String,
    },
    /// About a run's approvals.
    #[error("{0}")]
    Approval(String),
}

impl PluginError {
    fn of(what: impl Into<String>, error: kube::Error) -> PluginError {
        let what = what.into();
        match error {
            kube::Error::Api(status) => PluginError::Refused {
                what,
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            },
            source => PluginError::Failed { what, source },
        }
    }
}

/// Where to connect: kubectl's own flags.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// `--kubeconfig`; else `KUBECONFIG` or `~/.kube/config`.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `--context`; else the kubeconfig's current context.
    pub context: Option<String>,
    /// `-n`; else the context's namespace, else `default`.
    pub namespace: Option<String>,
    /// `--token`: a bearer token used instead of the kubeconfig user's credentials (as kubectl's).
    pub token: Option<String>,
}

/// A connection to the cluster as the kubeconfig's user.
#[derive(Clone)]
pub struct Connection {
    /// The API server's client.
    pub client: Client,
    /// The config it was made from (the sidecar is called with the same credentials).
    pub config: Config,
    /// The namespace to use.
    pub namespace: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.config.cluster_url)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// A client for `target`, and the namespace to use.
pub async fn connect(target: &Target) -> Result<Connection, PluginError> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match &target.kubeconfig {
        Some(path) => {
            Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &options).await?
        }
        None => Config::from_kubeconfig(&options).await?,
    };
    let mut config = config;
    if let Some(token) = target.token.clone().filter(|t| !t.is_empty()) {
        config.auth_info.token = Some(token.into());
        config.auth_info.token_file = None;
        config.auth_info.exec = None;
        config.auth_info.auth_provider = None;
    }
    let namespace = target
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config.clone()).map_err(PluginError::Client)?;
    Ok(Connection {
        client,
        config,
        namespace,
    })
}

/// A run named as kubectl names it (`studiorun/NAME`, `studioruns.studio.orrery.dev/NAME`, what
/// `kubectl create -o name` and `start -o name` print) or by its bare name: the bare name.
pub fn run_name(arg: &str) -> &str {
    match arg.split_once('/') {
        Some((
            "studiorun"
            | "studioruns"
            | "studiorun.studio.orrery.dev"
            | "studioruns.studio.orrery.dev",
            name,
        )) => name,
        _ => arg,
    }
}

/// The caller's user name, as the apiserver authenticates them (a SelfSubjectReview).
pub async fn whoami(client: &Client) -> Result<String, PluginError> {
    let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .map_err(|e| PluginError::of("asking the cluster who you are", e))?;
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .filter(|u| !u.is_empty())
        .ok_or(PluginError::NoUser)
}

/// What `start` creates.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    /// The Composition's name.
    pub composition: String,
    /// A revision of it, else its current one.
    pub revision: Option<i64>,
    /// The run's input.
    pub input: String,
    /// Approvers besides the owner.
    pub approvers: Vec<String>,
    /// Record prompts and replies in the trace.
    pub capture_content: bool,
}

/// The StudioRun `start` creates for `owner` (named after the Composition, `generateName`).
pub fn run_for(request: &StartRequest, owner: &str) -> StudioRun {
    let mut run = StudioRun::new(
        "",
        StudioRunSpec {
            composition_ref: Some(CompositionRef {
                name: request.composition.clone(),
                revision: request.revision,
            }),
            input: request.input.clone(),
            owner: owner.to_owned(),
            approvers: (!request.approvers.is_empty()).then(|| Approvers {
                users: request.approvers.clone(),
                groups: Vec::new(),
            }),
            budgets: None,
            capture_content: request.capture_content,
            composition: None,
            cancel: false,
        },
    );
    run.metadata = ObjectMeta {
        generate_name: Some(format!("{}-", request.composition)),
        ..ObjectMeta::default()
    };
    run
}

/// Starts a run as the caller; gives its name.
pub async fn start(
    client: &Client,
    namespace: &str,
    request: &StartRequest,
) -> Result<String, PluginError> {
    if request.composition.is_empty() {
        return Err(PluginError::Usage(
            "name the Composition to run: kubectl orrery start COMPOSITION --input TEXT".into(),
        ));
    }
    let owner = whoami(client).await?;
    let runs: Api<StudioRun> = Api::namespaced(client.clone(), namespace);
    let created = runs
        .create(&PostParams::default(), &run_for(request, &owner))
        .await
        .map_err(|e| {
            PluginError::of(
                format!("starting {} in {namespace}", request.composition),
                e,
            )
        })?;
    Ok(created.name_any())
}

/// Asks the operator to cancel a run (`spec.cancel: true`).
pub async fn cancel(client: &Client, namespace: &str, run: &str) -> Result<(), PluginError> {
    let runs: Api<StudioRun> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({"spec": {"cancel": true}});
    runs.patch(run, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| PluginError::of(format!("cancelling {run} in {namespace}"), e))?;
    Ok(())
}

/// The runs of `namespace`, or of every namespace the caller may list (`None`).
pub async fn list(client: &Client, namespace: Option<&str>) -> Result<Vec<StudioRun>, PluginError> {
    Ok(list_at(client, namespace).await?.0)
}

/// Like [`list`], with the list's resourceVersion (where a watch starts).
pub async fn list_at(
    client: &Client,
    namespace: Option<&str>,
) -> Result<(Vec<StudioRun>, String), PluginError> {
    let runs: Api<StudioRun> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let items = runs.list(&ListParams::default()).await.map_err(|e| {
        PluginError::of(
            match namespace {
                Some(ns) => format!("listing the runs of {ns}"),
                None => "listing the runs of every namespace".to_owned(),
            },
            e,
        )
    })?;
    let version = items.metadata.resource_version.clone().unwrap_or_default();
    let mut items = items.items;
    sort_runs(&mut items);
    Ok((items, version))
}

/// By namespace, then newest first within each (as people read a list of runs).
pub fn sort_runs(runs: &mut [StudioRun]) {
    runs.sort_by(|a, b| {
        a.namespace().cmp(&b.namespace()).then_with(|| {
            b.creation_timestamp()
                .map(|t| t.0)
                .cmp(&a.creation_timestamp().map(|t| t.0))
        })
    });
}

/// One row of `runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The namespace (shown with `-A`).
    pub namespace: String,
    /// The run's name.
    pub name: String,
    /// Its phase, `Pending` until the operator says.
    pub phase: String,
    /// `name@revision`, `name` before it is resolved, or `(inline)`.
    pub composition: String,
    /// Its owner.
    pub owner: String,
    /// Tokens spent, once known.
    pub tokens: String,
    /// Approvals waiting for a person.
    pub approvals: usize,
    /// Since it was created, as kubectl writes ages.
    pub age: String,
}

/// `run` as a row of `runs`, its age taken at `now`.
pub fn row(run: &StudioRun, now: jiff::Timestamp) -> Row {
    let status = run.status.as_ref();
    let composition = match (
        status.and_then(|s| s.composition.as_ref()),
        &run.spec.composition_ref,
    ) {
        (Some(ran), _) if ran.name.is_empty() => "(inline)".to_owned(),
        (Some(ran), _) => match ran.revision {
            Some(revision) => format!("{}@{revision}", ran.name),
            None => ran.name.clone(),
        },
        (None, Some(reference)) => match reference.revision {
            Some(revision) => format!("{}@{revision}", reference.name),
            None => reference.name.clone(),
        },
        (None, None) => "(inline)".to_owned(),
    };
    let age = run
        .creation_timestamp()
        .map(|created| {
            short_age(
                now.duration_since(created.0)
                    .as_secs()
                    .max(0)
                    .unsigned_abs(),
            )
        })
        .unwrap_or_else(|| "<unknown>".to_owned());
    Row {
        namespace: run.namespace().unwrap_or_default(),
        name: run.name_any(),
        phase: status
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "Pending".to_owned()),
        composition,
        owner: run.spec.owner.clone(),
        tokens: status
            .and_then(|s| s.totals.as_ref())
            .map(|t| t.tokens.to_string())
            .unwrap_or_else(|| "-".to_owned()),
        approvals: status.map_or(0, |s| s.pending_approvals.len()),
        age,
    }
}

/// An age as kubectl writes it: `45s`, `3m12s` under ten minutes, `17m`, `5h3m`, `2d4h`, `12d`.
pub fn short_age(seconds: u64) -> String {
    let d = seconds;
    let (m, h, days) = (d / 60, d / 3600, d / 86_400);
    match d {
        0..60 => format!("{d}s"),
        60..600 => format!("{m}m{}s", d % 60),
        600..3600 => format!("{m}m"),
        3600..86_400 if h < 8 => format!("{h}h{}m", m % 60),
        3600..86_400 => format!("{h}h"),
        _ if days < 8 => format!("{days}d{}h", h % 24),
        _ => format!("{days}d"),
    }
}

/// The columns of `runs`.
const HEADER: [&str; 8] = [
    "NAMESPACE",
    "NAME",
    "PHASE",
    "COMPOSITION",
    "OWNER",
    "TOKENS",
    "APPROVALS",
    "AGE",
];

fn cells(r: &Row) -> Vec<String> {
    vec![
        r.namespace.clone(),
        r.name.clone(),
        r.phase.clone(),
        r.composition.clone(),
        r.owner.clone(),
        r.tokens.clone(),
        r.approvals.to_string(),
        r.age.clone(),
    ]
}

fn header() -> Vec<String> {
    HEADER.iter().map(|s| (*s).to_owned()).collect()
}

/// The width of each column over `lines` (at least `floor`'s).
fn widths(lines: &[Vec<String>], floor: &[usize]) -> Vec<usize> {
    (0..HEADER.len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .chain(floor.get(c).copied())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// One line, padded to `widths`, without the NAMESPACE column unless `all_namespaces`.
fn line(cells: &[String], widths: &[usize], all_namespaces: bool) -> String {
    let first = usize::from(!all_namespaces);
    let last = cells.len().saturating_sub(1);
    let padded: Vec<String> = cells
        .iter()
        .enumerate()
        .skip(first)
        .map(|(c, cell)| {
            if c == last {
                cell.clone()
            } else {
                format!("{cell:<width$}", width = widths[c])
            }
        })
        .collect();
    let mut out = padded.join("   ").trim_end().to_owned();
    out.push('\n');
    out
}

/// The table `runs` prints (with a NAMESPACE column for `-A`), columns padded as kubectl's are.
pub fn table(rows: &[Row], all_namespaces: bool) -> String {
    let mut lines = vec![header()];
    lines.extend(rows.iter().map(cells));
    let widths = widths(&lines, &[]);
    lines
        .iter()
        .map(|l| line(l, &widths, all_namespaces))
        .collect()
}

/// How `runs -w` prints: the header and the first rows padded to room for later ones, then a
/// line for each change.
#[derive(Debug, Clone)]
pub struct WatchTable {
    widths: Vec<usize>,
    all_namespaces: bool,
}

impl WatchTable {
    /// Widths from the first `rows`, with room for the usual names.
    pub fn new(rows: &[Row], all_namespaces: bool) -> WatchTable {
        let mut lines = vec![header()];
        lines.extend(rows.iter().map(cells));
        WatchTable {
            widths: widths(&lines, &[12, 28, 16, 20, 10, 6, 9, 5]),
            all_namespaces,
        }
    }

    /// The header line.
    pub fn header(&self) -> String {
        line(&header(), &self.widths, self.all_namespaces)
    }

    /// A row's line.
    pub fn row(&self, row: &Row) -> String {
        line(&cells(row), &self.widths, self.all_namespaces)
    }
}

/// Follows the runs of `namespace` (or every namespace, `None`) after `resource_version`,
/// calling `changed` with each run that changes (`deleted` true when it is gone). Returns when
/// the watch cannot go on (an error); a watch the API server ended is opened again.
pub async fn watch_runs(
    client: &Client,
    namespace: Option<&str>,
    resource_version: &str,
    mut changed: impl FnMut(&StudioRun, bool),
) -> Result<(), PluginError> {
    let runs: Api<StudioRun> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut version = resource_version.to_owned();
    loop {
        let stream = runs
            .watch(&WatchParams::default().timeout(290), &version)
            .await
            .map_err(|e| PluginError::of("watching the runs", e))?;
        let mut stream = stream.boxed();
        while let Some(event) = stream
            .try_next()
            .await
            .map_err(|e| PluginError::of("watching the runs", e))?
        {
            match event {
                WatchEvent::Added(run) | WatchEvent::Modified(run) => {
                    if let Some(v) = run.resource_version() {
                        version = v;
                    }
                    changed(&run, false);
                }
                WatchEvent::Deleted(run) => {
                    if let Some(v) = run.resource_version() {
                        version = v;
                    }
                    changed(&run, true);
                }
                WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                WatchEvent::Error(status) => {
                    // 410 Gone: the version is too old; list again and go on from there.
                    if status.code == 410 {
                        let list = runs
                            .list(&ListParams::default())
                            .await
                            .map_err(|e| PluginError::of("listing the runs again", e))?;
                        version = list.metadata.resource_version.unwrap_or_default();
                        for run in &list.items {
                            changed(run, false);
                        }
                        break;
                    }
                    return Err(PluginError::Refused {
                        what: "watching the runs".into(),
                        code: status.code,
                        reason: status.reason,
                        message: status.message,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_crds::run::{RanComposition, RunPhase, RunTotals, StudioRunStatus};

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn a_run_may_be_named_as_kubectl_prints_it() {
        for (arg, name) in [
            ("reviewed-1", "reviewed-1"),
            ("studiorun/reviewed-1", "reviewed-1"),
            ("studiorun.studio.orrery.dev/reviewed-1", "reviewed-1"),
            ("studioruns/reviewed-1", "reviewed-1"),
            ("pod/reviewed-1", "pod/reviewed-1"),
        ] {
            assert_eq!(run_name(arg), name, "{arg}");
        }
    }

    #[test]
    fn ages_read_as_kubectl_writes_them() {
        let cases = [
            (0, "0s"),
            (45, "45s"),
            (192, "3m12s"),
            (1020, "17m"),
            (18_180, "5h3m"),
            (36_000, "10h"),
            (187_200, "2d4h"),
            (1_036_800, "12d"),
        ];
        for (seconds, want) in cases {
            assert_eq!(short_age(seconds), want, "{seconds} s");
        }
    }

    fn run(name: &str, status: Option<StudioRunStatus>) -> StudioRun {
        let mut r = run_for(
            &StartRequest {
                composition: "human-review".into(),
                input: "2.4".into(),
                ..StartRequest::default()
            },
            "alice",
        );
        r.metadata.name = Some(name.into());
        r.metadata.namespace = Some("team-a".into());
        r.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            at("2026-12-06T10:00:00Z"),
        ));
        r.status = status;
        r
    }

    #[test]
    fn a_started_run_is_owned_by_the_caller_and_named_after_its_composition() {
        let r = run_for(
            &StartRequest {
                composition: "release-notes".into(),
                revision: Some(3),
                input: "v2.4".into(),
                approvers: vec!["bob".into()],
                capture_content: true,
            },
            "alice",
        );
        let value = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(value["metadata"]["generateName"], "release-notes-");
        assert_eq!(
            value["spec"]["compositionRef"],
            serde_json::json!({"name": "release-notes", "revision": 3})
        );
        assert_eq!(value["spec"]["owner"], "alice");
        assert_eq!(
            value["spec"]["approvers"]["users"],
            serde_json::json!(["bob"])
        );
        assert_eq!(value["spec"]["captureContent"], true);
        let plain =
            serde_json::to_value(run_for(&StartRequest::default(), "alice")).unwrap_or_default();
        assert!(plain["spec"].get("approvers").is_none(), "{plain}");
    }

    #[test]
    fn a_row_shows_phase_composition_and_revision_tokens_approvals_and_age() {
        let now = at("2026-12-06T10:03:12Z");
        let pending = row(&run("a", None), now);
        assert_eq!(
            pending,
            Row {
                namespace: "team-a".into(),
                name: "a".into(),
                phase: "Pending".into(),
                composition: "human-review".into(),
                owner: "alice".into(),
                tokens: "-".into(),
                approvals: 0,
                age: "3m12s".into(),
            }
        );
        let status = StudioRunStatus {
            phase: Some(RunPhase::Succeeded),
            composition: Some(RanComposition {
                name: "human-review".into(),
                revision: Some(2),
                ..RanComposition::default()
            }),
            totals: Some(RunTotals {
                tokens: 1234,
                ..RunTotals::default()
            }),
            ..StudioRunStatus::default()
        };
        let done = row(&run("b", Some(status)), now);
        assert_eq!(
            (
                done.phase.as_str(),
                done.composition.as_str(),
                done.tokens.as_str()
            ),
            ("Succeeded", "human-review@2", "1234")
        );
        let inline = StudioRunStatus {
            composition: Some(RanComposition::default()),
            ..StudioRunStatus::default()
        };
        assert_eq!(row(&run("c", Some(inline)), now).composition, "(inline)");
    }

    #[test]
    fn runs_list_by_namespace_then_newest_first() {
        let mut runs = vec![run("old", None), run("new", None), run("other", None)];
        runs[1].metadata.creation_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at("2026-12-06T11:00:00Z")),
        );
        runs[2].metadata.namespace = Some("team-0".into());
        sort_runs(&mut runs);
        let names: Vec<String> = runs.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["other", "new", "old"]);
    }

    #[test]
    fn the_table_pads_its_columns_and_shows_namespaces_only_with_all_namespaces() {
        let now = at("2026-12-06T10:00:45Z");
        let rows = vec![row(&run("release-notes-x7k2p", None), now)];
        assert_eq!(
            table(&rows, false),
            "NAME                  PHASE     COMPOSITION    OWNER   TOKENS   APPROVALS   AGE\n\
             release-notes-x7k2p   Pending   human-review   alice   -        0           45s\n"
        );
        let wide = table(&rows, true);
        assert!(wide.starts_with("NAMESPACE   NAME"), "{wide}");
        assert!(wide.contains("\nteam-a      release-notes-x7k2p"), "{wide}");
    }
}
