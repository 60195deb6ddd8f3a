//! The pod status the executor reports, shaped like the kubelet's: phase, conditions (with
//! transition times kept while a status does not change), container statuses with
//! waiting/running/terminated states, start time and addresses.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Prefix of `containerID`: `local://<pid>`.
pub const CONTAINER_ID_PREFIX: &str = "local://";

/// Pod phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl Phase {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
        }
    }

    /// Succeeded or Failed.
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }
}

/// How a container ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminated {
    pub exit_code: i32,
    pub signal: Option<i32>,
    /// `Completed` (exit 0), `Error`, `StartError`.
    pub reason: String,
    /// The termination message.
    pub message: Option<String>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Timestamp,
    pub pid: Option<u32>,
}

/// A container's state.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        pid: u32,
        started_at: Timestamp,
    },
    Terminated(Terminated),
}

/// One container as the executor tracks it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerRun {
    pub name: String,
    pub image: String,
    /// `local://<binary path>` once the image resolved.
    pub image_id: String,
    /// `runc://<id>` when it runs as a runc container (container mode): the `containerID`
    /// instead of `local://<pid>`.
    pub runtime_id: Option<String>,
    pub restart_count: i32,
    pub state: State,
    pub last: Option<Terminated>,
}

impl ContainerRun {
    /// A container waiting with `reason` (e.g. `ContainerCreating`).
    pub fn waiting(name: &str, image: &str, reason: &str) -> ContainerRun {
        ContainerRun {
            name: name.to_string(),
            image: image.to_string(),
            image_id: String::new(),
            runtime_id: None,
            restart_count: 0,
            state: State::Waiting {
                reason: reason.to_string(),
                message: None,
            },
            last: None,
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// The exit code, when terminated.
    pub fn exit_code(&self) -> Option<i32> {
        match &self.state {
            State::Terminated(t) => Some(t.exit_code),
            _ => None,
        }
    }

    /// The API shape.
    pub fn to_status(&self) -> ContainerStatus {
        let container_id = match &self.state {
            State::Running { pid, .. } => Some(*pid),
            State::Terminated(t) => t.pid,
            State::Waiting { .. } => None,
        }
        .map(|pid| self.container_id(pid));
        ContainerStatus {
            name: self.name.clone(),
            image: self.image.clone(),
            image_id: self.image_id.clone(),
            container_id,
            ready: self.is_running(),
            started: Some(self.is_running()),
            restart_count: self.restart_count,
            state: Some(state(&self.state, self)),
            last_state: self
                .last
                .as_ref()
                .map(|t| state(&State::Terminated(t.clone()), self)),
            ..ContainerStatus::default()
        }
    }
}

impl ContainerRun {
    fn container_id(&self, pid: u32) -> String {
        match &self.runtime_id {
            Some(id) => id.clone(),
            None => format!("{CONTAINER_ID_PREFIX}{pid}"),
        }
    }
}

fn state(s: &State, run: &ContainerRun) -> ContainerState {
    match s {
        State::Waiting { reason, message } => ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.clone()),
                message: message.clone(),
            }),
            ..ContainerState::default()
        },
        State::Running { started_at, .. } => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(*started_at)),
            }),
            ..ContainerState::default()
        },
        State::Terminated(t) => ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: t.exit_code,
                signal: t.signal,
                reason: Some(t.reason.clone()),
                message: t.message.clone(),
                started_at: t.started_at.map(Time),
                finished_at: Some(Time(t.finished_at)),
                container_id: t.pid.map(|p| run.container_id(p)),
            }),
            ..ContainerState::default()
        },
    }
}

/// Everything the executor reports about one pod.
#[derive(Debug, Clone)]
pub struct PodState {
    pub phase: Phase,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub start_time: Option<Timestamp>,
    /// Volumes are prepared and the pod has its IP (`PodReadyToStartContainers`).
    pub sandbox_ready: bool,
    pub init: Vec<ContainerRun>,
    pub main: Vec<ContainerRun>,
    pub host_ip: String,
    pub pod_ip: String,
    generation: Option<i64>,
    /// type → (status, lastTransitionTime).
    transitions: BTreeMap<String, (String, Timestamp)>,
}

impl PodState {
    /// The state of a newly bound pod: Pending, containers `ContainerCreating` (or
    /// `PodInitializing` behind init containers); `PodScheduled` keeps its time from the pod.
    pub fn new(pod: &Pod, host_ip: &str, pod_ip: &str, now: Timestamp) -> PodState {
        let spec = pod.spec.clone().unwrap_or_default();
        let has_init = spec.init_containers.as_ref().is_some_and(|i| !i.is_empty());
        let image = |c: &k8s_openapi::api::core::v1::Container| c.image.clone().unwrap_or_default();
        let init = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| ContainerRun::waiting(&c.name, &image(c), "PodInitializing"))
            .collect();
        let main_reason = if has_init {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        let main = spec
            .containers
            .iter()
            .map(|c| ContainerRun::waiting(&c.name, &image(c), main_reason))
            .collect();
        let mut transitions = BTreeMap::new();
        let scheduled_at = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
            .and_then(|c| c.last_transition_time.as_ref())
            .map_or(now, |t| t.0);
        transitions.insert(
            "PodScheduled".to_string(),
            ("True".to_string(), scheduled_at),
        );
        PodState {
            phase: Phase::Pending,
            reason: None,
            message: None,
            start_time: None,
            sandbox_ready: false,
            init,
            main,
            host_ip: host_ip.to_string(),
            pod_ip: pod_ip.to_string(),
            generation: pod.metadata.generation,
            transitions,
        }
    }

    fn condition(
        &mut self,
        type_: &str,
        ok: bool,
        reason: Option<&str>,
        message: Option<String>,
        now: Timestamp,
    ) -> PodCondition {
        let status = if ok { "True" } else { "False" };
        let at = match self.transitions.get(type_) {
            Some((s, at)) if s == status => *at,
            _ => now,
        };
        self.transitions
            .insert(type_.to_string(), (status.to_string(), at));
        PodCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.map(str::to_string),
            message,
            last_transition_time: Some(Time(at)),
            observed_generation: self.generation,
            ..PodCondition::default()
        }
    }

    /// The status to patch (all fields the executor owns).
    pub fn status(&mut self, now: Timestamp) -> PodStatus {
        let terminal = self.phase.is_terminal();
        let initialized = self.init.iter().all(|c| c.exit_code() == Some(0));
        let not_initialized: Vec<&str> = self
            .init
            .iter()
            .filter(|c| c.exit_code() != Some(0))
            .map(|c| c.name.as_str())
            .collect();
        let unready: Vec<&str> = self
            .main
            .iter()
            .filter(|c| !c.is_running())
            .map(|c| c.name.as_str())
            .collect();
        let ready = !terminal && unready.is_empty();
        let (ready_reason, ready_message) = if terminal {
            (Some("PodCompleted"), None)
        } else if ready {
            (None, None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        let (init_reason, init_message) = if terminal && initialized {
            (Some("PodCompleted"), None)
        } else if initialized {
            (None, None)
        } else {
            (
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: [{}]",
                    not_initialized.join(" ")
                )),
            )
        };
        let sandbox = self.sandbox_ready && !terminal;
        let conditions = vec![
            self.condition("PodReadyToStartContainers", sandbox, None, None, now),
            self.condition("Initialized", initialized, init_reason, init_message, now),
            self.condition("Ready", ready, ready_reason, ready_message.clone(), now),
            self.condition("ContainersReady", ready, ready_reason, ready_message, now),
            self.condition("PodScheduled", true, None, None, now),
        ];
        let statuses = |cs: &[ContainerRun]| -> Option<Vec<ContainerStatus>> {
            (!cs.is_empty()).then(|| cs.iter().map(ContainerRun::to_status).collect())
        };
        let pod_ip = self.sandbox_ready.then(|| self.pod_ip.clone());
        PodStatus {
            phase: Some(self.phase.as_str().to_string()),
            reason: self.reason.clone(),
            message: self.message.clone(),
            conditions: Some(conditions),
            container_statuses: statuses(&self.main),
            init_container_statuses: statuses(&self.init),
            host_ip: Some(self.host_ip.clone()),
            host_ips: Some(vec![HostIP {
                ip: self.host_ip.clone(),
            }]),
            pod_ips: pod_ip.clone().map(|ip| vec![PodIP { ip }]),
            pod_ip,
            start_time: self.start_time.map(Time),
            observed_generation: self.generation,
            ..PodStatus::default()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "p", "generation": 1 },
            "spec": { "containers": [{ "name": "a", "image": "orrery/podtest" },
                                      { "name": "b", "image": "orrery/podtest" }] },
            "status": { "conditions": [{ "type": "PodScheduled", "status": "True",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z" }] }
        }))
        .unwrap()
    }

    fn cond<'a>(s: &'a PodStatus, t: &str) -> &'a PodCondition {
        s.conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == t)
            .unwrap()
    }

    #[test]
    fn conditions_follow_the_containers_and_keep_their_transition_times() {
        let t0 = ts("2026-01-01T00:00:05Z");
        let t1 = ts("2026-01-01T00:00:06Z");
        let t2 = ts("2026-01-01T00:00:07Z");
        let mut s = PodState::new(&pod(), "127.0.0.1", "127.0.0.1", t0);

        let pending = s.status(t0);
        assert_eq!(pending.phase.as_deref(), Some("Pending"));
        assert_eq!(pending.pod_ip, None);
        assert_eq!(cond(&pending, "PodScheduled").status, "True");
        assert_eq!(
            cond(&pending, "PodScheduled").last_transition_time,
            Some(Time(ts("2026-01-01T00:00:00Z")))
        );
        assert_eq!(cond(&pending, "Initialized").status, "True");
        assert_eq!(cond(&pending, "Ready").status, "False");
        assert_eq!(
            cond(&pending, "Ready").message.as_deref(),
            Some("containers with unready status: [a b]")
        );
        let waiting = pending.container_statuses.as_ref().unwrap()[0].clone();
        assert_eq!(
            waiting.state.unwrap().waiting.unwrap().reason.as_deref(),
            Some("ContainerCreating")
        );

        s.sandbox_ready = true;
        s.phase = Phase::Running;
        s.start_time = Some(t1);
        for (i, c) in s.main.iter_mut().enumerate() {
            c.state = State::Running {
                pid: 100 + i as u32,
                started_at: t1,
            };
        }
        let running = s.status(t1);
        assert_eq!(running.pod_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(cond(&running, "Ready").status, "True");
        assert_eq!(cond(&running, "Ready").last_transition_time, Some(Time(t1)));
        assert_eq!(cond(&running, "PodReadyToStartContainers").status, "True");
        let a = &running.container_statuses.as_ref().unwrap()[0];
        assert_eq!(a.container_id.as_deref(), Some("local://100"));
        assert!(a.ready);

        // Same status later: the transition time stays.
        let again = s.status(t2);
        assert_eq!(cond(&again, "Ready").last_transition_time, Some(Time(t1)));

        s.phase = Phase::Failed;
        s.main[1].state = State::Terminated(Terminated {
            exit_code: 3,
            signal: None,
            reason: "Error".into(),
            message: Some("boom".into()),
            started_at: Some(t1),
            finished_at: t2,
            pid: Some(101),
        });
        let failed = s.status(t2);
        assert_eq!(failed.phase.as_deref(), Some("Failed"));
        assert_eq!(cond(&failed, "Ready").status, "False");
        assert_eq!(
            cond(&failed, "Ready").reason.as_deref(),
            Some("PodCompleted")
        );
        assert_eq!(cond(&failed, "Ready").last_transition_time, Some(Time(t2)));
        let b = failed.container_statuses.as_ref().unwrap()[1]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(
            (b.exit_code, b.reason.as_deref(), b.message.as_deref()),
            (3, Some("Error"), Some("boom"))
        );
        assert_eq!(b.container_id.as_deref(), Some("local://101"));
    }
}
