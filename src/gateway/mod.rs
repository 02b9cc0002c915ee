//! The batch gateway's decisions, as data: which API a call is, what its
//! answer says it used — whole or streamed as server-sent events — and the
//! progress line that records it. No I/O: the gateway (an adapter) feeds the
//! request's and the answer's bytes through here as they pass.
//!
//! **What is counted.** The usage the endpoint itself reports:
//!
//! | API | answer | input | cached | output |
//! |---|---|---|---|---|
//! | OpenAI chat completions, completions (and vLLM's OpenAI server) | `usage` | `prompt_tokens` − cached | `prompt_tokens_details.cached_tokens` | `completion_tokens` (reasoning included) |
//! | OpenAI responses | `usage` (streamed: `response.completed`'s `response.usage`) | `input_tokens` − cached | `input_tokens_details.cached_tokens` | `output_tokens` |
//! | Anthropic messages | `usage` (streamed: `message_start`, then each `message_delta`) | `input_tokens` + `cache_creation_input_tokens` | `cache_read_input_tokens` | `output_tokens` |
//!
//! Anthropic's cache writes are counted as input (they cost at least that).
//!
//! **A stream that would end without usage.** An OpenAI-style streamed
//! request that did not ask for usage (`stream_options.include_usage`) is
//! sent on asking for it ([`prepare`]); the usage-only chunk the endpoint
//! then adds is taken out of what the client receives ([`StreamTap`]), so
//! the client gets exactly what it asked for. A stream that ends with no
//! usage still (an endpoint that ignores the option, a dropped connection)
//! is recorded as a call with no tokens (`"usage": "missing"`), never
//! dropped: the call happened, and its silence is a finding.

use serde_json::Value;

pub mod calls;
pub mod limiter;
pub mod purse;

/// Which API a call is, from its path (after the endpoint's base URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `…/chat/completions`
    ChatCompletions,
    /// `…/completions`
    Completions,
    /// `…/responses`
    Responses,
    /// `…/messages` (Anthropic)
    Messages,
    /// Anything else (`/models`, embeddings, …): passed through, not counted.
    Other,
}

impl Api {
    pub fn of_path(path: &str) -> Self {
        let path = path.split('?').next().unwrap_or("").trim_end_matches('/');
        if path.ends_with("/chat/completions") || path == "chat/completions" {
            Self::ChatCompletions
        } else if path.ends_with("/completions") || path == "completions" {
            Self::Completions
        } else if path.ends_with("/responses") || path == "responses" {
            Self::Responses
        } else if path.ends_with("/messages") || path == "messages" {
            Self::Messages
        } else {
            Self::Other
        }
    }

    /// Whether its calls are counted.
    pub fn counted(self) -> bool {
        self != Self::Other
    }

    fn openai_style(self) -> bool {
        matches!(self, Self::ChatCompletions | Self::Completions)
    }
}

/// What one call used, as its answer said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input not read from a cache.
    pub input: u64,
    pub cached: u64,
    pub output: u64,
}

/// A request as sent on: its body (changed only to ask for a stream's
/// usage) and what that change means for the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The body to send (the client's own when nothing was changed).
    pub body: Option<Vec<u8>>,
    /// Whether the answer is a stream.
    pub stream: bool,
    /// The gateway asked for the stream's usage: its usage-only chunk is
    /// not the client's and is taken out of what it receives.
    pub strip_usage_chunk: bool,
    /// The model the client asked for.
    pub model: Option<String>,
}

/// Reads a request body: whether it streams, its model, and for an
/// OpenAI-style stream that did not ask for usage, the body that does. A body
/// that is not a JSON object is sent as it is (the endpoint will say why).
pub fn prepare(api: Api, body: &[u8]) -> Prepared {
    let mut out = Prepared { body: None, stream: false, strip_usage_chunk: false, model: None };
    let Ok(Value::Object(mut req)) = serde_json::from_slice::<Value>(body) else { return out };
    out.model = req.get("model").and_then(Value::as_str).map(str::to_owned);
    out.stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if out.stream && api.openai_style() {
        let asked =
            req.get("stream_options").and_then(|o| o.get("include_usage")).and_then(Value::as_bool).unwrap_or(false);
        if !asked {
            let options = req.entry("stream_options").or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(o) = options {
                o.insert("include_usage".into(), Value::Bool(true));
                out.strip_usage_chunk = true;
                out.body = serde_json::to_vec(&Value::Object(req)).ok();
            }
        }
    }
    out
}

fn whole(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

/// The usage an answer's `usage` object says, by its API's names.
fn usage_of(api: Api, u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    Some(match api {
        Api::ChatCompletions | Api::Completions => {
            let cached = whole(u.pointer("/prompt_tokens_details/cached_tokens"));
            Usage {
                input: whole(u.get("prompt_tokens")).saturating_sub(cached),
                cached,
                output: whole(u.get("completion_tokens")),
            }
        }
        Api::Responses => {
            let cached = whole(u.pointer("/input_tokens_details/cached_tokens"));
            Usage {
                input: whole(u.get("input_tokens")).saturating_sub(cached),
                cached,
                output: whole(u.get("output_tokens")),
            }
        }
        Api::Messages => Usage {
            input: whole(u.get("input_tokens")) + whole(u.get("cache_creation_input_tokens")),
            cached: whole(u.get("cache_read_input_tokens")),
            output: whole(u.get("output_tokens")),
        },
        Api::Other => return None,
    })
}

/// A whole (not streamed) answer's usage and model.
pub fn answer_usage(api: Api, body: &[u8]) -> (Option<Usage>, Option<String>) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else { return (None, None) };
    let model = v.get("model").and_then(Value::as_str).map(str::to_owned);
    (v.get("usage").and_then(|u| usage_of(api, u)), model)
}

/// Follows a streamed answer (server-sent events) as its bytes pass: the
/// usage and model it reports, and — when the gateway asked for the usage —
/// the bytes to forward with the usage-only chunk taken out. Everything else
/// is forwarded as it came, at once: an event is held only until its end.
#[derive(Debug, Default)]
pub struct StreamTap {
    api: Option<Api>,
    strip_usage_chunk: bool,
    /// The event read so far (up to a blank line).
    pending: Vec<u8>,
    pub usage: Option<Usage>,
    pub model: Option<String>,
}

/// The most an event may hold before it is forwarded unread (an event that
/// large is no usage chunk).
const EVENT_MAX: usize = 1 << 20;

impl StreamTap {
    pub fn new(api: Api, strip_usage_chunk: bool) -> Self {
        Self { api: Some(api), strip_usage_chunk, ..Default::default() }
    }

    /// Takes the next bytes of the stream; returns what to forward now.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for &b in bytes {
            self.pending.push(b);
            let ended = self.pending.ends_with(b"\n\n") || self.pending.ends_with(b"\r\n\r\n");
            if ended || self.pending.len() > EVENT_MAX {
                let event = std::mem::take(&mut self.pending);
                if !(ended && self.read_event(&event)) {
                    out.extend_from_slice(&event);
                }
            }
        }
        out
    }

    /// What is left when the stream ends (an event without its blank line).
    pub fn finish(&mut self) -> Vec<u8> {
        let event = std::mem::take(&mut self.pending);
        if !event.is_empty() {
            self.read_event(&event);
        }
        event
    }

    /// Reads one whole event; whether it is to be kept from the client.
    fn read_event(&mut self, event: &[u8]) -> bool {
        let api = self.api.unwrap_or(Api::Other);
        let text = String::from_utf8_lossy(event);
        let mut name = None;
        let mut data = String::new();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        let Ok(v) = serde_json::from_str::<Value>(&data) else { return false };
        if self.model.is_none() {
            self.model = v
                .get("model")
                .or_else(|| v.pointer("/message/model"))
                .or_else(|| v.pointer("/response/model"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let kind = name.as_deref().or_else(|| v.get("type").and_then(Value::as_str));
        match api {
            Api::ChatCompletions | Api::Completions => {
                if let Some(u) = v.get("usage").filter(|u| u.is_object()).and_then(|u| usage_of(api, u)) {
                    self.usage = Some(u);
                    // The usage-only chunk the gateway asked for: no choices.
                    let no_choices = v.get("choices").and_then(Value::as_array).is_none_or(Vec::is_empty);
                    return self.strip_usage_chunk && no_choices;
                }
            }
            Api::Responses => {
                if kind == Some("response.completed") {
                    self.usage = v.pointer("/response/usage").and_then(|u| usage_of(api, u));
                }
            }
            Api::Messages => match kind {
                Some("message_start") => {
                    self.usage = v.pointer("/message/usage").and_then(|u| usage_of(api, u));
                }
                Some("message_delta") => {
                    // Its output count is the running total so far.
                    if let Some(out) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                        self.usage.get_or_insert_with(Usage::default).output = out;
                    }
                }
                _ => {}
            },
            Api::Other => {}
        }
        false
    }
}

/// One call as a line of the cell's `progress.jsonl` (the format
/// [`crate::live::spend::progress_line`] reads): its end, model, tokens by kind
/// and latency; a call whose answer said no usage is a line with none and
/// `"usage": "missing"`.
pub fn progress_line(
    ended: crate::basics::timefmt::Timestamp,
    model: Option<&str>,
    usage: Option<Usage>,
    latency_s: f64,
) -> String {
    let mut line = serde_json::Map::new();
    line.insert("ts".into(), Value::String(ended.to_rfc3339()));
    if let Some(m) = model {
        line.insert("model".into(), Value::String(m.to_owned()));
    }
    match usage {
        Some(u) => {
            line.insert("input_tokens".into(), u.input.into());
            line.insert("output_tokens".into(), u.output.into());
            line.insert("cached_tokens".into(), u.cached.into());
        }
        None => {
            line.insert("tokens".into(), 0.into());
            line.insert("usage".into(), Value::String("missing".into()));
        }
    }
    line.insert("latency_s".into(), serde_json::json!((latency_s * 1000.0).round() / 1000.0));
    line.insert("via".into(), Value::String("gateway".into()));
    format!("{}\n", Value::Object(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_comes_from_the_path() {
        assert_eq!(Api::of_path("/v1/chat/completions"), Api::ChatCompletions);
        assert_eq!(Api::of_path("/v1/completions?x=1"), Api::Completions);
        assert_eq!(Api::of_path("/v1/responses"), Api::Responses);
        assert_eq!(Api::of_path("/v1/messages"), Api::Messages);
        assert_eq!(Api::of_path("/v1/models"), Api::Other);
        assert!(!Api::Other.counted());
    }

    #[test]
    fn whole_answers_are_counted_by_each_apis_names() {
        let chat = br#"{"model":"gpt-4.1","usage":{"prompt_tokens":1200,"completion_tokens":310,"total_tokens":1510,"prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":100}}}"#;
        assert_eq!(
            answer_usage(Api::ChatCompletions, chat),
            (Some(Usage { input: 400, cached: 800, output: 310 }), Some("gpt-4.1".into()))
        );
        let responses = br#"{"model":"o4","usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":10},"output_tokens":7}}"#;
        assert_eq!(answer_usage(Api::Responses, responses).0, Some(Usage { input: 40, cached: 10, output: 7 }));
        let messages = br#"{"model":"claude","usage":{"input_tokens":20,"cache_creation_input_tokens":100,"cache_read_input_tokens":300,"output_tokens":9}}"#;
        assert_eq!(answer_usage(Api::Messages, messages).0, Some(Usage { input: 120, cached: 300, output: 9 }));
        assert_eq!(answer_usage(Api::ChatCompletions, b"{\"error\": \"no\"}"), (None, None));
        assert_eq!(answer_usage(Api::ChatCompletions, b"not json"), (None, None));
    }

    #[test]
    fn a_stream_that_did_not_ask_for_usage_is_sent_asking_and_the_client_gets_what_it_asked() {
        let p = prepare(Api::ChatCompletions, br#"{"model":"m","stream":true,"messages":[]}"#);
        assert!(p.stream && p.strip_usage_chunk);
        let sent: Value = serde_json::from_slice(p.body.as_deref().unwrap()).unwrap();
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert_eq!(sent["messages"], serde_json::json!([]));
        // Asked already, or not a stream, or another API: sent as it came.
        for (api, body) in [
            (Api::ChatCompletions, r#"{"stream":true,"stream_options":{"include_usage":true}}"#),
            (Api::ChatCompletions, r#"{"stream":false}"#),
            (Api::Messages, r#"{"stream":true}"#),
            (Api::ChatCompletions, "not json"),
        ] {
            let p = prepare(api, body.as_bytes());
            assert_eq!((p.body, p.strip_usage_chunk), (None, false), "{body}");
        }

        let chunk = |s: &str| format!("data: {s}\n\n");
        let stream = [
            chunk(r#"{"model":"m","choices":[{"delta":{"content":"Hi"}}]}"#),
            chunk(r#"{"model":"m","choices":[{"delta":{"content":"!"}}]}"#),
            chunk(r#"{"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2}}"#),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        // Fed in pieces that cut events anywhere: forwarded at once, all but the usage chunk.
        let mut tap = StreamTap::new(Api::ChatCompletions, true);
        let mut got = Vec::new();
        for piece in stream.as_bytes().chunks(7) {
            got.extend(tap.feed(piece));
        }
        got.extend(tap.finish());
        let expected =
            [&stream[..stream.find("data: {\"model\":\"m\",\"choices\":[],").unwrap()], "data: [DONE]\n\n"].concat();
        assert_eq!(String::from_utf8(got).unwrap(), expected);
        assert_eq!(tap.usage, Some(Usage { input: 12, cached: 0, output: 2 }));
        assert_eq!(tap.model.as_deref(), Some("m"));
        // A client that asked for usage gets the usage chunk too.
        let mut tap = StreamTap::new(Api::ChatCompletions, false);
        let mut got = tap.feed(stream.as_bytes());
        got.extend(tap.finish());
        assert_eq!(got, stream.as_bytes());
    }

    #[test]
    fn streamed_responses_and_messages_are_counted() {
        let responses = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n\
             event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"o4\",\"usage\":{\"input_tokens\":30,\"output_tokens\":4}}}\n\n";
        let mut tap = StreamTap::new(Api::Responses, false);
        assert_eq!(tap.feed(responses.as_bytes()), responses.as_bytes());
        assert_eq!(tap.usage, Some(Usage { input: 30, cached: 0, output: 4 }));
        let messages = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude\",\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let mut tap = StreamTap::new(Api::Messages, false);
        assert_eq!(tap.feed(messages.as_bytes()), messages.as_bytes());
        assert_eq!(tap.usage, Some(Usage { input: 25, cached: 5, output: 15 }));
        assert_eq!(tap.model.as_deref(), Some("claude"));
    }

    #[test]
    fn a_call_is_one_progress_line_the_spend_reader_counts() {
        let at = crate::basics::timefmt::Timestamp::parse_rfc3339("2026-12-06T10:00:03Z").unwrap();
        let line = progress_line(at, Some("m"), Some(Usage { input: 400, cached: 800, output: 310 }), 1.23456);
        let call = crate::live::spend::progress_line(line.trim_end().as_bytes()).unwrap();
        assert_eq!((call.tokens.input, call.tokens.cached, call.tokens.output), (400, 800, 310));
        assert_eq!((call.model.as_deref(), call.latency_s, call.at), (Some("m"), Some(1.235), Some(at)));
        // No usage: a call all the same, with none, and said.
        let missing = progress_line(at, None, None, 0.5);
        assert!(missing.contains("\"usage\":\"missing\""), "{missing}");
        assert_eq!(crate::live::spend::progress_line(missing.trim_end().as_bytes()).unwrap().tokens.total(), 0);
    }
}
