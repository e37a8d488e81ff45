//! The OpenAI-compatible streaming client (`/v1/chat/completions`, SSE).
