//! The Secrets, ConfigMaps and service-account tokens a pod needs, fetched once before its
//! containers start (the kubelet resolves them at container start too; later changes do not
//! reach a running process).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use crate::PodExecutorError;

/// Key of a projected service-account token: (audience, expirationSeconds).
pub type TokenKey = (String, i64);

/// Default `expirationSeconds` of a projected token (the apiserver's default, and the
/// `kube-api-access-*` volume's value).
pub const DEFAULT_TOKEN_EXPIRATION: i64 = 3607;

/// What a pod references, by name; missing objects are simply absent.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Objects {
    /// Secret name → key → bytes.
    pub secrets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// ConfigMap name → key → bytes (`data` and `binaryData`).
    pub config_maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// Projected service-account tokens.
    pub tokens: BTreeMap<TokenKey, String>,
}

/// The names a pod refers to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Refs {
    pub secrets: BTreeSet<String>,
    pub config_maps: BTreeSet<String>,
    pub tokens: BTreeSet<TokenKey>,
}

/// The Secrets, ConfigMaps and tokens named by the pod's env, envFrom and volumes.
pub fn refs(pod: &Pod) -> Refs {
    let mut refs = Refs::default();
    let Some(spec) = pod.spec.as_ref() else {
        return refs;
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    for c in containers {
        container_refs(c, &mut refs);
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(name) = v.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            refs.secrets.insert(name);
        }
        if let Some(cm) = &v.config_map {
            refs.config_maps.insert(cm.name.clone());
        }
        for source in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(s) = &source.secret {
                refs.secrets.insert(s.name.clone());
            }
            if let Some(cm) = &source.config_map {
                refs.config_maps.insert(cm.name.clone());
            }
            if let Some(t) = &source.service_account_token {
                refs.tokens
                    .insert(token_key(t.audience.as_deref(), t.expiration_seconds));
            }
        }
    }
    refs
}

fn container_refs(c: &Container, refs: &mut Refs) {
    for e in c.env_from.iter().flatten() {
        if let Some(s) = &e.secret_ref {
            refs.secrets.insert(s.name.clone());
        }
        if let Some(cm) = &e.config_map_ref {
            refs.config_maps.insert(cm.name.clone());
        }
    }
    for vf in c.env.iter().flatten().filter_map(|e| e.value_from.as_ref()) {
        if let Some(s) = &vf.secret_key_ref {
            refs.secrets.insert(s.name.clone());
        }
        if let Some(cm) = &vf.config_map_key_ref {
            refs.config_maps.insert(cm.name.clone());
        }
    }
}

/// The [`TokenKey`] of a projected token source.
pub fn token_key(audience: Option<&str>, expiration_seconds: Option<i64>) -> TokenKey {
    (
        audience.unwrap_or_default().to_string(),
        expiration_seconds.unwrap_or(DEFAULT_TOKEN_EXPIRATION),
    )
}

/// Fetches everything `pod` refers to, in its namespace. Objects that do not exist are left
/// out (the caller decides whether the reference was optional); other API errors fail.
pub async fn fetch(client: &Client, pod: &Pod) -> Result<Objects, PodExecutorError> {
    let ns = pod.namespace().unwrap_or_default();
    let refs = refs(pod);
    let mut objects = Objects::default();

    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    for name in &refs.secrets {
        let got = secrets
            .get_opt(name)
            .await
            .map_err(|e| PodExecutorError::kube(format!("reading Secret {ns}/{name}"), e))?;
        if let Some(s) = got {
            let data = s
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .chain(
                    s.string_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.into_bytes())),
                )
                .collect();
            objects.secrets.insert(name.clone(), data);
        }
    }

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in &refs.config_maps {
        let got = cms
            .get_opt(name)
            .await
            .map_err(|e| PodExecutorError::kube(format!("reading ConfigMap {ns}/{name}"), e))?;
        if let Some(cm) = got {
            let data = cm
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .chain(
                    cm.binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                )
                .collect();
            objects.config_maps.insert(name.clone(), data);
        }
    }

    if !refs.tokens.is_empty() {
        let sa_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".to_string());
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
        for key in &refs.tokens {
            let (audience, expiration) = key;
            let request = TokenRequest {
                spec: Some(TokenRequestSpec {
                    // None: the apiserver's own audiences.
                    audiences: (!audience.is_empty()).then(|| vec![audience.clone()]),
                    expiration_seconds: Some(*expiration),
                    // Bound to the pod, as the kubelet does: deleting the pod revokes it.
                    bound_object_ref: Some(BoundObjectReference {
                        api_version: Some("v1".to_string()),
                        kind: Some("Pod".to_string()),
                        name: Some(pod.name_any()),
                        uid: pod.uid(),
                    }),
                }),
                ..TokenRequest::default()
            };
            let issued = sas
                .create_token_request(&sa_name, &PostParams::default(), &request)
                .await
                .map_err(|e| {
                    PodExecutorError::kube(
                        format!("requesting a token for ServiceAccount {ns}/{sa_name}"),
                        e,
                    )
                })?;
            let token = issued.status.and_then(|s| s.token).unwrap_or_default();
            objects.tokens.insert(key.clone(), token);
        }
    }
    Ok(objects)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refs_collect_env_env_from_and_volume_sources() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": { "name": "p" },
            "spec": {
                "initContainers": [{ "name": "i", "envFrom": [{ "secretRef": { "name": "s-init" } }] }],
                "containers": [{
                    "name": "c",
                    "envFrom": [{ "configMapRef": { "name": "cm-from" } }],
                    "env": [
                        { "name": "A", "valueFrom": { "secretKeyRef": { "name": "s-env", "key": "k" } } },
                        { "name": "B", "valueFrom": { "configMapKeyRef": { "name": "cm-env", "key": "k" } } },
                        { "name": "C", "value": "plain" }
                    ]
                }],
                "volumes": [
                    { "name": "v1", "secret": { "secretName": "s-vol" } },
                    { "name": "v2", "configMap": { "name": "cm-vol" } },
                    { "name": "v3", "projected": { "sources": [
                        { "secret": { "name": "s-proj" } },
                        { "configMap": { "name": "kube-root-ca.crt" } },
                        { "serviceAccountToken": { "path": "token", "expirationSeconds": 600 } },
                        { "serviceAccountToken": { "path": "t2", "audience": "sidecar" } }
                    ] } },
                    { "name": "v4", "emptyDir": {} }
                ]
            }
        }))
        .unwrap();
        let r = refs(&pod);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(r.secrets, set(&["s-env", "s-init", "s-proj", "s-vol"]));
        assert_eq!(
            r.config_maps,
            set(&["cm-env", "cm-from", "cm-vol", "kube-root-ca.crt"])
        );
        assert_eq!(
            r.tokens,
            [
                (String::new(), 600),
                ("sidecar".to_string(), DEFAULT_TOKEN_EXPIRATION)
            ]
            .into_iter()
            .collect()
        );
    }
}
