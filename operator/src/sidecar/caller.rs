//! Who is calling, and what they may see, decided by the cluster with the caller's own token.
//! The sidecar holds no more power than its caller: every read or write of what the apiserver
//! holds is made with a client that carries the caller's bearer token (OIDC, a service-account
//! token, whatever the cluster accepts), never the sidecar's own credentials, and never by
//! impersonation. Who the caller is comes from a SelfSubjectReview made with that token.
//!
//! Clients and identities are cached per token (by its SHA-256, never the token itself) for a
//! short while, so a page of requests costs one review, and a revoked token stops working
//! within [`IDENTITY_TTL`].

use super::problem::Problem;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::PostParams;
use kube::{Api, Client};
use orrery_crds::StudioRun;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an identity learnt from a token is trusted before it is asked for again.
pub const IDENTITY_TTL: Duration = Duration::from_secs(30);
/// Tokens whose identity is remembered at once (the oldest are forgotten first).
pub const MAX_CACHED_CALLERS: usize = 1024;

/// A caller the cluster authenticated.
#[derive(Clone)]
pub struct Caller {
    /// The user name (`alice`, `system:serviceaccount:ns:name`).
    pub username: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// A client acting with the caller's own token.
    pub client: Client,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("username", &self.username)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl Caller {
    /// Whether the caller is a service account (or another `system:` identity): never a
    /// person who can decide an approval.
    pub fn is_service_account(&self) -> bool {
        self.username.starts_with("system:")
            || self.groups.iter().any(|g| g == "system:serviceaccounts")
    }
}

/// Makes callers from bearer tokens, with the cluster's address and CA from the sidecar's own
/// kube config (its credentials are dropped).
pub struct Callers {
    base: kube::Config,
    cache: Mutex<HashMap<[u8; 32], (Instant, Caller)>>,
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callers")
            .field("cluster", &self.base.cluster_url)
            .finish_non_exhaustive()
    }
}

impl Callers {
    /// Callers of the cluster `config` points at; `config`'s own credentials are never used.
    pub fn new(config: kube::Config) -> Callers {
        let mut base = config;
        base.auth_info = kube::config::AuthInfo::default();
        Callers {
            base,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Instant, Caller)>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The caller whose bearer token this is: 401 when the cluster does not accept it, 503
    /// when the cluster cannot be asked.
    pub async fn identify(&self, token: &str) -> Result<Caller, Problem> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((at, caller)) = self.lock().get(&key)
            && at.elapsed() < IDENTITY_TTL
        {
            return Ok(caller.clone());
        }
        let mut config = self.base.clone();
        config.auth_info.token = Some(secrecy::SecretString::from(token.to_owned()));
        let client = Client::try_from(config)
            .map_err(|e| Problem::unavailable(format!("cannot reach the cluster: {e}")))?;
        let review = Api::<SelfSubjectReview>::all(client.clone())
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .map_err(|e| cluster_problem(&e, "who you are (SelfSubjectReview)"))?;
        let user = review
            .status
            .and_then(|s| s.user_info)
            .ok_or_else(|| Problem::unauthenticated("the cluster did not say who this token is"))?;
        let username = user.username.filter(|u| !u.is_empty()).ok_or_else(|| {
            Problem::unauthenticated("the cluster knows no user name for this token")
        })?;
        let caller = Caller {
            username,
            groups: user.groups.unwrap_or_default(),
            client,
        };
        let mut cache = self.lock();
        if cache.len() >= MAX_CACHED_CALLERS {
            cache.retain(|_, (at, _)| at.elapsed() < IDENTITY_TTL);
            if cache.len() >= MAX_CACHED_CALLERS
                && let Some(oldest) = cache.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| *k)
            {
                cache.remove(&oldest);
            }
        }
        cache.insert(key, (Instant::now(), caller.clone()));
        Ok(caller)
    }
}

/// What a refusal of the apiserver means for the caller: its status code and message pass
/// through (401, 403, 404), anything else is 503.
pub fn cluster_problem(e: &kube::Error, what: &str) -> Problem {
    match e {
        kube::Error::Api(status) => match status.code {
            401 => Problem::unauthenticated(
                "the cluster does not accept this token: send a bearer token it accepts (`kubectl create token`, your OIDC id token)",
            ),
            403 => Problem::forbidden(format!("the cluster refuses {what}: {}", status.message)),
            404 => Problem::not_found(format!("{what}: {}", status.message)),
            _ => Problem::unavailable(format!(
                "the cluster could not answer {what}: {}",
                status.message
            )),
        },
        other => Problem::unavailable(format!("the cluster could not answer {what}: {other}")),
    }
}

/// The run `namespace/name`, read with the caller's own token (so the cluster's RBAC decides
/// whether they may see it at all).
pub async fn get_run(caller: &Caller, namespace: &str, name: &str) -> Result<StudioRun, Problem> {
    Api::<StudioRun>::namespaced(caller.client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| cluster_problem(&e, &format!("studiorun {namespace}/{name}")))
}

/// Whether `caller` is the run's owner or one of its approvers (a user named, or a member of
/// a group named): who may read what only the sidecar holds (events, approval text).
pub fn owns_or_approves(run: &StudioRun, caller: &Caller) -> bool {
    run.spec.owner == caller.username || is_approver(run, caller)
}

/// Whether the caller is one of the run's approvers, by name or by one of their groups.
pub fn is_approver(run: &StudioRun, caller: &Caller) -> bool {
    run.spec.approvers.as_ref().is_some_and(|a| {
        a.users.contains(&caller.username) || a.groups.iter().any(|g| caller.groups.contains(g))
    })
}

/// [`get_run`], then [`owns_or_approves`]: anyone else gets 404, as if the run did not exist
/// (rule 11.5: what only the sidecar holds is not even confirmed to others).
pub async fn run_for_owner_or_approver(
    caller: &Caller,
    namespace: &str,
    name: &str,
) -> Result<StudioRun, Problem> {
    let run = get_run(caller, namespace, name).await?;
    if owns_or_approves(&run, caller) {
        Ok(run)
    } else {
        Err(Problem::not_found(format!(
            "no studiorun {namespace}/{name} owned or approved by {}: only a run's owner and its approvers may read its events and approvals",
            caller.username
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use orrery_crds::run::{Approvers, StudioRunSpec};

    fn run(owner: &str, approvers: Option<Approvers>) -> StudioRun {
        let mut spec: StudioRunSpec = serde_json::from_value(serde_json::json!({
            "compositionRef": {"name": "c"}, "input": "x", "owner": owner
        }))
        .unwrap();
        spec.approvers = approvers;
        StudioRun::new("r", spec)
    }

    async fn caller(username: &str, groups: &[&str]) -> Caller {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        Caller {
            username: username.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            client: Client::try_from(config).unwrap(),
        }
    }

    #[tokio::test]
    async fn the_owner_named_approvers_and_members_of_approver_groups_may_read_and_nobody_else() {
        let approvers = Approvers {
            users: vec!["carol".into()],
            groups: vec!["release-managers".into()],
        };
        let r = run("alice", Some(approvers));
        let cases = [
            ("alice", vec![], true),
            ("carol", vec![], true),
            ("dave", vec!["release-managers"], true),
            ("bob", vec!["devs"], false),
            (
                "system:serviceaccount:ns:ci",
                vec!["system:serviceaccounts"],
                false,
            ),
        ];
        for (user, groups, want) in cases {
            assert_eq!(
                owns_or_approves(&r, &caller(user, &groups).await),
                want,
                "{user}"
            );
        }
        assert!(!owns_or_approves(
            &run("alice", None),
            &caller("carol", &[]).await
        ));
    }

    #[tokio::test]
    async fn service_accounts_and_system_users_are_not_people() {
        assert!(
            caller("system:serviceaccount:a:b", &[])
                .await
                .is_service_account()
        );
        assert!(
            caller("x", &["system:serviceaccounts"])
                .await
                .is_service_account()
        );
        assert!(!caller("alice", &["devs"]).await.is_service_account());
    }
}
