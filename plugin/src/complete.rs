//! Shell completion, as kubectl asks a plugin for it (kubectl 1.26 and later): on
//! `kubectl orrery …<TAB>`, kubectl runs `kubectl_complete-orrery` from the PATH with the words
//! typed after `orrery` (the last one being completed, perhaps empty) and reads Cobra's format
//! back: one candidate a line (a tab, then a description), and a last line `:<directive>`
//! (`:4` no file names, `:0` the shell's default, file names).
//!
//! Run and Composition names come from the cluster, as the person (their kubeconfig, context and
//! namespace, including `--context`, `-n` and `--kubeconfig` already typed); nothing is offered
//! when the cluster cannot be asked.

use crate::{Connection, Target, connect};
use kube::Api;
use kube::api::ListParams;
use orrery_crds::{Composition, StudioRun};

/// The commands, with what they do.
pub const COMMANDS: [(&str, &str); 9] = [
    ("runs", "List runs"),
    ("start", "Start a run of a Composition, owned by you"),
    ("logs", "Print a run's trace; -f follows it live"),
    (
        "approvals",
        "Show a run's pending approvals and the text of each",
    ),
    (
        "approve",
        "Approve a pending approval after reading its text",
    ),
    ("reject", "Reject a pending approval"),
    ("answer", "Answer a remote agent's question"),
    ("cancel", "Cancel a run"),
    ("help", "Print help"),
];

/// Flags that take a value, everywhere.
const GLOBAL_VALUE_FLAGS: [&str; 7] = [
    "--kubeconfig",
    "--context",
    "-n",
    "--namespace",
    "--token",
    "--sidecar",
    "--sidecar-namespace",
];

/// The flags of a command (global ones too).
fn flags_of(command: &str) -> Vec<&'static str> {
    let mut flags = vec![
        "--kubeconfig",
        "--context",
        "--namespace",
        "--token",
        "--sidecar",
        "--sidecar-namespace",
    ];
    flags.extend(match command {
        "runs" => &["--all-namespaces", "--watch"][..],
        "start" => &[
            "--input",
            "--file",
            "--revision",
            "--approver",
            "--capture-content",
            "--follow",
        ][..],
        "logs" => &["--follow", "--output"][..],
        "approve" => &["--yes", "--digest", "--comment"][..],
        "reject" => &["--yes", "--comment"][..],
        "answer" => &["--yes", "--digest"][..],
        _ => &[][..],
    });
    flags
}

/// What the word being completed asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// A command name.
    Command,
    /// A flag of this command.
    Flag(String),
    /// A run's name.
    Run,
    /// A Composition's name.
    Composition,
    /// A pending approval's id of this run.
    Approval(String),
    /// A kubeconfig context.
    Context,
    /// A file name (the shell's own completion).
    File,
    /// `-o`'s values.
    OutputFormat,
    /// Nothing to offer.
    Nothing,
}

/// What the words typed so far (`words`, the last one being completed) ask for, and the kubectl
/// flags among them.
pub fn plan(words: &[String]) -> (Want, Target) {
    let mut target = Target::default();
    let mut positional: Vec<&str> = Vec::new();
    let Some((current, before)) = words.split_last() else {
        return (Want::Command, target);
    };
    let mut i = 0;
    let mut value_of: Option<&str> = None;
    while i < before.len() {
        let w = before[i].as_str();
        // `-f` is `start`'s input file but `logs`' --follow.
        let starting = positional.first() == Some(&"start");
        let takes_value = GLOBAL_VALUE_FLAGS.contains(&w)
            || (w == "-f" && starting)
            || matches!(
                w,
                "--input"
                    | "--file"
                    | "--revision"
                    | "--approver"
                    | "--digest"
                    | "--comment"
                    | "-o"
                    | "--output"
            );
        if takes_value {
            match before.get(i + 1) {
                Some(v) => {
                    match w {
                        "--kubeconfig" => target.kubeconfig = Some(v.into()),
                        "--context" => target.context = Some(v.clone()),
                        "-n" | "--namespace" => target.namespace = Some(v.clone()),
                        "--token" => target.token = Some(v.clone()),
                        _ => {}
                    }
                    i += 2;
                }
                None => {
                    value_of = Some(w);
                    i += 1;
                }
            }
            continue;
        }
        if let Some((flag, v)) = w.split_once('=') {
            match flag {
                "--kubeconfig" => target.kubeconfig = Some(v.into()),
                "--context" => target.context = Some(v.to_owned()),
                "--namespace" => target.namespace = Some(v.to_owned()),
                _ => {}
            }
        } else if !w.starts_with('-') {
            positional.push(w);
        }
        i += 1;
    }
    let want = match value_of {
        Some("--context") => Want::Context,
        Some("-f" | "--file" | "--kubeconfig") => Want::File,
        Some("-o" | "--output") => Want::OutputFormat,
        Some("-n" | "--namespace" | "--sidecar-namespace") => Want::Nothing,
        Some(_) => Want::Nothing,
        None => match positional.split_first() {
            None if current.starts_with('-') => Want::Flag(String::new()),
            None => Want::Command,
            Some((command, _)) if current.starts_with('-') => Want::Flag((*command).to_owned()),
            Some((command, args)) => match (*command, args) {
                ("logs" | "approvals" | "approve" | "reject" | "answer" | "cancel", []) => {
                    Want::Run
                }
                ("approve" | "reject" | "answer", [run]) => Want::Approval((*run).to_owned()),
                ("start", []) => Want::Composition,
                _ => Want::Nothing,
            },
        },
    };
    (want, target)
}

/// The lines kubectl reads back for `words`.
pub async fn complete(words: &[String]) -> String {
    let (want, target) = plan(words);
    let current = words.last().map(String::as_str).unwrap_or_default();
    let mut directive = 4;
    let candidates: Vec<String> = match want {
        Want::Command => COMMANDS
            .iter()
            .map(|(name, about)| format!("{name}\t{about}"))
            .collect(),
        Want::Flag(command) => flags_of(&command).iter().map(|f| (*f).to_owned()).collect(),
        Want::OutputFormat => vec!["json".to_owned(), "text".to_owned()],
        Want::File => {
            directive = 0;
            Vec::new()
        }
        Want::Context => contexts(&target),
        Want::Run => names::<StudioRun>(&target).await,
        Want::Composition => names::<Composition>(&target).await,
        Want::Approval(run) => approvals(&target, &run).await,
        Want::Nothing => Vec::new(),
    };
    let mut out = String::new();
    for c in candidates.iter().filter(|c| c.starts_with(current)) {
        out.push_str(c);
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

fn contexts(target: &Target) -> Vec<String> {
    let config = match &target.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    };
    config
        .map(|c| c.contexts.into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

async fn connection(target: &Target) -> Option<Connection> {
    tokio::time::timeout(std::time::Duration::from_secs(5), connect(target))
        .await
        .ok()?
        .ok()
}

async fn names<K>(target: &Target) -> Vec<String>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let Some(c) = connection(target).await else {
        return Vec::new();
    };
    let api: Api<K> = Api::namespaced(c.client, &c.namespace);
    match tokio::time::timeout(
        std::time::Duration::from_secs(5),
        api.list_metadata(&ListParams::default()),
    )
    .await
    {
        Ok(Ok(list)) => list
            .items
            .into_iter()
            .filter_map(|m| m.metadata.name)
            .collect(),
        _ => Vec::new(),
    }
}

async fn approvals(target: &Target, run: &str) -> Vec<String> {
    let Some(c) = connection(target).await else {
        return Vec::new();
    };
    let api: Api<StudioRun> = Api::namespaced(c.client, &c.namespace);
    match tokio::time::timeout(std::time::Duration::from_secs(5), api.get(run)).await {
        Ok(Ok(run)) => run
            .status
            .map(|s| {
                s.pending_approvals
                    .into_iter()
                    .map(|p| format!("{}\t{:?} at node {}", p.id, p.kind, p.node))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn each_position_asks_for_what_the_command_takes_there() {
        let cases: [(&[&str], Want); 12] = [
            (&[""], Want::Command),
            (&["lo"], Want::Command),
            (&["logs", ""], Want::Run),
            (&["logs", "-f", "rel"], Want::Run),
            (&["start", ""], Want::Composition),
            (
                &["approve", "reviewed-1", ""],
                Want::Approval("reviewed-1".into()),
            ),
            (
                &["reject", "-n", "team-a", "reviewed-1", "a"],
                Want::Approval("reviewed-1".into()),
            ),
            (&["logs", "run-1", ""], Want::Nothing),
            (&["logs", "--"], Want::Flag("logs".into())),
            (&["--context", ""], Want::Context),
            (&["start", "x", "-f", ""], Want::File),
            (&["logs", "x", "-o", ""], Want::OutputFormat),
        ];
        for (typed, want) in cases {
            assert_eq!(plan(&words(typed)).0, want, "{typed:?}");
        }
    }

    #[test]
    fn kubectl_flags_typed_before_are_used_to_ask_the_cluster() {
        let (_, target) = plan(&words(&[
            "--kubeconfig",
            "/tmp/k",
            "--context=alice",
            "logs",
            "-n",
            "team-a",
            "",
        ]));
        assert_eq!(
            target.kubeconfig.as_deref(),
            Some(std::path::Path::new("/tmp/k"))
        );
        assert_eq!(target.context.as_deref(), Some("alice"));
        assert_eq!(target.namespace.as_deref(), Some("team-a"));
    }

    #[tokio::test]
    async fn commands_and_flags_are_offered_by_prefix_without_file_names() {
        assert_eq!(
            complete(&words(&["ap"])).await,
            "approvals\tShow a run's pending approvals and the text of each\napprove\tApprove a pending approval after reading its text\n:4\n"
        );
        let flags = complete(&words(&["logs", "--f"])).await;
        assert_eq!(flags, "--follow\n:4\n");
        assert_eq!(complete(&words(&["start", "x", "-f", ""])).await, ":0\n");
    }
}
