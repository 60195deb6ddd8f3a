//! The executor's Node: registered Ready with capacity, so pods bound to it look scheduled on
//! a healthy node, and removed when the executor stops.

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::PodExecutorError;

/// The field manager of the executor's writes.
pub const FIELD_MANAGER: &str = "orrery-pod-executor";
/// Label on the executor's Nodes.
pub const NODE_LABEL: &str = "orrery.dev/pod-executor";

/// Creates or updates the Node `name`: Ready, with addresses, capacity and node info, and
/// without the `not-ready` taint the apiserver adds to new Nodes.
pub async fn register(
    client: &Client,
    name: &str,
    host_ip: &str,
) -> Result<Node, PodExecutorError> {
    let api: Api<Node> = Api::all(client.clone());
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch,
            NODE_LABEL: "true",
        } },
    });
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &pp, &Patch::Apply(&node))
        .await
        .map_err(|e| PodExecutorError::kube(format!("registering Node {name}"), e))?;

    let now = k8s_openapi::jiff::Timestamp::now();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now);
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({ "type": type_, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": now })
    };
    let resources =
        json!({ "cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi" });
    let status = json!({
        "apiVersion": "v1", "kind": "Node",
        "status": {
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "the orrery test pod executor runs this node's pods as local processes"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": host_ip },
                { "type": "Hostname", "address": name },
            ],
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": {
                "architecture": arch,
                "bootID": "",
                "containerRuntimeVersion": "orrery-pod-executor://0.1",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.36.3",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "local processes",
                "systemUUID": "",
            },
        }
    });
    api.patch_status(name, &pp, &Patch::Apply(&status))
        .await
        .map_err(|e| PodExecutorError::kube(format!("reporting Node {name} Ready"), e))?;
    // The node lifecycle controller would lift the taint once the node is Ready; it does not
    // run here.
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "taints": null } })),
    )
    .await
    .map_err(|e| PodExecutorError::kube(format!("removing the taints of Node {name}"), e))
}

/// Deletes the Node `name` (a Node that is already gone is fine).
pub async fn remove(client: &Client, name: &str) -> Result<(), PodExecutorError> {
    let api: Api<Node> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(PodExecutorError::kube(format!("deleting Node {name}"), e)),
    }
}
