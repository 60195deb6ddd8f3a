//! Stopping a pod: SIGTERM, SIGKILL after the grace period, the final status and the last
//! `DELETE`, as the kubelet does.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{DeleteParams, Preconditions};
use nix::sys::signal::Signal;
use tokio::time::Instant;

use super::{REAP_TIMEOUT, Stop, Worker};
use crate::PodExecutorError;
use crate::oci::RuncSignal;
use crate::status::Phase;

impl Worker {
    /// Stops every process: SIGTERM, SIGKILL after the grace period, then reports and (when
    /// deleted) removes the pod like the kubelet's last step.
    pub(super) async fn terminate(&mut self, stop: Stop) -> Result<(), PodExecutorError> {
        let grace = match stop {
            Stop::Gone => Duration::ZERO,
            Stop::Deleting | Stop::DeadlineExceeded => self.grace(),
            Stop::Shutdown => self.grace().min(self.ctx.shutdown_grace),
        };
        let first = if grace.is_zero() {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        let runc_ids: Vec<String> = self
            .procs
            .values()
            .filter_map(|p| p.runc.as_ref().map(|r| r.id().to_owned()))
            .collect();
        for proc in self.procs.values() {
            match &proc.runc {
                // `runc run` would pass a TERM on, but not a KILL: ask runc.
                Some(r) => self.runc_kill(r.id(), first),
                None => proc.guard.signal(first),
            }
        }
        self.reap(grace).await;
        for proc in self.procs.values() {
            if let Some(r) = &proc.runc {
                self.runc_kill(r.id(), Signal::SIGKILL);
            }
            proc.guard.signal(Signal::SIGKILL);
        }
        self.reap(REAP_TIMEOUT).await;
        // Anything not reaped by now is killed again when its guard drops.
        self.procs.clear();
        if let Some(rt) = &self.ctx.containers {
            for id in &runc_ids {
                if let Err(e) = rt.runc().delete(id) {
                    eprintln!("pod-executor: deleting runc container {id}: {e}");
                }
            }
        }
        match stop {
            Stop::Gone => {
                self.remove_dir();
                Ok(())
            }
            Stop::Deleting => {
                let all_ok = self.state.main.iter().all(|c| c.exit_code() == Some(0));
                self.state.phase = if all_ok {
                    Phase::Succeeded
                } else {
                    Phase::Failed
                };
                self.patch().await?;
                self.delete_now().await
            }
            Stop::Shutdown => {
                self.state.phase = Phase::Failed;
                self.state.reason = Some("Terminated".into());
                self.state.message =
                    Some("Pod was terminated in response to imminent node shutdown.".into());
                self.patch().await
            }
            Stop::DeadlineExceeded => self.deadline_exceeded().await,
        }
    }

    /// The kubelet's words for a pod past `activeDeadlineSeconds`: `Failed`, reason
    /// `DeadlineExceeded`; the containers keep the exit status and termination message they
    /// ended with.
    async fn deadline_exceeded(&mut self) -> Result<(), PodExecutorError> {
        self.state.phase = Phase::Failed;
        self.state.reason = Some("DeadlineExceeded".into());
        self.state.message =
            Some("Pod was active on the node longer than the specified deadline".into());
        self.patch().await
    }

    /// Collects exits until every process has ended or `timeout` passes.
    async fn reap(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.procs.is_empty() {
            tokio::select! {
                Some((slot, status)) = self.exits.recv() => self.exited(slot, &status),
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    fn runc_kill(&self, id: &str, signal: Signal) {
        let Some(rt) = &self.ctx.containers else {
            return;
        };
        let signal = if signal == Signal::SIGKILL {
            RuncSignal::Kill
        } else {
            RuncSignal::Term
        };
        // A container that already ended is not an error.
        let _ = rt.runc().kill(id, signal);
    }

    fn grace(&self) -> Duration {
        let pod = self.pod();
        let secs = pod
            .metadata
            .deletion_grace_period_seconds
            .or_else(|| {
                pod.spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .unwrap_or(30);
        Duration::from_secs(u64::try_from(secs).unwrap_or(0))
    }

    /// The pod stopped before any container started.
    pub(super) async fn stop_unstarted(&mut self, stop: Stop) -> Result<(), PodExecutorError> {
        match stop {
            Stop::Gone => {
                self.remove_dir();
                Ok(())
            }
            Stop::Deleting => self.delete_now().await,
            Stop::DeadlineExceeded => self.deadline_exceeded().await,
            Stop::Shutdown => {
                self.state.phase = Phase::Failed;
                self.state.reason = Some("Terminated".into());
                self.state.message =
                    Some("Pod was terminated in response to imminent node shutdown.".into());
                self.patch().await
            }
        }
    }

    /// `DELETE` with grace period 0 and a UID precondition (the kubelet's final step; the pod's
    /// finalizers, if any, stay).
    pub(super) async fn delete_now(&mut self) -> Result<(), PodExecutorError> {
        let name = self.pod().name_any();
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: self.pod().uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(&name, &dp).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => {}
            Err(e) => return Err(PodExecutorError::kube(format!("deleting pod {name}"), e)),
        }
        self.remove_dir();
        Ok(())
    }

    fn remove_dir(&self) {
        if !self.ctx.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
