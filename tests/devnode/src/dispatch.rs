//! The executor's main loop: watches pods, binds pods that name no node (like the scheduler),
//! and hands the pods bound to its Node to one worker each.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{Ctx, worker};

/// Whether the executor should bind `pod`: no node yet, the default scheduler, not ending.
fn wants_binding(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let unbound = spec
        .and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty);
    let scheduler = spec
        .and_then(|s| s.scheduler_name.as_deref())
        .is_none_or(|s| s.is_empty() || s == "default-scheduler");
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    unbound
        && scheduler
        && pod.metadata.deletion_timestamp.is_none()
        && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Binds `pod` to `node` (retrying transient errors; a pod bound meanwhile is fine).
async fn bind(client: Client, pod: Pod, node: String) {
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let binding = Binding {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: pod.uid(),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.clone()),
            ..Default::default()
        },
    };
    for attempt in 1..=5u64 {
        let result: Result<serde_json::Value, kube::Error> = api
            .create_subresource("binding", &name, &PostParams::default(), &binding)
            .await;
        match result {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => return,
            Err(e) if attempt == 5 => {
                eprintln!("pod-executor: binding pod {ns}/{name} to {node}: {e}");
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200 * attempt)).await,
        }
    }
}

/// The executor's main loop: watches pods, binds unbound ones, hands bound ones to workers.
pub(super) async fn watch_pods(
    ctx: Arc<Ctx>,
    api: Api<Pod>,
    token: CancellationToken,
    listed: oneshot::Sender<Result<(), String>>,
) {
    let mut listed = Some(listed);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut workers: HashMap<String, watch::Sender<Option<Pod>>> = HashMap::new();
    let mut finished: HashSet<String> = HashSet::new();
    let mut binding: HashSet<String> = HashSet::new();
    let mut tasks: JoinSet<String> = JoinSet::new();
    let mut relist: Option<HashSet<String>> = None;

    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Ok(uid) = done {
                    workers.remove(&uid);
                    finished.insert(uid);
                }
            }
            event = stream.next() => match event {
                None => break,
                Some(Err(e)) => {
                    match listed.take() {
                        Some(tx) => {
                            let _ = tx.send(Err(e.to_string()));
                            break;
                        }
                        None => eprintln!("pod-executor: watching pods: {e}"),
                    }
                }
                Some(Ok(Event::Init)) => relist = Some(HashSet::new()),
                Some(Ok(Event::InitApply(pod))) => {
                    if let (Some(seen), Some(uid)) = (relist.as_mut(), pod.uid()) {
                        seen.insert(uid);
                    }
                    on_pod(&ctx, pod, &token, &mut workers, &mut finished, &mut binding, &mut tasks);
                }
                Some(Ok(Event::InitDone)) => {
                    if let Some(seen) = relist.take() {
                        // Pods deleted while the watch was down.
                        for (uid, tx) in &workers {
                            if !seen.contains(uid) {
                                tx.send_replace(None);
                            }
                        }
                        finished.retain(|uid| seen.contains(uid));
                        binding.retain(|uid| seen.contains(uid));
                    }
                    if let Some(tx) = listed.take() {
                        let _ = tx.send(Ok(()));
                    }
                }
                Some(Ok(Event::Apply(pod))) => {
                    on_pod(&ctx, pod, &token, &mut workers, &mut finished, &mut binding, &mut tasks);
                }
                Some(Ok(Event::Delete(pod))) => {
                    let uid = pod.uid().unwrap_or_default();
                    if let Some(tx) = workers.get(&uid) {
                        tx.send_replace(None);
                    }
                    finished.remove(&uid);
                    binding.remove(&uid);
                }
            }
        }
    }
    // Shutdown: the workers see the cancelled token and stop their pods.
    token.cancel();
    while tasks.join_next().await.is_some() {}
}

fn on_pod(
    ctx: &Arc<Ctx>,
    pod: Pod,
    token: &CancellationToken,
    workers: &mut HashMap<String, watch::Sender<Option<Pod>>>,
    finished: &mut HashSet<String>,
    binding: &mut HashSet<String>,
    tasks: &mut JoinSet<String>,
) {
    let Some(uid) = pod.uid() else {
        return;
    };
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    match node.as_deref() {
        None | Some("") => {
            if wants_binding(&pod) && binding.insert(uid) {
                tokio::spawn(bind(ctx.client.clone(), pod, ctx.node_name.clone()));
            }
        }
        Some(n) if n == ctx.node_name => {
            binding.remove(&uid);
            // A pod whose worker ended is taken up again once it is being deleted: like the
            // kubelet, the node makes the final delete of a pod that ended (it may have been
            // deleted just as its containers exited, after the worker last looked).
            if pod.metadata.deletion_timestamp.is_some() && finished.contains(&uid) {
                finished.remove(&uid);
            }
            if let Some(tx) = workers.get(&uid) {
                tx.send_replace(Some(pod));
            } else if !finished.contains(&uid) {
                let (tx, rx) = watch::channel(Some(pod.clone()));
                workers.insert(uid.clone(), tx);
                let (ctx, token) = (ctx.clone(), token.child_token());
                tasks.spawn(async move {
                    worker::run_pod(ctx, pod, rx, token).await;
                    uid
                });
            }
        }
        Some(_) => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_unbound_live_pods_of_the_default_scheduler_are_bound() {
        let pod = |v: serde_json::Value| -> Pod { serde_json::from_value(v).unwrap() };
        let cases = [
            (
                json!({ "metadata": { "name": "a" }, "spec": { "containers": [] } }),
                true,
            ),
            (
                json!({ "metadata": { "name": "a" }, "spec": { "containers": [], "schedulerName": "default-scheduler" } }),
                true,
            ),
            (
                json!({ "metadata": { "name": "a" }, "spec": { "containers": [], "nodeName": "n" } }),
                false,
            ),
            (
                json!({ "metadata": { "name": "a" }, "spec": { "containers": [], "schedulerName": "other" } }),
                false,
            ),
            (
                json!({ "metadata": { "name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z" }, "spec": { "containers": [] } }),
                false,
            ),
            (
                json!({ "metadata": { "name": "a" }, "spec": { "containers": [] }, "status": { "phase": "Failed" } }),
                false,
            ),
        ];
        for (p, want) in cases {
            assert_eq!(wants_binding(&pod(p.clone())), want, "{p}");
        }
    }
}
