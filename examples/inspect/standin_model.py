#!/usr/bin/env python3
"""A stand-in for an OpenAI-compatible model server, to try the example
without a GPU (no model server can run on runboard's test machines). It is
deterministic: it answers the suite's questions by rule, and a model whose name
contains "hasty" answers some of them wrong:

- "What is A + B?": the sum; hasty adds one to an odd sum.
- "Reverse the word: W": W backwards; hasty leaves words longer than five letters as they are.

It speaks the Responses API (what Inspect's OpenAI provider uses), chat
completions (streamed too, with a usage chunk only when the request asks for
it, as OpenAI does) and Anthropic's messages API (streamed too; it reports 2
cache-write and 3 cache-read input tokens besides the prompt's), lists its
models at GET /v1/models, and reports token usage.

    python3 standin_model.py --port 8791 [--delay 0.5] [--log requests.jsonl]
        [--overload-every N --retry-after S] [--slow WORD=SECONDS]

--port 0 picks a free port; the first line on stdout names the base URL.
--log appends one JSON line per model request: {"model", "prompt",
"concurrent" (requests being answered at once, this one included)}.
--overload-every N answers every Nth model request 429 (as a rate-limited
API does), with Retry-After: S (default 1).
--slow WORD=SECONDS answers a request whose prompt holds WORD that much later.
--tls CERT KEY serves HTTPS with that certificate chain and key (PEM).
"""
import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(model, prompt):
    hasty = "hasty" in model
    m = re.search(r"What is (\d+) \+ (\d+)\?", prompt)
    if m:
        s = int(m.group(1)) + int(m.group(2))
        return f"ANSWER: {s + 1 if hasty and s % 2 else s}"
    m = re.search(r"Reverse the word: (\w+)", prompt)
    if m:
        w = m.group(1)
        return f"ANSWER: {w if hasty and len(w) > 5 else w[::-1]}"
    return "ANSWER: I do not know"


def text_of(value):
    """Every string inside a request's input or messages, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(text_of(v) for k, v in value.items() if k in ("content", "text", "input"))
    return ""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stream(self, model, text, used_in, used_out, include_usage):
        """A streamed chat completion, as OpenAI sends one: a chunk per word,
        then (only when asked: stream_options.include_usage) a usage chunk
        with no choices, then [DONE]."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        base = {"id": "chat-standin", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        words = text.split(" ")
        for i, w in enumerate(words):
            delta = {"content": w if i == 0 else " " + w}
            if i == 0:
                delta["role"] = "assistant"
            last = i == len(words) - 1
            chunk = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": "stop" if last else None}])
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        if include_usage:
            usage = {"prompt_tokens": used_in, "completion_tokens": used_out, "total_tokens": used_in + used_out}
            self.wfile.write(f"data: {json.dumps(dict(base, choices=[], usage=usage))}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def events(self, events):
        """Server-sent events, each named, as Anthropic streams them."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def messages(self, body, model, text, used_in, used_out):
        """Anthropic's messages API, whole or streamed."""
        usage = {"input_tokens": used_in, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3}
        message = {"id": "msg_standin", "type": "message", "role": "assistant", "model": model,
                   "stop_sequence": None}
        if not body.get("stream"):
            return self.send(200, dict(message, content=[{"type": "text", "text": text}], stop_reason="end_turn",
                                       usage=dict(usage, output_tokens=used_out)))
        events = [("message_start", {"type": "message_start", "message": dict(
            message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}})]
        for i, w in enumerate(text.split(" ")):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": w if i == 0 else " " + w}}))
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": used_out}}),
                   ("message_stop", {"type": "message_stop"})]
        return self.events(events)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self.send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in ARGS.models]})
        self.send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.send(400, {"error": {"message": "the body is not JSON"}})
        model = str(body.get("model", ""))
        prompt = text_of(body.get("input", body.get("messages", "")))
        if isinstance(body.get("system"), str):
            prompt = body["system"] + "\n" + prompt
        with LOCK:
            COUNT[0] += 1
            overload = ARGS.overload_every and COUNT[0] % ARGS.overload_every == 0
        if overload:
            body = json.dumps({"error": {"message": "rate limited (stand-in)", "type": "rate_limit_error"}}).encode()
            self.send_response(429)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", str(ARGS.retry_after))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with LOCK:
            BUSY[0] += 1
            busy = BUSY[0]
        try:
            for word, seconds in ARGS.slow:
                if word in prompt:
                    time.sleep(seconds)
            if LOG:
                with LOCK:
                    LOG.write(json.dumps({"model": model, "prompt": prompt, "concurrent": busy}) + "\n")
                    LOG.flush()
            time.sleep(ARGS.delay)
        finally:
            with LOCK:
                BUSY[0] -= 1
        text = answer(model, prompt)
        used_in, used_out = len(prompt.split()) + 10, len(text.split())
        if self.path.endswith("/responses"):
            return self.send(200, {
                "id": "resp-standin", "object": "response", "created_at": int(time.time()), "model": model,
                "status": "completed",
                "output": [{"type": "message", "id": "msg-standin", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": used_in, "output_tokens": used_out, "total_tokens": used_in + used_out},
            })
        if self.path.endswith("/messages"):
            return self.messages(body, model, text, used_in, used_out)
        if self.path.endswith("/chat/completions") and body.get("stream"):
            return self.stream(model, text, used_in, used_out, (body.get("stream_options") or {}).get("include_usage"))
        if self.path.endswith("/chat/completions"):
            return self.send(200, {
                "id": "chat-standin", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": used_in, "completion_tokens": used_out, "total_tokens": used_in + used_out},
            })
        self.send(404, {"error": {"message": "not found"}})


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--port", type=int, default=8791)
parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
parser.add_argument("--models", type=lambda s: s.split(","), default=["standin-careful", "standin-hasty"])
parser.add_argument("--log", help="append each request here, one JSON line")
parser.add_argument("--overload-every", type=int, default=0, help="answer every Nth model request 429")
parser.add_argument("--retry-after", default="1", help="the 429's Retry-After, in seconds")
parser.add_argument("--slow", action="append", default=[],
                    type=lambda s: (s.split("=")[0], float(s.split("=")[1])), help="WORD=SECONDS")
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS")
ARGS = parser.parse_args()
COUNT = [0]
BUSY = [0]
LOG = open(ARGS.log, "a") if ARGS.log else None
LOCK = threading.Lock()
class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that went away mid-answer (a stopped cell) is not an error here.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", ARGS.port), Handler)
scheme = "http"
if ARGS.tls:
    import ssl
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(*ARGS.tls)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https"
print(f"stand-in model at {scheme}://127.0.0.1:{server.server_address[1]}/v1", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
