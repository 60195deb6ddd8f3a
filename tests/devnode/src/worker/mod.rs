//! One pod's life on the executor's node: images, volumes, init containers, containers (with
//! the pod's restart policy: [`containers`]), status patches, and termination on deletion or
//! shutdown ([`stop`]).

mod containers;
mod stop;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::container::{self, PodNetwork, RuncGuard};
use super::images::ImageBinary;
use super::launch::PodAddresses;
use super::objects::{self, Objects};
use super::process::GroupGuard;
use super::status::{ContainerRun, Phase, PodState, State};
use super::volumes::{self, VolumeError};
use super::{Ctx, PodExecutorError};

/// How often a container waiting on a missing Secret/ConfigMap is retried.
const CONFIG_RETRY: Duration = Duration::from_secs(1);
/// How long killed processes get to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a pod stops running here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// `deletionTimestamp` is set: graceful termination, then the final delete.
    Deleting,
    /// The object is gone (force-deleted): kill at once.
    Gone,
    /// The executor shuts down (node shutdown).
    Shutdown,
    /// The pod ran past `spec.activeDeadlineSeconds` (counted from its start, like the
    /// kubelet): graceful termination, then `Failed` with reason `DeadlineExceeded`; the
    /// object stays.
    DeadlineExceeded,
}

/// A container slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Init(usize),
    Main(usize),
}

type Exit = (Slot, std::io::Result<ExitStatus>);

struct Proc {
    pid: u32,
    started_at: Timestamp,
    guard: GroupGuard,
    termination_file: PathBuf,
    policy: String,
    log: PathBuf,
    /// The runc container, in container mode (the process is `runc run`); killed and deleted
    /// when dropped.
    runc: Option<RuncGuard>,
}

/// The pod as last seen, and whether it stops.
struct Signals {
    rx: watch::Receiver<Option<Pod>>,
    shutdown: CancellationToken,
    pod: Pod,
    /// When the pod started on this node (its `startTime`): `activeDeadlineSeconds` counts
    /// from here. The deadline may be lowered while the pod runs (it is re-read on every
    /// update), which is how a run is cancelled without deleting its pod.
    started: Option<tokio::time::Instant>,
}

impl Signals {
    /// When the pod's active deadline passes, if it has one and has started.
    fn deadline(&self) -> Option<tokio::time::Instant> {
        let seconds = self.pod.spec.as_ref()?.active_deadline_seconds?;
        let seconds = u64::try_from(seconds).unwrap_or(0);
        Some(self.started? + Duration::from_secs(seconds))
    }

    fn stop(&self) -> Option<Stop> {
        if self.shutdown.is_cancelled() {
            Some(Stop::Shutdown)
        } else if self.rx.borrow().is_none() {
            Some(Stop::Gone)
        } else if self.pod.metadata.deletion_timestamp.is_some() {
            Some(Stop::Deleting)
        } else if self
            .deadline()
            .is_some_and(|d| d <= tokio::time::Instant::now())
        {
            Some(Stop::DeadlineExceeded)
        } else {
            None
        }
    }

    /// The stop the newest version of the pod asks for, if any.
    fn latest(&mut self) -> Option<Stop> {
        if let Some(pod) = self.rx.borrow_and_update().clone() {
            self.pod = pod;
        }
        self.stop()
    }

    /// Waits until the pod is deleted, gone, past its deadline, or the executor shuts down.
    async fn stopped(&mut self) -> Stop {
        loop {
            if let Some(stop) = self.stop() {
                return stop;
            }
            let deadline = self.deadline();
            tokio::select! {
                _ = self.shutdown.cancelled() => return Stop::Shutdown,
                _ = async {
                    match deadline {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => return Stop::DeadlineExceeded,
                changed = self.rx.changed() => {
                    if changed.is_err() {
                        return Stop::Shutdown;
                    }
                    if let Some(pod) = self.rx.borrow_and_update().clone() {
                        self.pod = pod;
                    }
                }
            }
        }
    }
}

/// Runs `pod` (already bound to this node) until it ends, is deleted, or the executor stops.
pub(crate) async fn run_pod(
    ctx: Arc<Ctx>,
    pod: Pod,
    rx: watch::Receiver<Option<Pod>>,
    shutdown: CancellationToken,
) {
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let mut worker = Worker::new(ctx, pod, rx, shutdown);
    if let Err(e) = worker.run().await {
        eprintln!("pod-executor: pod {ns}/{name}: {e}");
    }
    worker.detach_network().await;
}

struct Worker {
    ctx: Arc<Ctx>,
    api: Api<Pod>,
    signals: Signals,
    state: PodState,
    dir: PathBuf,
    bins: BTreeMap<Slot, ImageBinary>,
    /// Slots that run as runc containers (container mode): their image archive.
    archives: BTreeMap<Slot, PathBuf>,
    /// The network namespace of the pod's containers (container mode).
    network: PodNetwork,
    /// The pod's address: the node's, or its own in isolated mode.
    pod_ip: String,
    /// Whether the pod has a network namespace of its own (isolated mode).
    attached: bool,
    objects: Objects,
    volumes: BTreeMap<String, PathBuf>,
    procs: BTreeMap<Slot, Proc>,
    exits_tx: mpsc::UnboundedSender<Exit>,
    exits: mpsc::UnboundedReceiver<Exit>,
}

impl Worker {
    fn new(
        ctx: Arc<Ctx>,
        pod: Pod,
        rx: watch::Receiver<Option<Pod>>,
        shutdown: CancellationToken,
    ) -> Worker {
        let ns = pod.namespace().unwrap_or_default();
        let api = Api::namespaced(ctx.client.clone(), &ns);
        let dir = ctx.pod_dir(&ns, &pod.name_any(), &pod.uid().unwrap_or_default());
        let state = PodState::new(&pod, &ctx.host_ip, &ctx.pod_ip, Timestamp::now());
        let pod_ip = ctx.pod_ip.clone();
        let (exits_tx, exits) = mpsc::unbounded_channel();
        Worker {
            ctx,
            api,
            signals: Signals {
                rx,
                shutdown,
                pod,
                started: None,
            },
            state,
            dir,
            bins: BTreeMap::new(),
            archives: BTreeMap::new(),
            network: PodNetwork::Host,
            pod_ip,
            attached: false,
            objects: Objects::default(),
            volumes: BTreeMap::new(),
            procs: BTreeMap::new(),
            exits_tx,
            exits,
        }
    }

    fn pod(&self) -> &Pod {
        &self.signals.pod
    }

    fn container(&self, slot: Slot) -> Option<Container> {
        let spec = self.pod().spec.as_ref()?;
        match slot {
            Slot::Init(i) => spec.init_containers.as_ref()?.get(i).cloned(),
            Slot::Main(i) => spec.containers.get(i).cloned(),
        }
    }

    fn run_state(&mut self, slot: Slot) -> Option<&mut ContainerRun> {
        match slot {
            Slot::Init(i) => self.state.init.get_mut(i),
            Slot::Main(i) => self.state.main.get_mut(i),
        }
    }

    fn restart_policy(&self) -> String {
        self.pod()
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.clone())
            .unwrap_or_else(|| "Always".to_string())
    }

    async fn run(&mut self) -> Result<(), PodExecutorError> {
        let phase = self.pod().status.as_ref().and_then(|s| s.phase.clone());
        if matches!(phase.as_deref(), Some("Succeeded" | "Failed")) {
            // An ended pod being deleted: only the final delete is left.
            if self.pod().metadata.deletion_timestamp.is_some() {
                return self.delete_now().await;
            }
            return Ok(());
        }
        if let Some(stop) = self.signals.stop() {
            return self.stop_unstarted(stop).await;
        }
        if phase.as_deref() == Some("Running") {
            // Running before this executor saw it: its processes belonged to an executor
            // that is gone.
            self.state.phase = Phase::Failed;
            self.state.reason = Some("NodeLost".into());
            self.state.message =
                Some("the pod executor that ran this pod stopped; its processes are gone".into());
            return self.patch().await;
        }
        self.patch().await?;

        if !self.resolve_images() {
            return self.patch().await;
        }
        if let Some(stop) = self.attach_network().await? {
            return self.stop_unstarted(stop).await;
        }
        if let Some(stop) = self.prepare().await? {
            return self.stop_unstarted(stop).await;
        }
        self.state.sandbox_ready = true;
        self.state.start_time = Some(Timestamp::now());
        self.signals.started = Some(tokio::time::Instant::now());
        self.patch().await?;

        for i in 0..self.state.init.len() {
            match self.run_slots(&[Slot::Init(i)]).await? {
                Some(true) => {}
                Some(false) => {
                    // restartPolicy Never: a failed init container fails the pod.
                    self.state.phase = Phase::Failed;
                    return self.patch().await;
                }
                None => return Ok(()),
            }
        }
        for c in &mut self.state.main {
            c.state = State::Waiting {
                reason: "ContainerCreating".into(),
                message: None,
            };
        }
        let main: Vec<Slot> = (0..self.state.main.len()).map(Slot::Main).collect();
        match self.run_slots(&main).await? {
            Some(all_ok) => {
                self.state.phase = if all_ok {
                    Phase::Succeeded
                } else {
                    Phase::Failed
                };
                self.patch().await?;
                // Deleted while its containers were ending: the final delete is this
                // worker's (the API server gave the pod a grace period, as it was running).
                if let Some(Stop::Deleting) = self.signals.latest() {
                    return self.delete_now().await;
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Resolves every container's image; an unknown image fails the pod (`ErrImagePull`).
    fn resolve_images(&mut self) -> bool {
        let spec = self.pod().spec.clone().unwrap_or_default();
        let slots = spec
            .init_containers
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| (Slot::Init(i), c))
            .chain(
                spec.containers
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (Slot::Main(i), c)),
            );
        let mut failed = None;
        for (slot, c) in slots {
            let image = c.image.clone().unwrap_or_default();
            let archive = self
                .ctx
                .containers
                .as_ref()
                .and_then(|rt| rt.archive_for(&image));
            if let Some(archive) = archive {
                let id = format!("oci-archive://{}", archive.display());
                if let Some(run) = self.run_state(slot) {
                    run.image_id = id;
                }
                self.archives.insert(slot, archive);
                continue;
            }
            match self.ctx.images.resolve(&image) {
                Ok(bin) => {
                    let id = format!("local://{}", bin.path.display());
                    if let Some(run) = self.run_state(slot) {
                        run.image_id = id;
                    }
                    self.bins.insert(slot, bin);
                }
                Err(e) => {
                    let message = e.to_string();
                    if let Some(run) = self.run_state(slot) {
                        run.state = State::Waiting {
                            reason: "ErrImagePull".into(),
                            message: Some(message.clone()),
                        };
                    }
                    failed.get_or_insert(message);
                }
            }
        }
        self.log_mode();
        match failed {
            Some(message) => {
                self.state.phase = Phase::Failed;
                self.state.reason = Some("ErrImagePull".into());
                self.state.message = Some(message);
                false
            }
            None => true,
        }
    }

    /// Says once per pod which containers run as runc containers and which as processes.
    fn log_mode(&self) {
        let spec = self.pod().spec.clone().unwrap_or_default();
        let names = |slots: Vec<Slot>| -> Vec<String> {
            slots
                .into_iter()
                .filter_map(|s| self.container(s).map(|c| c.name))
                .collect()
        };
        let all: Vec<Slot> = (0..spec.init_containers.as_ref().map_or(0, Vec::len))
            .map(Slot::Init)
            .chain((0..spec.containers.len()).map(Slot::Main))
            .collect();
        let (containers, processes): (Vec<Slot>, Vec<Slot>) =
            all.into_iter().partition(|s| self.archives.contains_key(s));
        let (containers, processes) = (names(containers), names(processes));
        let mut parts = Vec::new();
        if !containers.is_empty() {
            let network = if self.wants_own_network() {
                "a network namespace of the pod's own"
            } else {
                "the host's network"
            };
            parts.push(format!(
                "container mode (runc, {network}) for {}",
                containers.join(", ")
            ));
        }
        if !processes.is_empty() {
            parts.push(format!("process mode for {}", processes.join(", ")));
        }
        eprintln!(
            "pod-executor: pod {}/{}: {}",
            self.pod().namespace().unwrap_or_default(),
            self.pod().name_any(),
            parts.join("; ")
        );
    }

    /// Whether the pod gets a network namespace of its own: isolated mode, runc containers, no
    /// `hostNetwork` (process-mode pods and pods asking for the host's network keep it).
    fn wants_own_network(&self) -> bool {
        let host_network = self
            .pod()
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        self.ctx.isolation.is_some() && !self.archives.is_empty() && !host_network
    }

    /// Isolated mode: gives a pod with runc containers (and no `hostNetwork`) its network
    /// namespace, address and NetworkPolicy rules before anything of it starts, retrying while
    /// that fails (the containers wait with reason `CreatePodSandboxError` and the cause).
    /// `Some(stop)` if the pod stopped meanwhile.
    async fn attach_network(&mut self) -> Result<Option<Stop>, PodExecutorError> {
        let Some(isolation) = self.ctx.isolation.clone() else {
            return Ok(None);
        };
        if !self.wants_own_network() {
            return Ok(None);
        }
        loop {
            match isolation.attach(self.pod()).await {
                Ok((net, ruleset)) => {
                    eprintln!(
                        "pod-executor: pod {}/{}: network namespace {}, address {}; {}",
                        self.pod().namespace().unwrap_or_default(),
                        self.pod().name_any(),
                        net.netns,
                        net.address,
                        crate::isolation::describe(&ruleset)
                    );
                    self.network = PodNetwork::Path(net.netns_path());
                    self.pod_ip = net.address.to_string();
                    self.state.pod_ip = self.pod_ip.clone();
                    self.attached = true;
                    return Ok(None);
                }
                Err(e) => {
                    let message = e.to_string();
                    for c in self.state.init.iter_mut().chain(self.state.main.iter_mut()) {
                        c.state = State::Waiting {
                            reason: "CreatePodSandboxError".into(),
                            message: Some(message.clone()),
                        };
                    }
                    self.patch().await?;
                    tokio::select! {
                        stop = self.signals.stopped() => return Ok(Some(stop)),
                        _ = tokio::time::sleep(CONFIG_RETRY) => {}
                    }
                }
            }
        }
    }

    /// `KUBERNETES_SERVICE_*` for the pod's containers: with a network namespace of its own, the
    /// `kubernetes` Service's cluster IP (routed to the node's forward to the API server, as a
    /// kubelet sets it); else the API server's own address.
    fn service_env(&self) -> Vec<(String, String)> {
        if self.attached
            && let Some(env) = self.ctx.isolation.as_ref().and_then(|i| i.service_env())
        {
            return env;
        }
        self.ctx.service_env.clone()
    }

    /// Removes the pod's network namespace and rules (isolated mode), once its containers are
    /// gone.
    async fn detach_network(&mut self) {
        if !self.attached {
            return;
        }
        // Containers still tracked (a worker that failed half-way) are killed first.
        self.procs.clear();
        if let Some(isolation) = self.ctx.isolation.clone() {
            isolation.detach(self.pod()).await;
        }
        self.attached = false;
    }

    /// Gives the pod's volumes its `fsGroup` like the kubelet (container mode only: local
    /// processes run as the executor's user).
    fn apply_fs_group(&self) -> Result<(), PodExecutorError> {
        if self.archives.is_empty() {
            return Ok(());
        }
        let spec = self.pod().spec.clone().unwrap_or_default();
        let Some(fs_group) = spec
            .security_context
            .as_ref()
            .and_then(|s| s.fs_group)
            .and_then(|g| u32::try_from(g).ok())
        else {
            return Ok(());
        };
        for v in spec.volumes.iter().flatten() {
            if let Some(dir) = self.volumes.get(&v.name) {
                container::apply_fs_group(dir, fs_group, v.empty_dir.is_some())
                    .map_err(|e| PodExecutorError::io("applying fsGroup to", dir, e))?;
            }
        }
        Ok(())
    }

    /// Fetches what the pod references and writes its volumes, retrying while something is
    /// missing (`CreateContainerConfigError`). `Some(stop)` if the pod stopped meanwhile.
    async fn prepare(&mut self) -> Result<Option<Stop>, PodExecutorError> {
        loop {
            let objects = objects::fetch(&self.ctx.client, self.pod()).await?;
            let addresses = self.addresses();
            match volumes::materialise(self.pod(), &objects, &addresses, &self.dir) {
                Ok(v) => {
                    self.objects = objects;
                    self.volumes = v;
                    self.apply_fs_group()?;
                    return Ok(None);
                }
                Err(VolumeError::Launch(e)) => {
                    let message = e.to_string();
                    for c in self.state.init.iter_mut().chain(self.state.main.iter_mut()) {
                        c.state = State::Waiting {
                            reason: "CreateContainerConfigError".into(),
                            message: Some(message.clone()),
                        };
                    }
                    self.patch().await?;
                    tokio::select! {
                        stop = self.signals.stopped() => return Ok(Some(stop)),
                        _ = tokio::time::sleep(CONFIG_RETRY) => {}
                    }
                }
                Err(VolumeError::Io(e)) => return Err(e),
            }
        }
    }

    fn addresses(&self) -> PodAddresses {
        PodAddresses {
            pod_ip: self.pod_ip.clone(),
            host_ip: self.ctx.host_ip.clone(),
            node_name: self.ctx.node_name.clone(),
        }
    }

    /// Patches `pods/status` with the whole state (strategic merge, with the pod's UID as a
    /// precondition, like the kubelet's status manager). A pod that is gone is not an error.
    async fn patch(&mut self) -> Result<(), PodExecutorError> {
        let status = self.state.status(Timestamp::now());
        let name = self.pod().name_any();
        let body = json!({ "metadata": { "uid": self.pod().uid() }, "status": status });
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .api
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&body))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => return Ok(()),
                Err(e) if attempt >= 5 => {
                    return Err(PodExecutorError::kube(
                        format!("patching the status of pod {name}"),
                        e,
                    ));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200 * attempt)).await,
            }
        }
    }
}
