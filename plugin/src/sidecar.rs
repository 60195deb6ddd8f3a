//! The sidecar, found and called as the person.
//!
//! The text under review and a run's trace live only in the sidecar (never in etcd), so
//! `logs`, `approvals` and showing the text before a decision call it. It knows a caller only by
//! a bearer token the cluster accepts, so the request carries the kubeconfig user's own
//! credentials: the same kube client stack as the API server's requests, pointed at the sidecar,
//! whose auth layer adds the user's token (a static token, a token file, an exec credential
//! plugin, an OIDC id token) and refreshes it as kubectl would. A user who signs in with a client
//! certificate has no token to send; [`PluginError::NoToken`] says what works then.
//!
//! Where the sidecar is, in this order:
//! 1. `--sidecar URL` (or `ORRERY_SIDECAR`);
//! 2. the chart's sidecar Service (label `app.kubernetes.io/component=sidecar`) in the release
//!    namespace (`--sidecar-namespace`, else the current namespace, then `orrery-system`): its
//!    `studio.orrery.dev/public-url` annotation (chart value `service.publicUrl`: an Ingress, a
//!    load balancer, a loopback forward);
//! 3. its cluster IP, when this machine can reach it (inside the cluster, a node that routes
//!    cluster IPs);
//! 4. a port-forward through the API server to a ready pod behind the Service (the user needs
//!    `create pods/portforward` in the release namespace), on a loopback port of this process.

use crate::PluginError;
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kube::client::Body;
use kube::{Client, Config};
use std::time::Duration;

/// The annotation on the sidecar's Service naming where people reach it.
pub const PUBLIC_URL_ANNOTATION: &str = "studio.orrery.dev/public-url";
/// The labels of the chart's sidecar Service.
pub const SERVICE_SELECTOR: &str =
    "app.kubernetes.io/name=orrery,app.kubernetes.io/component=sidecar";
/// Where the chart is installed when nothing else says.
pub const DEFAULT_RELEASE_NAMESPACE: &str = "orrery-system";
/// How long reaching a cluster IP may take before a port-forward is tried instead.
const CLUSTER_IP_CONNECT: Duration = Duration::from_millis(1500);

/// How the sidecar was found, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// `--sidecar` or `ORRERY_SIDECAR`.
    Given(String),
    /// The Service's public-url annotation.
    Annotated {
        /// `namespace/name` of the Service.
        service: String,
        /// The URL.
        url: String,
    },
    /// The Service's cluster IP.
    ClusterIp {
        /// `namespace/name` of the Service.
        service: String,
        /// The URL.
        url: String,
    },
    /// A port-forward through the API server.
    Forwarded {
        /// `namespace/name` of the Service.
        service: String,
        /// The loopback URL this process serves.
        url: String,
    },
}

impl Reach {
    /// The base URL requests go to.
    pub fn url(&self) -> &str {
        match self {
            Reach::Given(url)
            | Reach::Annotated { url, .. }
            | Reach::ClusterIp { url, .. }
            | Reach::Forwarded { url, .. } => url,
        }
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reach::Given(url) => write!(f, "the sidecar at {url}"),
            Reach::Annotated { service, url } => {
                write!(f, "the sidecar at {url} (service/{service}'s public URL)")
            }
            Reach::ClusterIp { service, url } => {
                write!(f, "the sidecar at {url} (service/{service}'s cluster IP)")
            }
            Reach::Forwarded { service, url } => write!(
                f,
                "the sidecar through a port-forward to service/{service} (on {url})"
            ),
        }
    }
}

/// Where to look for the sidecar.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    /// `--sidecar URL`.
    pub url: Option<String>,
    /// `--sidecar-namespace`.
    pub namespace: Option<String>,
}

/// What the kubeconfig user signs in with, as far as the sidecar is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A bearer token the client sends (static, from a file, from an exec plugin, OIDC).
    Token,
    /// A client certificate, seen only by the API server.
    ClientCertificate,
    /// Nothing the sidecar can use (basic auth, anonymous).
    Nothing,
}

/// What `config`'s user signs in with.
pub fn credential_of(config: &Config) -> Credential {
    let user = &config.auth_info;
    if user.token.is_some()
        || user.token_file.is_some()
        || user.exec.is_some()
        || user.auth_provider.is_some()
    {
        Credential::Token
    } else if user.client_certificate.is_some() || user.client_certificate_data.is_some() {
        Credential::ClientCertificate
    } else {
        Credential::Nothing
    }
}

/// The sidecar, called with the person's own credentials.
pub struct Sidecar {
    http: Client,
    reach: Reach,
    forward: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Sidecar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sidecar")
            .field("reach", &self.reach)
            .finish_non_exhaustive()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(task) = &self.forward {
            task.abort();
        }
    }
}

/// A problem as the sidecar words it (`{"code": …, "message": …}`).
#[derive(Debug, Default, serde::Deserialize)]
struct Problem {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

impl Sidecar {
    /// Finds the sidecar for a user of `config` (whose API server `api` reaches).
    pub async fn find(
        api: &Client,
        config: &Config,
        lookup: &Lookup,
        namespace: &str,
    ) -> Result<Sidecar, PluginError> {
        match credential_of(config) {
            Credential::Token => {}
            other => {
                return Err(PluginError::NoToken {
                    client_certificate: other == Credential::ClientCertificate,
                });
            }
        }
        if let Some(url) = lookup.url.clone().filter(|u| !u.is_empty()) {
            return Sidecar::at(
                config,
                Reach::Given(url.trim_end_matches('/').to_owned()),
                None,
            );
        }
        let (service, service_ns) = find_service(api, lookup, namespace).await?;
        let name = format!(
            "{service_ns}/{}",
            service.metadata.name.clone().unwrap_or_default()
        );
        if let Some(url) = service
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PUBLIC_URL_ANNOTATION))
            .filter(|u| !u.is_empty())
        {
            // The person's token goes there: whoever could set the annotation must not be able to
            // send it over the network in the clear.
            if !safe_for_a_token(url) {
                return Err(PluginError::Usage(format!(
                    "service/{name}'s public URL ({PUBLIC_URL_ANNOTATION}) is {url:?}: your token would travel to it unencrypted. \
                     It must be https:// (or a loopback address); ask for the chart's service.publicUrl to be an https URL, or name the sidecar yourself with --sidecar URL"
                )));
            }
            return Sidecar::at(
                config,
                Reach::Annotated {
                    service: name,
                    url: url.trim_end_matches('/').to_owned(),
                },
                None,
            );
        }
        let spec = service.spec.clone().unwrap_or_default();
        let port = spec
            .ports
            .as_ref()
            .and_then(|ports| {
                ports
                    .iter()
                    .find(|p| p.name.as_deref() == Some("http"))
                    .or(ports.first())
            })
            .map(|p| p.port)
            .unwrap_or(8080);
        if let Some(ip) = spec.cluster_ip.filter(|ip| !ip.is_empty() && ip != "None") {
            let host = if ip.contains(':') {
                format!("[{ip}]")
            } else {
                ip.clone()
            };
            let reachable = tokio::time::timeout(
                CLUSTER_IP_CONNECT,
                tokio::net::TcpStream::connect((ip.as_str(), u16::try_from(port).unwrap_or(8080))),
            )
            .await
            .is_ok_and(|c| c.is_ok());
            if reachable {
                return Sidecar::at(
                    config,
                    Reach::ClusterIp {
                        service: name,
                        url: format!("http://{host}:{port}"),
                    },
                    None,
                );
            }
        }
        let service_name = service.metadata.name.clone().unwrap_or_default();
        let (url, task) = forward(api.clone(), service_ns.clone(), service_name).await?;
        Sidecar::at(config, Reach::Forwarded { service: name, url }, Some(task))
    }

    /// The sidecar at `reach`, called with `config`'s user credentials.
    pub fn at(
        config: &Config,
        reach: Reach,
        forward: Option<tokio::task::JoinHandle<()>>,
    ) -> Result<Sidecar, PluginError> {
        let url: http::Uri = reach.url().parse().map_err(|e| {
            PluginError::Usage(format!(
                "the sidecar's URL {:?} is not a URL: {e}",
                reach.url()
            ))
        })?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(PluginError::Usage(format!(
                "the sidecar's URL {:?} must be http(s)://host[:port][/path]",
                reach.url()
            )));
        }
        let mut sidecar_config = config.clone();
        sidecar_config.cluster_url = url;
        // The API server's CA and name are not the sidecar's: an https sidecar is checked against
        // the system's roots.
        sidecar_config.root_cert = None;
        sidecar_config.tls_server_name = None;
        sidecar_config.accept_invalid_certs = false;
        let http = Client::try_from(sidecar_config).map_err(PluginError::Client)?;
        Ok(Sidecar {
            http,
            reach,
            forward,
        })
    }

    /// How it was found.
    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// `GET path` (with `accept` and, when given, `Last-Event-ID`): the response, 2xx only.
    pub async fn get(
        &self,
        what: &str,
        path: &str,
        accept: &str,
        last_event_id: Option<u64>,
    ) -> Result<http::Response<Body>, PluginError> {
        let mut request = http::Request::get(path).header(http::header::ACCEPT, accept);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let request = request
            .body(Body::empty())
            .map_err(|e| PluginError::Usage(format!("{what}: {e}")))?;
        let response =
            self.http
                .send(request)
                .await
                .map_err(|e| PluginError::SidecarUnreachable {
                    what: what.to_owned(),
                    reach: self.reach.to_string(),
                    detail: e.to_string(),
                })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        let problem: Problem = serde_json::from_slice(&body).unwrap_or_else(|_| Problem {
            code: String::new(),
            message: String::from_utf8_lossy(&body).trim().to_owned(),
        });
        Err(PluginError::SidecarRefused {
            what: what.to_owned(),
            status,
            code: problem.code,
            message: problem.message,
        })
    }

    /// `GET path` as JSON.
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        path: &str,
    ) -> Result<T, PluginError> {
        let response = self.get(what, path, "application/json", None).await?;
        let body = response.into_body().collect_bytes().await.map_err(|e| {
            PluginError::SidecarUnreachable {
                what: what.to_owned(),
                reach: self.reach.to_string(),
                detail: e.to_string(),
            }
        })?;
        serde_json::from_slice(&body).map_err(|e| PluginError::SidecarAnswer {
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }
}

/// The chart's sidecar Service: in `--sidecar-namespace`, else the current namespace, then
/// [`DEFAULT_RELEASE_NAMESPACE`].
async fn find_service(
    api: &Client,
    lookup: &Lookup,
    namespace: &str,
) -> Result<(Service, String), PluginError> {
    let mut searched: Vec<String> = Vec::new();
    let candidates = search_order(lookup, namespace);
    let mut refusals: Vec<String> = Vec::new();
    for ns in candidates {
        let services: Api<Service> = Api::namespaced(api.clone(), &ns);
        match services
            .list(&ListParams::default().labels(SERVICE_SELECTOR))
            .await
        {
            Ok(list) => {
                if let Some(service) = list.items.into_iter().next() {
                    return Ok((service, ns));
                }
                searched.push(ns);
            }
            Err(kube::Error::Api(status)) => {
                refusals.push(format!("{ns}: {} ({})", status.message, status.code));
                searched.push(ns);
            }
            Err(e) => {
                return Err(PluginError::of(
                    format!("looking for the sidecar's Service in {ns}"),
                    e,
                ));
            }
        }
    }
    Err(PluginError::NoSidecar { searched, refusals })
}

/// Serves a loopback port whose every connection is a port-forward through the API server to a
/// ready pod behind `service` (looked up again for each connection, so a replaced pod is
/// followed). Returns the URL and the serving task.
async fn forward(
    api: Client,
    namespace: String,
    service: String,
) -> Result<(String, tokio::task::JoinHandle<()>), PluginError> {
    // Find a pod first, so a missing right or an empty Service is said now, not on first use.
    let _ = ready_pod(&api, &namespace, &service).await?;
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|e| {
            PluginError::Usage(format!(
                "cannot open a loopback port for the port-forward: {e}"
            ))
        })?;
    let url = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}"),
        Err(e) => {
            return Err(PluginError::Usage(format!(
                "cannot open a loopback port for the port-forward: {e}"
            )));
        }
    };
    let task = tokio::spawn(async move {
        while let Ok((mut local, _)) = listener.accept().await {
            let (api, namespace, service) = (api.clone(), namespace.clone(), service.clone());
            tokio::spawn(async move {
                let Ok((pod, port)) = ready_pod(&api, &namespace, &service).await else {
                    return;
                };
                let pods: Api<Pod> = Api::namespaced(api, &namespace);
                let Ok(mut forwarder) = pods.portforward(&pod, &[port]).await else {
                    return;
                };
                if let Some(mut remote) = forwarder.take_stream(port) {
                    let _ = tokio::io::copy_bidirectional(&mut local, &mut remote).await;
                }
                forwarder.abort();
            });
        }
    });
    Ok((url, task))
}

/// A ready pod behind `service` and its sidecar port (from the Service's EndpointSlices).
async fn ready_pod(
    api: &Client,
    namespace: &str,
    service: &str,
) -> Result<(String, u16), PluginError> {
    let slices: Api<EndpointSlice> = Api::namespaced(api.clone(), namespace);
    let list = slices
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .map_err(|e| {
            PluginError::of(
                format!(
                    "finding the pods behind service/{service} in {namespace} for a port-forward"
                ),
                e,
            )
        })?;
    if let Some(found) = ready_endpoint(&list.items) {
        return Ok(found);
    }
    Err(PluginError::NoSidecar {
        searched: vec![format!(
            "{namespace} (service/{service} has no ready pod to port-forward to)"
        )],
        refusals: Vec::new(),
    })
}

/// The first ready pod among `slices`' endpoints, with the slice's `http` port (else its first).
pub fn ready_endpoint(slices: &[EndpointSlice]) -> Option<(String, u16)> {
    for slice in slices {
        let port = slice
            .ports
            .as_ref()
            .and_then(|ports| {
                ports
                    .iter()
                    .find(|p| p.name.as_deref() == Some("http"))
                    .or(ports.first())
            })
            .and_then(|p| p.port)
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else { continue };
        for endpoint in slice.endpoints.iter().flatten() {
            // An endpoint whose readiness is unknown counts as ready (the API's own reading).
            let ready = endpoint
                .conditions
                .as_ref()
                .and_then(|c| c.ready)
                .unwrap_or(true);
            if let Some(target) = endpoint
                .target_ref
                .as_ref()
                .filter(|t| t.kind.as_deref() == Some("Pod"))
                && ready
                && let Some(pod) = &target.name
            {
                return Some((pod.clone(), port));
            }
        }
    }
    None
}

/// Whether a bearer token may be sent to `url` as found in the cluster: over TLS, or to this
/// machine's loopback (a forward of one's own).
pub fn safe_for_a_token(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    match (uri.scheme_str(), uri.host()) {
        (Some("https"), Some(_)) => true,
        (Some("http"), Some(host)) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// The namespaces searched for the sidecar's Service, in order.
pub fn search_order(lookup: &Lookup, namespace: &str) -> Vec<String> {
    match &lookup.namespace {
        Some(ns) => vec![ns.clone()],
        None if namespace == DEFAULT_RELEASE_NAMESPACE => vec![namespace.to_owned()],
        None => vec![namespace.to_owned(), DEFAULT_RELEASE_NAMESPACE.to_owned()],
    }
}

/// A response body as a stream of its data chunks (an error says why the stream broke).
pub fn body_chunks(body: Body) -> futures::stream::BoxStream<'static, Result<Vec<u8>, String>> {
    futures::stream::unfold(body, |mut body| async move {
        loop {
            match body.frame().await {
                None => return None,
                Some(Err(e)) => return Some((Err(e.to_string()), body)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data.to_vec()), body));
                    }
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(user: kube::config::AuthInfo) -> Config {
        let mut c = Config::new("https://127.0.0.1:6443".parse().unwrap_or_default());
        c.auth_info = user;
        c
    }

    #[test]
    fn tokens_of_every_kind_reach_the_sidecar_and_client_certificates_are_named() {
        let token = kube::config::AuthInfo {
            token: Some("t".to_owned().into()),
            ..Default::default()
        };
        assert_eq!(credential_of(&config(token)), Credential::Token);
        let exec: kube::config::AuthInfo = serde_json::from_value(serde_json::json!({
            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token"}
        }))
        .unwrap_or_default();
        assert_eq!(credential_of(&config(exec)), Credential::Token);
        let cert = kube::config::AuthInfo {
            client_certificate_data: Some("cert".into()),
            ..Default::default()
        };
        assert_eq!(credential_of(&config(cert)), Credential::ClientCertificate);
        let message = PluginError::NoToken {
            client_certificate: true,
        }
        .to_string();
        assert!(message.contains("client certificate"), "{message}");
        assert!(message.contains("--yes --digest"), "{message}");
        assert!(message.contains("kubectl create token"), "{message}");
    }

    #[test]
    fn the_port_forward_goes_to_a_ready_pod_on_the_http_port() {
        let slice = |endpoints: serde_json::Value| -> EndpointSlice {
            serde_json::from_value(serde_json::json!({
                "addressType": "IPv4",
                "ports": [{"name": "metrics", "port": 8081}, {"name": "http", "port": 8080}],
                "endpoints": endpoints,
            }))
            .unwrap_or_default()
        };
        let pod = |name: &str, ready: bool| {
            serde_json::json!({"addresses": ["10.0.0.1"], "conditions": {"ready": ready},
                "targetRef": {"kind": "Pod", "name": name}})
        };
        let slices = [
            slice(serde_json::json!([pod("terminating", false)])),
            slice(serde_json::json!([pod("op-1", true), pod("op-2", true)])),
        ];
        assert_eq!(ready_endpoint(&slices), Some(("op-1".to_owned(), 8080)));
        assert_eq!(ready_endpoint(&slices[..1]), None);
        assert_eq!(ready_endpoint(&[]), None);
    }

    #[test]
    fn the_service_is_looked_for_where_named_else_here_then_in_orrery_system() {
        let named = Lookup {
            url: None,
            namespace: Some("platform".into()),
        };
        assert_eq!(search_order(&named, "team-a"), ["platform"]);
        let here = Lookup::default();
        assert_eq!(search_order(&here, "team-a"), ["team-a", "orrery-system"]);
        assert_eq!(search_order(&here, "orrery-system"), ["orrery-system"]);
    }

    #[test]
    fn a_public_url_from_the_cluster_gets_a_token_only_over_tls_or_loopback() {
        for (url, safe) in [
            ("https://orrery.example.com/studio", true),
            ("http://127.0.0.1:8080", true),
            ("http://[::1]:8080", true),
            ("http://localhost:8080", true),
            ("http://orrery.example.com", false),
            ("http://10.96.0.80:8080", false),
            ("http://127.0.0.1.evil.example", false),
            ("http://u@127.0.0.1:80@evil.example/", false),
            ("http://0x7f.1/", false),
            ("ftp://127.0.0.1", false),
            ("not a url", false),
        ] {
            assert_eq!(safe_for_a_token(url), safe, "{url}");
        }
    }

    #[test]
    fn a_sidecar_url_must_be_http_or_https_with_a_host() {
        let c = config(kube::config::AuthInfo::default());
        for bad in ["ftp://x", "localhost:8080", "http://"] {
            assert!(
                Sidecar::at(&c, Reach::Given(bad.into()), None).is_err(),
                "{bad}"
            );
        }
    }
}
