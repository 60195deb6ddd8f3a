//! Name resolution for the guard: an injectable resolver, and the reqwest resolver that checks
//! every address of a name at every connect (anchors 10, 11, 18).

use super::error::GuardError;
use super::policy::{GuardPolicy, Route};
use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use url::Host;

/// Resolves a host name to addresses. Injectable so tests control DNS.
pub trait NameResolver: Send + Sync + 'static {
    /// All addresses of `host` (a name, never a literal).
    fn lookup(&self, host: &str) -> BoxFuture<'static, Result<Vec<IpAddr>, GuardError>>;
}

/// The system resolver (`getaddrinfo` through tokio).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl NameResolver for SystemResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, Result<Vec<IpAddr>, GuardError>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| GuardError::Resolve {
                    host: host.clone(),
                    message: e.to_string(),
                })?;
            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            ips.dedup();
            Ok(ips)
        })
    }
}

/// A fixed map from names to addresses (tests, pinned hosts). Unknown names fail to resolve.
#[derive(Clone, Debug, Default)]
pub struct StaticResolver {
    map: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `host` → `addrs` (host matched case-insensitively).
    pub fn with(mut self, host: &str, addrs: &[IpAddr]) -> Self {
        self.map.insert(host.to_ascii_lowercase(), addrs.to_vec());
        self
    }
}

impl NameResolver for StaticResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, Result<Vec<IpAddr>, GuardError>> {
        let found = self.map.get(&host.to_ascii_lowercase()).cloned();
        let host = host.to_owned();
        Box::pin(async move {
            found.ok_or(GuardError::Resolve {
                host,
                message: "no such host".into(),
            })
        })
    }
}

tokio::task_local! {
    /// The route of the connection being opened, set by the connector layer around the
    /// connect (the resolver runs inside it).
    pub(crate) static CONNECT_ROUTE: Route;
}

/// The resolver handed to reqwest: resolves with the inner resolver and returns the addresses
/// only if every one passes the policy. On a connection routed through the egress proxy, the
/// only name resolved is the proxy's own, and it is resolved without the entry's rules (it is
/// deployment configuration), except that link-local and metadata answers are still refused.
/// A direct connection to a destination that merely shares the proxy's name gets the entry's
/// rules like any other.
pub(crate) struct GuardResolver {
    pub(crate) policy: Arc<GuardPolicy>,
    pub(crate) inner: Arc<dyn NameResolver>,
}

impl Resolve for GuardResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let inner = self.inner.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = inner.lookup(&host).await?;
            let proxied = CONNECT_ROUTE
                .try_with(|route| *route == Route::Proxy)
                .unwrap_or(false);
            let is_proxy_host = proxied
                && policy
                    .egress_proxy
                    .as_ref()
                    .and_then(|p| p.host_str())
                    .is_some_and(|p| p.eq_ignore_ascii_case(&host));
            if is_proxy_host {
                let deployment = GuardPolicy {
                    private_network: true,
                    loopback: true,
                    egress_proxy: None,
                    private_allow: vec![super::policy::AllowRule::Host(host.to_ascii_lowercase())],
                    ..(*policy).clone()
                };
                for addr in &addrs {
                    let classified = super::classify::classify(*addr);
                    if classified.class != super::classify::AddrClass::Loopback {
                        deployment.check_addr(&Host::Domain(host.as_str()), *addr)?;
                    }
                }
            } else {
                policy.check_resolved(&Host::Domain(host.as_str()), &addrs)?;
            }
            let out: Addrs = Box::new(
                addrs
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(out)
        })
    }
}
