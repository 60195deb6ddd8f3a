//! Helpers shared by the demo fleet's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

/// A JSON-RPC POST with `A2A-Version: 1.0`; returns the HTTP status and the JSON body.
pub async fn rpc(client: &reqwest::Client, url: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let resp = client
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("a JSON body"))
}

/// The `data:` payloads of an SSE body, one JSON value per event.
pub fn sse_events(body: &str) -> Vec<(Option<String>, Value)> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event:") {
                    event = Some(name.trim().to_owned());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            (!data.is_empty()).then(|| {
                (
                    event,
                    serde_json::from_str(&data).expect("event data is JSON"),
                )
            })
        })
        .collect()
}

/// A user message with one text part.
pub fn user_message(text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A plain client: no proxy, no pooling surprises.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}
