//! Test infrastructure: the control-plane fixture ([`testenv`]), helpers for tests against it
//! ([`harness`]), the manifests several tests apply ([`manifests`]), the whole system in one
//! test namespace ([`studio`]) and one shared by concurrent tests ([`shared_studio`]), the web
//! console's served files and browser specs ([`console`]), with a sidecar they kill and start
//! again ([`spec_sidecar`]), the operator's controllers in-process ([`operator_fixture`]) with
//! its ServiceAccount client ([`operator_identity`]), the chart's admission policies bound to
//! one namespace ([`admission`]), the pod executor that stands in for a kubelet
//! ([`pod_executor`]), the stub model server ([`stub_model`]), and a throwaway PostgreSQL server
//! with a database per test ([`postgres`]). The harness only: `orrery up` (`tests/up/`, crate
//! `orrery-up`) and the benchmarks (`tests/bench/`, crate `orrery-bench`) use it from crates of
//! their own.

pub mod admission;
pub mod chart;
pub mod console;
pub mod fault_proxy;
pub mod front;
pub mod harness;
pub mod images;
pub mod manifests;
pub mod netcheck;
pub mod operator_fixture;
pub mod operator_identity;
pub mod otlp;
/// The development node (crate `orrery-devnode`), under the name the tests have always used.
pub use orrery_devnode as pod_executor;
pub mod postgres;
pub mod promcheck;
pub mod shared_studio;
pub mod sidecar_fixture;
pub mod skew;
pub mod soak;
pub mod spec_sidecar;
pub mod stub_model;
pub mod studio;
pub mod testenv;
