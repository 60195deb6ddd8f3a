//! Model providers through the network guard: real sockets on loopback, names resolved by a
//! resolver the test controls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::model::{ChatRequest, Message};
use crate::net::{AllowRule, StaticResolver};
use crate::secrets::LocalSecrets;
use orrery_crds::common::SecretKeyRef;
use orrery_crds::registry::{ApiKeySource, EndpointLimits, ModelScript};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

fn entry(provider: ProviderKind, base_url: Option<&str>) -> ModelEntry {
    ModelEntry {
        base_url: base_url.map(str::to_owned),
        api_key: Some(ApiKeySource {
            secret_key_ref: SecretKeyRef {
                name: "keys".into(),
                key: "model".into(),
            },
        }),
        ..ModelEntry::new(provider, "m")
    }
}

fn models(network: GuardPolicy, resolver: StaticResolver) -> GuardedModels {
    let secrets = LocalSecrets::new(
        None,
        Arc::new(|name| (name == "ORRERY_SECRET_KEYS_MODEL").then(|| "sk-test".to_owned())),
    );
    GuardedModels::new(network, Arc::new(secrets))
        .with_resolver(Arc::new(resolver))
        .with_retry(RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        })
}

/// An OpenAI-compatible stub on 127.0.0.1 that counts the requests it gets.
async fn stub_openai() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                axum::Json(serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": "hello from the stub"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 4}
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, hits)
}

fn request() -> ChatRequest {
    ChatRequest {
        node_id: "n".into(),
        model: "m".into(),
        system: None,
        messages: vec![Message::User { text: "hi".into() }],
        tools: vec![],
        labels: None,
        max_output_tokens: None,
    }
}

#[tokio::test]
async fn a_loopback_model_endpoint_is_reached_through_its_guarded_client() {
    let (addr, hits) = stub_openai().await;
    let base = format!("http://{addr}/v1");
    let provider = models(GuardPolicy::default(), StaticResolver::new())
        .build("local", &entry(ProviderKind::OpenAi, Some(&base)))
        .unwrap();
    let reply = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("hello from the stub"));
    assert_eq!(reply.usage.total(), 7);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn every_address_of_the_endpoint_name_is_checked_at_connect() {
    // `localhost` resolving to loopback *and* a private address: one refused address refuses
    // the name, so nothing is sent, not even to the loopback address (rule 5.24).
    let (addr, hits) = stub_openai().await;
    let base = format!("http://localhost:{}/v1", addr.port());
    let resolver = StaticResolver::new().with(
        "localhost",
        &[
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5)),
        ],
    );
    let provider = models(GuardPolicy::default(), resolver)
        .build("local", &entry(ProviderKind::OpenAi, Some(&base)))
        .unwrap();
    let err = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached the stub");

    // The same name resolving to loopback only is a loopback endpoint and is reached.
    let resolver = StaticResolver::new().with("localhost", &[IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    let provider = models(GuardPolicy::default(), resolver)
        .build("local", &entry(ProviderKind::OpenAi, Some(&base)))
        .unwrap();
    provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[test]
fn endpoints_the_guard_refuses_stop_the_build_with_the_reason() {
    let allow_ten = GuardPolicy {
        private_allow: vec![AllowRule::parse("10.0.0.0/8").unwrap()],
        ..GuardPolicy::default()
    };
    // (provider, baseUrl, privateNetwork, deployment policy, accepted?)
    let cases: [(ProviderKind, Option<&str>, bool, &GuardPolicy, bool); 10] = [
        (
            ProviderKind::OpenAi,
            None,
            false,
            &GuardPolicy::default(),
            true,
        ),
        (
            ProviderKind::Anthropic,
            None,
            false,
            &GuardPolicy::default(),
            true,
        ),
        (
            ProviderKind::Gemini,
            None,
            false,
            &GuardPolicy::default(),
            true,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://llm.example.com/v1"),
            false,
            &GuardPolicy::default(),
            true,
        ),
        (
            ProviderKind::OpenAi,
            Some("http://llm.example.com/v1"),
            false,
            &GuardPolicy::default(),
            false,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://169.254.169.254/v1"),
            true,
            &allow_ten,
            false,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://10.0.0.5/v1"),
            false,
            &allow_ten,
            false,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://10.0.0.5/v1"),
            true,
            &GuardPolicy::default(),
            false,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://10.0.0.5/v1"),
            true,
            &allow_ten,
            true,
        ),
        (
            ProviderKind::OpenAi,
            Some("https://[::ffff:169.254.169.254]/v1"),
            true,
            &allow_ten,
            false,
        ),
    ];
    for (provider, base, private_network, network, accepted) in cases {
        let mut model = entry(provider, base);
        model.private_network = private_network;
        let built = models(network.clone(), StaticResolver::new()).build("remote", &model);
        assert_eq!(
            built.is_ok(),
            accepted,
            "{provider:?} {base:?} private={private_network}"
        );
        if let Err(e) = built {
            let text = e.to_string();
            assert!(
                text.contains("registry entry remote") && text.contains("network guard"),
                "{text}"
            );
        }
    }
}

#[test]
fn a_scripted_entry_needs_a_script_and_no_endpoint() {
    let factory = models(GuardPolicy::default(), StaticResolver::new());
    let mut scripted = entry(ProviderKind::Scripted, None);
    scripted.api_key = None;
    let err = factory.build("s", &scripted).err().unwrap().to_string();
    assert!(err.contains("spec.model.script"), "{err}");
    scripted.script = Some(ModelScript::default());
    assert!(factory.build("s", &scripted).is_ok());
}

#[test]
fn the_guards_timeouts_follow_the_entrys_timeout_and_its_network_flags_the_entry() {
    let factory = models(GuardPolicy::default(), StaticResolver::new());
    let mut model = entry(ProviderKind::OpenAi, Some("http://127.0.0.1:9/v1"));
    let policy = factory.policy_for("local", &model).unwrap();
    assert!(policy.loopback && !policy.private_network);
    assert_eq!(policy.limits.request_timeout, Some(DEFAULT_TIMEOUT));
    model.limits = Some(EndpointLimits {
        timeout_seconds: Some(300),
        max_reply_bytes: None,
        max_card_bytes: None,
    });
    model.base_url = Some("https://10.1.2.3/v1".into());
    model.private_network = true;
    let network = GuardPolicy {
        private_allow: vec![AllowRule::parse("10.1.2.3").unwrap()],
        ..GuardPolicy::default()
    };
    let policy = models(network, StaticResolver::new())
        .policy_for("local", &model)
        .unwrap();
    assert!(!policy.loopback && policy.private_network);
    assert_eq!(
        policy.limits.request_timeout,
        Some(Duration::from_secs(300))
    );
    assert_eq!(policy.limits.read_timeout, Some(Duration::from_secs(300)));
}
