//! The connector layer: checks the destination of every connection reqwest opens, before it
//! opens it (anchor 12: reqwest never calls a custom resolver for IP-literal hosts, so literals
//! are checked here), and checks the peer address of the opened connection again.
//!
//! reqwest hands layers an opaque request type whose `Debug` form is `Unnameable(<uri>)`; the
//! destination URI is read from it. If that ever cannot be read, the connection is refused
//! (fail closed), which every loopback test would show at once.

use super::error::GuardError;
use super::policy::{GuardPolicy, Route};
use futures::future::BoxFuture;
use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use reqwest::Url;
use std::fmt::Debug;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The layer given to `reqwest::ClientBuilder::connector_layer`.
#[derive(Clone)]
pub(crate) struct GuardLayer {
    pub(crate) policy: Arc<GuardPolicy>,
}

impl<S> Layer<S> for GuardLayer {
    type Service = GuardConnect<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GuardConnect {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// The service built by [`GuardLayer`].
#[derive(Clone)]
pub(crate) struct GuardConnect<S> {
    inner: S,
    policy: Arc<GuardPolicy>,
}

/// Reads the destination from reqwest's opaque connector request.
pub(crate) fn destination<R: Debug>(req: &R) -> Result<Url, GuardError> {
    let text = format!("{req:?}");
    let uri = text
        .strip_prefix("Unnameable(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(text.as_str());
    Url::parse(uri).map_err(|e| GuardError::InvalidUrl {
        url: uri.to_owned(),
        reason: format!("the connection target could not be read ({e}); refusing"),
    })
}

impl<S, R> Service<R> for GuardConnect<S>
where
    R: Debug,
    S: Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let checked = destination(&req).and_then(|url| {
            let route = self.policy.check_url(&url)?;
            Ok((url, route))
        });
        let (url, route) = match checked {
            Ok(v) => v,
            Err(e) => return Box::pin(async move { Err(Box::new(e) as BoxError) }),
        };
        let policy = self.policy.clone();
        // The route is known to the resolver while this connection is opened, so the egress
        // proxy's own name is exempted only on the proxied route (see `GuardResolver`).
        let inner = &mut self.inner;
        let connecting = super::resolve::CONNECT_ROUTE.sync_scope(route, || inner.call(req));
        let connecting = super::resolve::CONNECT_ROUTE.scope(route, connecting);
        Box::pin(async move {
            let conn = connecting.await.map_err(Into::into)?;
            if route == Route::Direct {
                let mut extensions = http::Extensions::new();
                conn.connected().get_extras(&mut extensions);
                if let (Some(info), Some(host)) = (extensions.get::<HttpInfo>(), url.host()) {
                    policy.check_socket(&host, info.remote_addr())?;
                }
            }
            Ok(conn)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Unnameable(http::Uri);

    #[test]
    fn the_destination_is_read_from_the_opaque_request() {
        let req = Unnameable("http://[::ffff:a9fe:a9fe]:8080/x".parse().unwrap());
        let url = destination(&req).unwrap();
        assert_eq!(url.host_str(), Some("[::ffff:a9fe:a9fe]"));
        assert_eq!(url.port(), Some(8080));
    }

    #[test]
    fn an_unreadable_destination_is_refused() {
        #[derive(Debug)]
        struct Opaque;
        assert!(destination(&Opaque).is_err());
    }
}
