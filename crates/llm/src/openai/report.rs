//! What `codeloop models` prints: the server's software, the models it
//! lists, its window and slots, and the structured-reply shape it takes,
//! learned with one tiny call.

use tokio::sync::mpsc;

use super::{DISCOVERY_TIMEOUT, OpenAiClient, list_models};
use crate::{ChatRequest, ReplySchema, ServerReport};

impl OpenAiClient {
    pub(super) async fn report(&self) -> ServerReport {
        let facts = self.server_facts().await.clone();
        let models = list_models(
            &self.options.base_url,
            self.options.api_key.as_ref(),
            DISCOVERY_TIMEOUT,
        )
        .await
        .unwrap_or_default();
        let probe = ChatRequest {
            tag: "probe".into(),
            messages: vec![crate::ChatMessage::user(
                "Reply with the JSON object {\"ok\": true} and nothing else.",
            )],
            temperature: Some(0.0),
            max_tokens: Some(16),
            prefill: None,
            schema: Some(ReplySchema {
                name: "probe".into(),
                schema: serde_json::json!({
                    "type": "object",
                    "properties": { "ok": { "type": "boolean" } },
                    "required": ["ok"]
                }),
            }),
        };
        let (tx, _rx) = mpsc::channel(64);
        let structured = self
            .chat(probe, tx)
            .await
            .map(|reply| reply.structured.unwrap_or(self.quirks.structured()));
        ServerReport {
            server: facts.server.name().to_string(),
            models,
            window: self.known_window(),
            slots: self.max_parallel().await,
            structured,
        }
    }
}
