//! Fixtures the unit tests of several modules share (the runner's and the probe's builders
//! both build from a deployment config). Test code only; a module of its own so that no
//! module's tests import another controller's.
#![allow(clippy::expect_used)]

use crate::config::Config;

pub(crate) fn config(extra: &str) -> Config {
    Config::parse(
        "t.yaml",
        &format!(
            "apiVersion: config.studio.orrery.dev/v1alpha1\nkind: OperatorConfig\n\
             runner: {{image: 'ghcr.io/example/orrery:0.1.0'}}\n\
             sidecar: {{namespace: orrery-system, serviceName: orrery-sidecar, port: 8080}}\n\
             runToken: {{signingKeyFile: k}}\n{extra}\n"
        ),
    )
    .expect("config")
}

/// A PEM block the config accepts (base64 of three bytes; only the operator's checks read it).
pub(crate) const TEST_PEM: &str = include_str!("../../tests/fixtures/test-ca.pem");

/// [`config`] with `runner.trustedCertificates` = [`TEST_PEM`].
pub(crate) fn trusting_config() -> Config {
    let mut config = config("");
    config.runner.trusted_certificates = Some(TEST_PEM.to_owned());
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    config
}
