//! Leader election on a Lease (`coordination.k8s.io/v1`, with kube-lease-manager): of the
//! operator processes started with the same Lease, only the holder runs the controllers; the
//! others wait as standbys and take over when the holder stops renewing (within the lease
//! duration) or releases the Lease (at once).
//!
//! [`Elector::start`] campaigns on a task of its own and reports the process's [`Role`] on a
//! watch channel:
//! - [`Role::Standby`] (with the current holder) until this process holds the Lease;
//! - [`Role::Leader`] while it holds it and renews it every `duration − grace` seconds;
//! - [`Role::Lost`] once it held the Lease and no longer does: another candidate holds it, or
//!   renewing failed for longer than a third of the grace period (the Lease then expires
//!   within the grace period, so the process stops before a standby can take over). A process
//!   that lost the Lease stops its controllers and exits non-zero; its Deployment restarts it
//!   as a candidate.
//!
//! [`Elector::release`] gives the Lease up (holder cleared), so a standby takes over without
//! waiting for the Lease to expire: the standbys watch the Lease and campaign again as soon as
//! its holder is cleared.
//!
//! RBAC: `coordination.k8s.io/leases: get, list, watch, create, patch` in the Lease's
//! namespace.

use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseManagerBuilder};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// The Lease's name unless `--leader-election-name` says otherwise.
pub const DEFAULT_LEASE_NAME: &str = "orrery-operator";
/// The Lease's namespace when neither `--leader-election-namespace` nor `POD_NAMESPACE` is set.
pub const DEFAULT_NAMESPACE: &str = "orrery-system";
/// Seconds a Lease stays valid after its last renewal (`--lease-duration`).
pub const DEFAULT_DURATION_SECONDS: u64 = 15;
/// Seconds before expiry that the holder renews (`--lease-grace`).
pub const DEFAULT_GRACE_SECONDS: u64 = 5;
/// The field manager of the Lease writes (kube-lease-manager's default embeds the identity).
pub const FIELD_MANAGER_PREFIX: &str = "orrery-operator-lease";

/// The Lease a process campaigns on, and as whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseSettings {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This process's identity (the Lease's `holderIdentity` while it leads).
    pub identity: String,
    /// Seconds the Lease stays valid after a renewal.
    pub duration_seconds: u64,
    /// Seconds before expiry that the holder renews.
    pub grace_seconds: u64,
}

/// Why the leader-election settings or the Lease failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// A flag has a value the Lease cannot use.
    #[error("{flag}: {problem}; fix: {fix}")]
    Settings {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// Reading, creating, renewing or releasing the Lease failed.
    #[error(
        "the Lease {namespace}/{name}: {source}; the operator needs get, list, watch, create and \
         patch on coordination.k8s.io leases in {namespace}"
    )]
    Lease {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// kube-lease-manager's error.
        #[source]
        source: kube_lease_manager::LeaseManagerError,
    },
    /// A client for the Lease could not be built from the cluster's config.
    #[error("building the Lease client: {0}")]
    Client(#[source] kube::Error),
}

/// The namespace of the Lease: `--leader-election-namespace`, else the pod's namespace
/// (`POD_NAMESPACE`, from the downward API), else [`DEFAULT_NAMESPACE`].
pub fn default_namespace(flag: Option<String>, pod_namespace: Option<String>) -> String {
    flag.into_iter()
        .chain(pod_namespace)
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

/// This process's identity: `--leader-election-identity`, else the pod's name (`POD_NAME`,
/// unique among the Deployment's pods), else `<host name>-<pid>` (two processes on one
/// machine stay distinct), else `orrery-operator-<pid>`.
pub fn default_identity(
    flag: Option<String>,
    pod_name: Option<String>,
    host: Option<String>,
    pid: u32,
) -> String {
    let nonempty = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    nonempty(flag)
        .or_else(|| nonempty(pod_name))
        .or_else(|| nonempty(host).map(|h| format!("{h}-{pid}")))
        .unwrap_or_else(|| format!("orrery-operator-{pid}"))
}

/// The machine's host name (`/proc/sys/kernel/hostname`, else `HOSTNAME`), if known.
pub fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

impl LeaseSettings {
    /// Checks what kube-lease-manager and the apiserver need: `0 < grace < duration`, a
    /// DNS-subdomain Lease name and namespace, a non-empty identity.
    pub fn check(&self) -> Result<(), LeaderError> {
        if self.duration_seconds == 0 || self.grace_seconds == 0 {
            return Err(LeaderError::Settings {
                flag: "--lease-duration/--lease-grace",
                problem: format!(
                    "duration {} s and grace {} s must both be at least 1",
                    self.duration_seconds, self.grace_seconds
                ),
                fix: "use whole seconds above 0, e.g. --lease-duration 15 --lease-grace 5",
            });
        }
        if self.grace_seconds >= self.duration_seconds {
            return Err(LeaderError::Settings {
                flag: "--lease-grace",
                problem: format!(
                    "grace {} s is not below the duration {} s: the holder renews `grace` \
                     seconds before the Lease expires",
                    self.grace_seconds, self.duration_seconds
                ),
                fix: "make the grace shorter than the duration, e.g. a third of it",
            });
        }
        if !is_dns_subdomain(&self.name) {
            return Err(LeaderError::Settings {
                flag: "--leader-election-name",
                problem: format!("{:?} is not a valid Lease name", self.name),
                fix: "use lower-case letters, digits, '-' and '.', at most 253 characters, \
                      starting and ending with a letter or digit",
            });
        }
        if !is_dns_label(&self.namespace) {
            return Err(LeaderError::Settings {
                flag: "--leader-election-namespace",
                problem: format!("{:?} is not a valid namespace name", self.namespace),
                fix: "use lower-case letters, digits and '-', at most 63 characters, starting \
                      and ending with a letter or digit",
            });
        }
        if self.identity.is_empty() || self.identity.len() > 253 {
            return Err(LeaderError::Settings {
                flag: "--leader-election-identity",
                problem: format!("{:?} is empty or longer than 253 characters", self.identity),
                fix: "leave it out (the pod's name, or host name and pid, is used) or give a \
                      short unique name",
            });
        }
        Ok(())
    }

    /// How long one Lease request may take: a third of the grace period (at least 1 s), so a
    /// hung apiserver connection is noticed before the Lease expires.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.grace_seconds.saturating_mul(1000) / 3)
            .max(Duration::from_secs(1))
    }

    /// How long a leader keeps retrying failed renewals before it gives the Lease up as lost:
    /// a third of the grace period (at least 1 s). The renewal starts `grace` seconds before
    /// expiry; with [`Self::request_timeout`] per try, the process declares the loss before the
    /// Lease can expire and a standby can take it.
    pub fn renew_retry_window(&self) -> Duration {
        self.request_timeout()
    }
}

/// A DNS-1123 label: what a namespace's name must be.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A DNS-1123 subdomain: what most objects' names, a Lease's included, must be.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// What this process is in the election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Another candidate holds the Lease (`None`: nobody, or not read yet); this process waits.
    Standby {
        /// The current holder, as last seen.
        holder: Option<String>,
    },
    /// This process holds the Lease.
    Leader,
    /// This process held the Lease and no longer does.
    Lost {
        /// Why: who holds it now, or which renewal error.
        reason: String,
    },
    /// This process gave the Lease up ([`Elector::release`]).
    Released,
}

/// A campaign for the Lease, run on a task of its own.
#[derive(Debug)]
pub struct Elector {
    settings: LeaseSettings,
    role: watch::Receiver<Role>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), LeaderError>>,
}

impl Elector {
    /// Creates the Lease if it does not exist and starts campaigning with clients made from
    /// `config`: the Lease requests get short timeouts ([`LeaseSettings::request_timeout`]) so
    /// a hung renewal is noticed in time; the watch on the Lease keeps `config`'s.
    pub async fn start(
        config: kube::Config,
        settings: LeaseSettings,
    ) -> Result<Elector, LeaderError> {
        settings.check()?;
        let watch_client = Client::try_from(config.clone()).map_err(LeaderError::Client)?;
        let mut lease_config = config;
        let timeout = settings.request_timeout();
        lease_config.connect_timeout = Some(timeout);
        lease_config.read_timeout = Some(timeout);
        lease_config.write_timeout = Some(timeout);
        let client = Client::try_from(lease_config).map_err(LeaderError::Client)?;
        let manager = build(&client, &settings).await?;
        let (tx, role) = watch::channel(Role::Standby { holder: None });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(campaign(
            client,
            watch_client,
            settings.clone(),
            manager,
            tx,
            stopped,
        ));
        Ok(Elector {
            settings,
            role,
            stop: Some(stop),
            task,
        })
    }

    /// The settings campaigned with.
    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    /// The role channel: the current [`Role`] and each change.
    pub fn role(&self) -> watch::Receiver<Role> {
        self.role.clone()
    }

    /// Stops campaigning and releases the Lease if this process holds it (a standby releases
    /// nothing). A standby then can take it over at once.
    pub async fn release(mut self) -> Result<(), LeaderError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            // The task panicked or was aborted: nothing left to release from here; the Lease
            // expires by itself.
            Err(_) => Ok(()),
        }
    }
}

/// Resolves with the reason once `role` says [`Role::Lost`], or once the campaign ended
/// without releasing the Lease (its task failed: nothing renews the Lease any more). Never
/// resolves after [`Elector::release`].
pub async fn lost(mut role: watch::Receiver<Role>) -> String {
    loop {
        let now = role.borrow_and_update().clone();
        match now {
            Role::Lost { reason } => return reason,
            Role::Released => return std::future::pending().await,
            Role::Standby { .. } | Role::Leader => {}
        }
        if role.changed().await.is_err() {
            let released = *role.borrow() == Role::Released;
            if released {
                return std::future::pending().await;
            }
            return "the campaign for the Lease stopped unexpectedly: nothing renews it".into();
        }
    }
}

async fn build(client: &Client, settings: &LeaseSettings) -> Result<LeaseManager, LeaderError> {
    LeaseManagerBuilder::new(client.clone(), &settings.name)
        .with_namespace(&settings.namespace)
        .with_identity(&settings.identity)
        .with_duration(settings.duration_seconds)
        .with_grace(settings.grace_seconds)
        .with_field_manager(format!("{FIELD_MANAGER_PREFIX}-{}", settings.identity))
        .with_create_mode(LeaseCreateMode::AutoCreate)
        .build()
        .await
        .map_err(|source| lease_error(settings, source))
}

fn lease_error(
    settings: &LeaseSettings,
    source: kube_lease_manager::LeaseManagerError,
) -> LeaderError {
    LeaderError::Lease {
        namespace: settings.namespace.clone(),
        name: settings.name.clone(),
        source,
    }
}

/// Watches the Lease's holder into `tx` (only changes are sent).
fn watch_holder(
    client: Client,
    settings: &LeaseSettings,
    tx: watch::Sender<Option<Option<String>>>,
) -> JoinHandle<()> {
    use futures::StreamExt;
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", settings.name));
    tokio::spawn(async move {
        let stream = watcher(api, config).default_backoff().applied_objects();
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(lease) => {
                    let holder = lease.spec.and_then(|s| s.holder_identity);
                    tx.send_if_modified(|now| {
                        let changed = now.as_ref() != Some(&holder);
                        *now = Some(holder);
                        changed
                    });
                }
                Err(e) => tracing::warn!("watching the leader Lease: {e}"),
            }
            if tx.is_closed() {
                return;
            }
        }
    })
}

enum Step {
    Stop,
    Holder(Option<String>),
    Changed(kube_lease_manager::Result<bool>),
}

async fn campaign(
    client: Client,
    watch_client: Client,
    settings: LeaseSettings,
    mut manager: LeaseManager,
    tx: watch::Sender<Role>,
    mut stop: oneshot::Receiver<()>,
) -> Result<(), LeaderError> {
    let (holder_tx, mut holder_rx) = watch::channel::<Option<Option<String>>>(None);
    let watching = watch_holder(watch_client, &settings, holder_tx);
    let mut leading = false;
    let mut failing_since: Option<tokio::time::Instant> = None;
    let result = loop {
        let step = tokio::select! {
            biased;
            _ = &mut stop => Step::Stop,
            Ok(()) = holder_rx.changed() => {
                Step::Holder(holder_rx.borrow_and_update().clone().flatten())
            }
            changed = manager.changed() => Step::Changed(changed),
        };
        match step {
            Step::Stop => {
                let released = manager.release().await;
                tx.send_replace(Role::Released);
                break released.map_err(|e| lease_error(&settings, e));
            }
            Step::Holder(holder) if !leading => {
                let released = holder.is_none();
                tx.send_replace(Role::Standby { holder });
                if released {
                    // The holder gave the Lease up: campaign afresh at once instead of
                    // sleeping until the expiry the manager last read.
                    match build(&client, &settings).await {
                        Ok(fresh) => manager = fresh,
                        Err(e) => tracing::warn!("{e}"),
                    }
                }
            }
            Step::Holder(_) => {}
            Step::Changed(Ok(true)) => {
                leading = true;
                failing_since = None;
                tx.send_replace(Role::Leader);
            }
            Step::Changed(Ok(false)) => {
                failing_since = None;
                if leading {
                    let holder = holder_rx.borrow().clone().flatten();
                    tx.send_replace(Role::Lost {
                        reason: match holder {
                            Some(h) => format!("the Lease is now held by {h}"),
                            None => "the Lease expired before this process renewed it".into(),
                        },
                    });
                    break Ok(());
                }
            }
            Step::Changed(Err(e)) => {
                if leading {
                    let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() >= settings.renew_retry_window() {
                        tx.send_replace(Role::Lost {
                            reason: format!(
                                "renewing it failed for {:?} (the Lease expires within the \
                                 {} s grace period): {e}",
                                since.elapsed(),
                                settings.grace_seconds
                            ),
                        });
                        break Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                } else {
                    tracing::warn!(
                        "campaigning for the Lease {}/{}: {e}; retrying",
                        settings.namespace,
                        settings.name
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    };
    watching.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LeaseSettings {
        LeaseSettings {
            name: DEFAULT_LEASE_NAME.into(),
            namespace: DEFAULT_NAMESPACE.into(),
            identity: "op-a".into(),
            duration_seconds: DEFAULT_DURATION_SECONDS,
            grace_seconds: DEFAULT_GRACE_SECONDS,
        }
    }

    #[test]
    fn the_identity_is_the_flag_then_the_pod_name_then_host_and_pid() {
        assert_eq!(
            default_identity(Some("me".into()), Some("pod-1".into()), Some("h".into()), 7),
            "me"
        );
        assert_eq!(
            default_identity(
                None,
                Some("orrery-operator-5d9f-x2".into()),
                Some("h".into()),
                7
            ),
            "orrery-operator-5d9f-x2"
        );
        assert_eq!(
            default_identity(None, Some(" ".into()), Some("build-host\n".into()), 4242),
            "build-host-4242"
        );
        assert_eq!(default_identity(None, None, None, 9), "orrery-operator-9");
    }

    #[test]
    fn the_namespace_is_the_flag_then_the_pods_then_orrery_system() {
        assert_eq!(
            default_namespace(Some("ops".into()), Some("team".into())),
            "ops"
        );
        assert_eq!(default_namespace(None, Some("team".into())), "team");
        assert_eq!(
            default_namespace(Some(String::new()), None),
            "orrery-system"
        );
    }

    #[test]
    fn the_default_settings_pass_and_a_grace_not_below_the_duration_is_refused() {
        assert!(settings().check().is_ok());
        let equal = LeaseSettings {
            grace_seconds: 15,
            ..settings()
        };
        let text = equal
            .check()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(text.starts_with("--lease-grace: grace 15 s"), "{text}");
        let zero = LeaseSettings {
            duration_seconds: 0,
            ..settings()
        };
        assert!(zero.check().is_err());
        let bad_name = LeaseSettings {
            name: "Orrery_Operator".into(),
            ..settings()
        };
        let text = bad_name
            .check()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(text.starts_with("--leader-election-name:"), "{text}");
    }

    #[tokio::test]
    async fn a_loss_is_reported_with_its_reason_and_a_release_is_not_a_loss() {
        let (tx, rx) = watch::channel(Role::Leader);
        let waiting = tokio::spawn(lost(rx));
        tx.send_replace(Role::Lost {
            reason: "the Lease is now held by op-b".into(),
        });
        assert_eq!(
            waiting.await.ok().as_deref(),
            Some("the Lease is now held by op-b")
        );

        let (tx, rx) = watch::channel(Role::Leader);
        drop(tx);
        assert!(
            lost(rx).await.contains("stopped unexpectedly"),
            "a campaign that died is a loss"
        );

        let (tx, rx) = watch::channel(Role::Leader);
        tx.send_replace(Role::Released);
        drop(tx);
        let released = tokio::time::timeout(Duration::from_millis(50), lost(rx)).await;
        assert!(released.is_err(), "a release never resolves as a loss");
    }

    #[test]
    fn a_failing_leader_gives_up_well_inside_the_grace_period() {
        let s = settings();
        // First failed try, the retry window, and one last try in flight: within grace.
        let worst = s.request_timeout() * 2 + s.renew_retry_window();
        assert!(worst <= Duration::from_secs(s.grace_seconds), "{worst:?}");
        let short = LeaseSettings {
            duration_seconds: 2,
            grace_seconds: 1,
            ..settings()
        };
        assert_eq!(short.request_timeout(), Duration::from_secs(1));
    }
}
