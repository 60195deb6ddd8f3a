//! The errors of pod networking: each names the command that failed, what it printed and the
//! fix.

/// An error creating, changing or removing the dev node's pod networks.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("`{command}`: `{program}` is not installed; {fix}")]
    Missing {
        program: String,
        command: String,
        fix: String,
    },
    #[error("`{command}` could not be started: {source}; {fix}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
        fix: String,
    },
    #[error("`{command}` failed ({status}): {stderr}; {fix}")]
    Command {
        command: String,
        status: String,
        stderr: String,
        fix: String,
    },
    #[error("`{command}` printed what could not be read: {problem}")]
    Output { command: String, problem: String },
    #[error(
        "the pod subnet {subnet} overlaps {address} on the host's interface {interface}; choose a \
         subnet no host interface uses (NetworkConfig::subnet)"
    )]
    Overlap {
        subnet: String,
        address: String,
        interface: String,
    },
    #[error(
        "the pod subnet {subnet} has no free address left ({used} pods); remove pods or choose a \
         larger subnet"
    )]
    Exhausted { subnet: String, used: usize },
    #[error("invalid pod network configuration: {problem}; {fix}")]
    Config { problem: String, fix: String },
    #[error("pod {0:?} already has a network on this node; remove it first")]
    PodExists(String),
    #[error("pod {0:?} has no network on this node")]
    UnknownPod(String),
    #[error("entering the network namespace {netns}: {problem}; {fix}")]
    Enter {
        netns: String,
        problem: String,
        fix: String,
    },
}
