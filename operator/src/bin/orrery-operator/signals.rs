//! The stop signals: SIGTERM/SIGINT, the first asks to stop, a second exits at once.

use anyhow::Context as _;
use tokio::sync::watch;

/// SIGTERM/SIGINT, listened for from the start (a signal before the Lease is won is not
/// lost): the first sets the returned flag; a second exits 1 at once.
pub fn signals() -> anyhow::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("stopping: finishing the reconciles in flight");
        tx.send_replace(true);
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("second signal: exiting at once");
        std::process::exit(1);
    });
    Ok(rx)
}

/// Resolves once a stop signal came.
pub async fn stopping(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}
