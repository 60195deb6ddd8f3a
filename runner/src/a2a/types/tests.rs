//! Round trips against wire samples as the official A2A SDKs send them (A2A 1.0, ProtoJSON of
//! `lf.a2a.v1`): each sample is written out below, so the tests need nothing outside the crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use serde_json::{Value, json};

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(sample: Value) -> T {
    let typed: T = serde_json::from_value(sample.clone()).expect("sample parses");
    let back = serde_json::to_value(&typed).expect("serialises");
    assert_eq!(back, sample, "round trip changed the JSON");
    typed
}

#[test]
fn the_live_sample_card_round_trips_unchanged() {
    let card: AgentCard = round_trip(json!({
        "name": "Hello World Agent", "description": "Just a hello world agent",
        "supportedInterfaces": [{"url": "http://127.0.0.1:19999", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "version": "0.0.1", "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo_bot", "name": "Echo Bot", "description": "hello", "tags": ["a2a"], "examples": ["hi"],
                    "inputModes": ["text/plain"], "outputModes": ["text/plain"]}]
    }));
    assert!(card.missing_required_fields().is_empty());
    let iface = card
        .preferred_interface(BINDING_JSONRPC)
        .expect("a JSON-RPC interface");
    assert_eq!(iface.url, "http://127.0.0.1:19999");
    assert_eq!(
        card.skill("echo_bot").map(|s| s.tags.clone()),
        Some(vec!["a2a".to_owned()])
    );
}

#[test]
fn security_schemes_and_requirements_use_the_one_of_wrapper_and_string_lists() {
    let card: AgentCard = round_trip(json!({
        "name": "n", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": "https://a.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"}],
        "capabilities": {},
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}},
            "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://a.example/token", "scopes": {"read": "read things"}}}}},
            "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://a.example/.well-known/openid-configuration"}},
            "mtls": {"mtlsSecurityScheme": {}}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}, {"schemes": {"oauth": {"list": ["read"]}}}],
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "x", "tags": ["t"]}]
    }));
    assert!(
        matches!(card.security_schemes.get("bearer"), Some(SecurityScheme::HttpAuth(h)) if h.scheme == "Bearer")
    );
    assert_eq!(
        card.security_requirements[1].schemes["oauth"].list,
        vec!["read"]
    );
}

#[test]
fn a_security_scheme_with_two_keys_is_refused() {
    let two = json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}, "mtlsSecurityScheme": {}});
    assert!(serde_json::from_value::<SecurityScheme>(two).is_err());
}

#[test]
fn missing_required_card_fields_are_reported_by_path() {
    let card: AgentCard = serde_json::from_value(json!({
        "name": "n", "supportedInterfaces": [{"url": "http://x"}], "skills": [{"id": "s"}]
    }))
    .unwrap();
    let missing = card.missing_required_fields();
    for path in [
        "description",
        "version",
        "supportedInterfaces[0].protocolBinding",
        "supportedInterfaces[0].protocolVersion",
        "defaultInputModes",
        "skills[0].name",
        "skills[0].tags",
    ] {
        assert!(
            missing.iter().any(|m| m == path),
            "{path} not reported in {missing:?}"
        );
    }
    assert!(!missing.iter().any(|m| m == "name"));
}

#[test]
fn the_live_send_message_request_round_trips() {
    let req: JsonRpcRequest<SendMessageRequest> = round_trip(json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    }));
    assert_eq!(req.id, Some(RequestId::Number(1)));
    assert_eq!(
        A2aMethod::from_name(&req.method),
        Some(A2aMethod::SendMessage)
    );
    let params = req.params.unwrap();
    assert_eq!(params.message.role, Role::User);
    assert_eq!(params.message.joined_text(), "hi");
}

#[test]
fn the_live_send_message_result_round_trips() {
    let resp: JsonRpcResponse<SendMessageResponse> = round_trip(json!({
        "result": {"task": {"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED",
                       "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "Request is completed!"}]},
                       "timestamp": "2026-11-29T21:57:04.046885Z"},
            "artifacts": [{"artifactId": "a1", "parts": [{"text": "Hello, World! (hi)", "mediaType": "text/plain"}]}],
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c1", "taskId": "t1"}]}},
        "id": 1, "jsonrpc": "2.0"
    }));
    let SendMessageResponse::Task(task) = resp.into_result().unwrap() else {
        panic!("expected a task")
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(task.status.state.is_terminal());
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("Hello, World! (hi)")
    );
    assert_eq!(
        task.artifacts[0].parts[0].media_type.as_deref(),
        Some("text/plain")
    );
}

#[test]
fn the_live_version_error_is_reproduced_exactly() {
    let live = json!({"error": {"code": -32009,
        "message": "A2A version '0.3' is not supported by this handler. Expected version '1.0'.",
        "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "VERSION_NOT_SUPPORTED",
                  "domain": "a2a-protocol.org", "metadata": {}}]},
        "id": 1, "jsonrpc": "2.0"});
    let ours: JsonRpcResponse<Value> = JsonRpcResponse::failure(
        Some(RequestId::Number(1)),
        JsonRpcError::version_not_supported(IMPLIED_LEGACY_VERSION),
    );
    assert_eq!(serde_json::to_value(&ours).unwrap(), live);
    let parsed: JsonRpcResponse<Value> = serde_json::from_value(live).unwrap();
    let err = parsed.into_result().unwrap_err();
    assert_eq!(err.a2a_code(), Some(A2aErrorCode::VersionNotSupported));
    assert_eq!(err.reason(), Some("VERSION_NOT_SUPPORTED"));
}

#[test]
fn every_error_code_maps_to_its_number_and_reason() {
    let table = [
        (A2aErrorCode::ParseError, -32700, None),
        (
            A2aErrorCode::InvalidRequest,
            -32600,
            Some("INVALID_REQUEST"),
        ),
        (
            A2aErrorCode::MethodNotFound,
            -32601,
            Some("METHOD_NOT_FOUND"),
        ),
        (A2aErrorCode::InvalidParams, -32602, Some("INVALID_PARAMS")),
        (A2aErrorCode::InternalError, -32603, Some("INTERNAL_ERROR")),
        (A2aErrorCode::TaskNotFound, -32001, Some("TASK_NOT_FOUND")),
        (
            A2aErrorCode::TaskNotCancelable,
            -32002,
            Some("TASK_NOT_CANCELABLE"),
        ),
        (
            A2aErrorCode::PushNotificationNotSupported,
            -32003,
            Some("PUSH_NOTIFICATION_NOT_SUPPORTED"),
        ),
        (
            A2aErrorCode::UnsupportedOperation,
            -32004,
            Some("UNSUPPORTED_OPERATION"),
        ),
        (
            A2aErrorCode::ContentTypeNotSupported,
            -32005,
            Some("CONTENT_TYPE_NOT_SUPPORTED"),
        ),
        (
            A2aErrorCode::InvalidAgentResponse,
            -32006,
            Some("INVALID_AGENT_RESPONSE"),
        ),
        (
            A2aErrorCode::ExtendedAgentCardNotConfigured,
            -32007,
            Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        ),
        (
            A2aErrorCode::ExtensionSupportRequired,
            -32008,
            Some("EXTENSION_SUPPORT_REQUIRED"),
        ),
        (
            A2aErrorCode::VersionNotSupported,
            -32009,
            Some("VERSION_NOT_SUPPORTED"),
        ),
    ];
    for (code, number, reason) in table {
        assert_eq!(code.code(), number);
        assert_eq!(code.reason(), reason);
        assert_eq!(A2aErrorCode::from_code(number), Some(code));
        assert_eq!(JsonRpcError::new(code, "x").reason(), reason);
    }
}

#[test]
fn field_violations_collect_in_one_bad_request_detail() {
    let err = JsonRpcError::new(A2aErrorCode::InvalidParams, "bad")
        .with_field_violation("message.messageId", "Field is required")
        .with_field_violation("message.parts", "Field is required");
    let data = err.data.unwrap();
    assert_eq!(data[0]["reason"], "INVALID_PARAMS");
    assert_eq!(data[1]["@type"], BAD_REQUEST_TYPE);
    assert_eq!(data[1]["fieldViolations"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_live_stream_events_round_trip() {
    let events = [
        json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "lastChunk": true}}),
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-29T21:57:04Z"}}}),
    ];
    let parsed: Vec<StreamResponse> = events.into_iter().map(round_trip).collect();
    assert!(matches!(&parsed[2], StreamResponse::ArtifactUpdate(a) if a.last_chunk && !a.append));
    assert!(
        matches!(&parsed[3], StreamResponse::StatusUpdate(s) if s.status.state == TaskState::Completed)
    );
}

#[test]
fn every_task_state_uses_its_1_0_name_and_lowercase_0_3_names_are_refused() {
    let table = [
        (
            TaskState::Unspecified,
            "TASK_STATE_UNSPECIFIED",
            false,
            false,
        ),
        (TaskState::Submitted, "TASK_STATE_SUBMITTED", false, false),
        (TaskState::Working, "TASK_STATE_WORKING", false, false),
        (TaskState::Completed, "TASK_STATE_COMPLETED", true, false),
        (TaskState::Failed, "TASK_STATE_FAILED", true, false),
        (TaskState::Canceled, "TASK_STATE_CANCELED", true, false),
        (
            TaskState::InputRequired,
            "TASK_STATE_INPUT_REQUIRED",
            false,
            true,
        ),
        (TaskState::Rejected, "TASK_STATE_REJECTED", true, false),
        (
            TaskState::AuthRequired,
            "TASK_STATE_AUTH_REQUIRED",
            false,
            true,
        ),
    ];
    for (state, name, terminal, interrupted) in table {
        assert_eq!(serde_json::to_value(state).unwrap(), json!(name));
        assert_eq!(state.as_str(), name);
        assert_eq!(state.is_terminal(), terminal, "{name}");
        assert_eq!(state.is_interrupted(), interrupted, "{name}");
    }
    for old in ["completed", "input-required", "unknown"] {
        assert!(
            serde_json::from_value::<TaskState>(json!(old)).is_err(),
            "{old}"
        );
    }
}

#[test]
fn a_0_3_role_is_refused() {
    let msg = json!({"messageId": "m", "role": "user", "parts": [{"text": "hi"}]});
    assert!(serde_json::from_value::<Message>(msg).is_err());
}

#[test]
fn parts_are_a_flat_one_of_without_kind() {
    let ok = [
        json!({"text": "hi", "mediaType": "text/plain"}),
        json!({"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"}),
        json!({"url": "https://a.example/f.pdf", "mediaType": "application/pdf"}),
        json!({"data": {"a": 1.0}, "metadata": {"k": "v"}}),
        json!({"data": null}),
    ];
    for sample in ok {
        round_trip::<Part>(sample);
    }
    let kinds: Vec<&str> = ["text", "raw", "url", "data"].to_vec();
    let parsed: Vec<String> = [
        json!({"text": ""}),
        json!({"raw": ""}),
        json!({"url": ""}),
        json!({"data": 1}),
    ]
    .into_iter()
    .map(|v| serde_json::from_value::<Part>(v).unwrap().kind().to_owned())
    .collect();
    assert_eq!(parsed, kinds);
    let bad = [
        json!({"text": "a", "data": {}}),
        json!({"mediaType": "text/plain"}),
        json!({"text": 5}),
        json!({"text": "a", "metadata": "x"}),
    ];
    for sample in bad {
        assert!(
            serde_json::from_value::<Part>(sample.clone()).is_err(),
            "{sample}"
        );
    }
}

#[test]
fn request_ids_are_strings_or_integers_only() {
    let parse = |id: Value| {
        serde_json::from_value::<JsonRpcRequest>(
            json!({"jsonrpc": "2.0", "id": id, "method": "GetTask"}),
        )
        .map(|r| r.id)
    };
    assert_eq!(
        parse(json!("a")).unwrap(),
        Some(RequestId::String("a".into()))
    );
    assert_eq!(parse(json!(7)).unwrap(), Some(RequestId::Number(7)));
    assert_eq!(parse(Value::Null).unwrap(), None);
    assert!(parse(json!(true)).is_err());
    assert!(parse(json!(1.5)).is_err());
}

#[test]
fn method_names_are_the_1_0_ones() {
    for method in A2aMethod::ALL {
        assert_eq!(A2aMethod::from_name(method.as_str()), Some(method));
    }
    for old in [
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
    ] {
        assert_eq!(A2aMethod::from_name(old), None, "{old}");
    }
    assert!(A2aMethod::SendStreamingMessage.is_streaming());
    assert!(!A2aMethod::SendMessage.is_streaming());
}

#[test]
fn only_major_version_1_is_supported() {
    for (version, ok) in [
        ("1.0", true),
        ("1.1", true),
        ("1", true),
        (" 1.0 ", true),
        ("0.3", false),
        ("", false),
        ("2.0", false),
        ("10.0", false),
    ] {
        assert_eq!(version_is_supported(version), ok, "{version:?}");
    }
}

#[test]
fn a_list_tasks_response_always_carries_its_paging_fields() {
    let resp = ListTasksResponse::default();
    assert_eq!(
        serde_json::to_value(resp).unwrap(),
        json!({"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0})
    );
}
