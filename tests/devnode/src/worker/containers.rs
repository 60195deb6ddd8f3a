//! Starting containers, their exits, and restarts per the pod's `restartPolicy`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitStatus;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tokio::time::Instant;

use super::{CONFIG_RETRY, Proc, Slot, Worker};
use crate::PodExecutorError;
use crate::container::{self, RuncGuard};
use crate::images::ImageBinary;
use crate::launch::{self, LaunchError, MountMap};
use crate::objects;
use crate::process;
use crate::status::{ContainerRun, Phase, State, Terminated};
use crate::volumes::{self, VolumeError};

impl Worker {
    /// Starts the container in `slot`. Its env is resolved now (Secrets and ConfigMaps
    /// fetched again), as the kubelet does at each container start.
    async fn start(&mut self, slot: Slot) -> Result<(), PodExecutorError> {
        let Some(c) = self.container(slot) else {
            return Ok(());
        };
        let archive = self.archives.get(&slot).cloned();
        let bin = self.bins.get(&slot).cloned();
        if archive.is_none() && bin.is_none() {
            return Ok(());
        }
        self.objects = objects::fetch(&self.ctx.client, self.pod()).await?;
        let launched = match (archive, bin) {
            (Some(archive), _) => self.launch_container(slot, &c, &archive).await,
            (None, Some(bin)) => self.launch(slot, &c, &bin),
            (None, None) => return Ok(()),
        };
        match launched {
            Ok(proc) => {
                let (pid, started_at) = (proc.pid, proc.started_at);
                let runtime_id = proc.runc.as_ref().map(|r| format!("runc://{}", r.id()));
                self.procs.insert(slot, proc);
                if let Some(run) = self.run_state(slot) {
                    run.runtime_id = runtime_id;
                    run.state = State::Running { pid, started_at };
                }
            }
            Err(StartFailure::Launch(LaunchError::Config(message))) => {
                if let Some(run) = self.run_state(slot) {
                    run.state = State::Waiting {
                        reason: "CreateContainerConfigError".into(),
                        message: Some(message),
                    };
                }
            }
            Err(StartFailure::Launch(LaunchError::Start(message))) => {
                let now = Timestamp::now();
                if let Some(run) = self.run_state(slot) {
                    run.state = State::Terminated(Terminated {
                        exit_code: 128,
                        signal: None,
                        reason: "StartError".into(),
                        message: Some(message),
                        started_at: None,
                        finished_at: now,
                        pid: None,
                    });
                }
            }
            Err(StartFailure::Executor(e)) => return Err(e),
        }
        Ok(())
    }

    fn launch(&self, slot: Slot, c: &Container, bin: &ImageBinary) -> Result<Proc, StartFailure> {
        let env = launch::container_env(
            self.pod(),
            c,
            &self.objects,
            &self.addresses(),
            &self.service_env(),
        )?;
        let cdir = self.dir.join("containers").join(&c.name);
        let mounts = MountMap::new(cdir.join("root"), c);
        let args = launch::argv(c, bin, &env, &mounts)?;
        let termination_path = launch::termination_message_path(c);
        volumes::mount_container(c, &self.volumes, &mounts, &env, &termination_path).map_err(
            |e| match e {
                VolumeError::Launch(l) => StartFailure::Launch(l),
                VolumeError::Io(e) => StartFailure::Executor(e),
            },
        )?;
        let cwd = match c.working_dir.as_deref().filter(|w| !w.is_empty()) {
            Some(w) => mounts.host_path(w),
            None => mounts.root().to_path_buf(),
        };
        let log = self.dir.join("logs").join(format!("{}.log", c.name));
        let spec = process::Spec {
            program: bin.path.clone(),
            args,
            env: launch::process_env(self.pod(), &env, &mounts),
            cwd,
            log: log.clone(),
        };
        let (pid, guard) =
            process::spawn(&spec, slot, self.exits_tx.clone()).map_err(StartFailure::Executor)?;
        Ok(Proc {
            pid,
            started_at: Timestamp::now(),
            guard,
            termination_file: mounts.host_path(&termination_path),
            policy: c
                .termination_message_policy
                .clone()
                .unwrap_or_else(|| "File".into()),
            log,
            runc: None,
        })
    }

    /// Container mode: the image's root filesystem (unpacked once), a bundle made from the
    /// Pod (see [`crate::container`]) and `runc run` in the foreground as the process.
    async fn launch_container(
        &self,
        slot: Slot,
        c: &Container,
        archive: &Path,
    ) -> Result<Proc, StartFailure> {
        let Some(rt) = self.ctx.containers.clone() else {
            return Err(LaunchError::Start("container mode is off".into()).into());
        };
        let env = launch::container_env(
            self.pod(),
            c,
            &self.objects,
            &self.addresses(),
            &self.service_env(),
        )?;
        let archive_path = archive.to_path_buf();
        let rt2 = rt.clone();
        let image = tokio::task::spawn_blocking(move || rt2.prepare(&archive_path))
            .await
            .map_err(|e| StartFailure::Executor(e.into()))?
            .map_err(|e| LaunchError::Start(e.to_string()))?;
        let cdir = self.dir.join("containers").join(&c.name);
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |e| StartFailure::Executor(PodExecutorError::io(action, &path, e))
        };
        std::fs::create_dir_all(&cdir).map_err(io("creating", &cdir))?;
        // The termination-message file, writable by whatever user the container runs as
        // (the kubelet makes it 0666 too).
        let termination_file = cdir.join("termination-log");
        std::fs::write(&termination_file, b"").map_err(io("creating", &termination_file))?;
        std::fs::set_permissions(&termination_file, std::fs::Permissions::from_mode(0o666))
            .map_err(io("setting the mode of", &termination_file))?;
        let spec = container::bundle_spec(
            self.pod(),
            c,
            &image.config,
            &env,
            &self.volumes,
            &termination_file,
            &self.network,
        )?;
        // A missing subPath is created as a directory, as the kubelet does.
        for bind in &spec.binds {
            if !bind.source.exists() {
                std::fs::create_dir_all(&bind.source).map_err(io("creating", &bind.source))?;
            }
        }
        let bundle = cdir.join("bundle");
        std::fs::create_dir_all(&bundle).map_err(io("creating", &bundle))?;
        // A read-only root is the shared unpacked image; a writable one a private copy.
        let rootfs = if spec.readonly_root {
            image.rootfs.clone()
        } else {
            let private = cdir.join("rootfs");
            if private.exists() {
                std::fs::remove_dir_all(&private).map_err(io("removing", &private))?;
            }
            let (from, to) = (image.rootfs.clone(), private.clone());
            tokio::task::spawn_blocking(move || container::copy_rootfs(&from, &to))
                .await
                .map_err(|e| StartFailure::Executor(e.into()))?
                .map_err(io("copying the image's root filesystem to", &private))?;
            private
        };
        let config = bundle.join("config.json");
        let text = serde_json::to_vec_pretty(&spec.config_json(&rootfs))
            .map_err(|e| LaunchError::Start(format!("config.json for {}: {e}", c.name)))?;
        std::fs::write(&config, text).map_err(io("writing", &config))?;
        let id = container::container_id(self.pod(), &c.name);
        // A container of an earlier start of this slot.
        let _ = rt.runc().delete(&id);
        let log = self.dir.join("logs").join(format!("{}.log", c.name));
        let spec = process::Spec {
            program: rt.runc().binary().to_path_buf(),
            args: vec![
                "--root".into(),
                rt.state_dir().to_string_lossy().into_owned(),
                "run".into(),
                "--bundle".into(),
                bundle.to_string_lossy().into_owned(),
                id.clone(),
            ],
            env: vec![("PATH".into(), launch::DEFAULT_PATH.into())],
            cwd: bundle.clone(),
            log: log.clone(),
        };
        let (pid, guard) =
            process::spawn(&spec, slot, self.exits_tx.clone()).map_err(StartFailure::Executor)?;
        Ok(Proc {
            pid,
            started_at: Timestamp::now(),
            guard,
            termination_file,
            policy: c
                .termination_message_policy
                .clone()
                .unwrap_or_else(|| "File".into()),
            log,
            runc: Some(RuncGuard::new(rt.clone(), id)),
        })
    }

    /// Records the exit of the process in `slot`.
    pub(super) fn exited(&mut self, slot: Slot, status: &std::io::Result<ExitStatus>) {
        let Some(mut proc) = self.procs.remove(&slot) else {
            return;
        };
        proc.guard.finish();
        if let (Some(guard), Some(rt)) = (&proc.runc, &self.ctx.containers)
            && let Err(e) = rt.runc().delete(guard.id())
        {
            eprintln!("pod-executor: deleting runc container {}: {e}", guard.id());
        }
        let (exit_code, signal) = process::exit_code(status);
        let message = process::termination_message(
            &proc.termination_file,
            &proc.policy,
            &proc.log,
            exit_code,
        );
        if let Some(run) = self.run_state(slot) {
            run.state = State::Terminated(Terminated {
                exit_code,
                signal,
                reason: if exit_code == 0 { "Completed" } else { "Error" }.into(),
                message,
                started_at: Some(proc.started_at),
                finished_at: Timestamp::now(),
                pid: Some(proc.pid),
            });
        }
    }

    /// Whether the container that just ended in `slot` restarts.
    fn restarts(&self, slot: Slot, exit_code: i32) -> bool {
        let policy = self.restart_policy();
        match slot {
            // Init containers restart on failure unless the pod never restarts.
            Slot::Init(_) => exit_code != 0 && policy != "Never",
            Slot::Main(_) => match policy.as_str() {
                "Never" => false,
                "OnFailure" => exit_code != 0,
                _ => true,
            },
        }
    }

    /// Runs the containers in `slots` until each has ended for good. `Some(all exited 0)`, or
    /// `None` when the pod stopped (deleted, gone, shutdown: already handled).
    pub(super) async fn run_slots(
        &mut self,
        slots: &[Slot],
    ) -> Result<Option<bool>, PodExecutorError> {
        // slot → when to (re)start it, and whether that is a restart.
        let mut pending: BTreeMap<Slot, (Instant, bool)> = slots
            .iter()
            .map(|s| (*s, (Instant::now(), false)))
            .collect();
        loop {
            let now = Instant::now();
            let due: Vec<(Slot, bool)> = pending
                .iter()
                .filter(|(_, (at, _))| *at <= now)
                .map(|(s, (_, restart))| (*s, *restart))
                .collect();
            for (slot, restart) in due {
                pending.remove(&slot);
                if restart && let Some(run) = self.run_state(slot) {
                    run.restart_count += 1;
                }
                self.start(slot).await?;
                let run = self.run_state(slot).map(|r| r.state.clone());
                match run {
                    Some(State::Waiting { .. }) => {
                        pending.insert(slot, (Instant::now() + CONFIG_RETRY, false));
                    }
                    Some(State::Terminated(t)) => {
                        self.after_exit(slot, t.exit_code, &mut pending);
                    }
                    _ => {}
                }
            }
            if matches!(slots.first(), Some(Slot::Main(_)))
                && self.state.main.iter().any(ContainerRun::is_running)
            {
                self.state.phase = Phase::Running;
            }
            self.patch().await?;

            let done = slots.iter().all(|s| {
                !pending.contains_key(s)
                    && matches!(
                        self.run_state_ref(*s).map(|r| &r.state),
                        Some(State::Terminated(_))
                    )
            });
            if done {
                return Ok(Some(slots.iter().all(|s| {
                    self.run_state_ref(*s).and_then(ContainerRun::exit_code) == Some(0)
                })));
            }

            let next = pending.values().map(|(at, _)| *at).min();
            tokio::select! {
                Some((slot, status)) = self.exits.recv() => {
                    self.exited(slot, &status);
                    let (code, _) = process::exit_code(&status);
                    self.after_exit(slot, code, &mut pending);
                }
                stop = self.signals.stopped() => {
                    self.terminate(stop).await?;
                    return Ok(None);
                }
                _ = sleep_until(next) => {}
            }
        }
    }

    fn run_state_ref(&self, slot: Slot) -> Option<&ContainerRun> {
        match slot {
            Slot::Init(i) => self.state.init.get(i),
            Slot::Main(i) => self.state.main.get(i),
        }
    }

    /// After a container ended: schedule its restart with back-off (`CrashLoopBackOff`) when
    /// the restart policy says so.
    fn after_exit(
        &mut self,
        slot: Slot,
        exit_code: i32,
        pending: &mut BTreeMap<Slot, (Instant, bool)>,
    ) {
        if !self.restarts(slot, exit_code) {
            return;
        }
        let pod_name = self.pod().name_any();
        let ns = self.pod().namespace().unwrap_or_default();
        let (base, max) = (self.ctx.restart_backoff, self.ctx.max_restart_backoff);
        let Some(run) = self.run_state(slot) else {
            return;
        };
        let shift = u32::try_from(run.restart_count.clamp(0, 16)).unwrap_or(16);
        let backoff = base.saturating_mul(1 << shift).min(max);
        if let State::Terminated(t) = &run.state {
            run.last = Some(t.clone());
        }
        run.state = State::Waiting {
            reason: "CrashLoopBackOff".into(),
            message: Some(format!(
                "back-off {backoff:?} restarting failed container={} pod={pod_name}_{ns}",
                run.name
            )),
        };
        pending.insert(slot, (Instant::now() + backoff, true));
    }
}

enum StartFailure {
    Launch(LaunchError),
    Executor(PodExecutorError),
}

impl From<LaunchError> for StartFailure {
    fn from(e: LaunchError) -> Self {
        StartFailure::Launch(e)
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
