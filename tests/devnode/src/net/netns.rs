//! Entering a named network namespace (`/run/netns/<name>`, made by `ip netns add`) from Rust:
//! the calling thread moves into it with `setns`, so sockets it opens afterwards live there.

use std::path::PathBuf;

use nix::sched::{CloneFlags, setns};

use super::NetError;

/// Where `ip netns` keeps the namespace called `name`.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Moves the CURRENT THREAD into the network namespace `name`, for good: call it on a thread
/// you own (a listener's or a client's), never on a runtime's worker thread.
pub fn enter(name: &str) -> Result<(), NetError> {
    let path = netns_path(name);
    let file = std::fs::File::open(&path).map_err(|e| NetError::Enter {
        netns: name.to_owned(),
        problem: format!("opening {}: {e}", path.display()),
        fix: "create the namespace first (PodNetwork::add_pod)".into(),
    })?;
    setns(&file, CloneFlags::CLONE_NEWNET).map_err(|e| NetError::Enter {
        netns: name.to_owned(),
        problem: format!("setns: {e}"),
        fix: "run as root (setns needs CAP_SYS_ADMIN)".into(),
    })
}

/// Runs `f` on a new thread inside the network namespace `name` and returns its result.
pub fn run_in<T, F>(name: &str, f: F) -> Result<T, NetError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let owned = name.to_owned();
    let handle = std::thread::Builder::new()
        .name(format!("netns-{name}"))
        .spawn(move || enter(&owned).map(|()| f()))
        .map_err(|e| NetError::Enter {
            netns: name.to_owned(),
            problem: format!("spawning a thread: {e}"),
            fix: "check the process's thread limit".into(),
        })?;
    handle.join().map_err(|_| NetError::Enter {
        netns: name.to_owned(),
        problem: "the function run inside panicked".into(),
        fix: "see the panic message above".into(),
    })?
}
