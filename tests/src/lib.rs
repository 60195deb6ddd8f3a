//! Test infrastructure: the control-plane fixture ([`testenv`]), helpers for tests against it
//! ([`harness`]), the operator's controllers in-process ([`operator_fixture`]), the pod
//! executor that stands in for a kubelet ([`pod_executor`]), and the stub model server
//! ([`stub_model`]).

pub mod harness;
pub mod operator_fixture;
pub mod pod_executor;
pub mod stub_model;
pub mod testenv;
