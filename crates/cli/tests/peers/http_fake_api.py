"""A fake LLM API for the `calltape http` end-to-end tests (loopback only, no network).

Routes: OpenAI chat completions (JSON, and SSE ending with `data: [DONE]`), the Responses API (a
stream, or one JSON object that echoes the request's `prompt_cache_key` and `metadata`),
Anthropic messages SSE (named events, a ping, an error event mid-stream when the prompt says
"overload"), binary audio, a gzip-encoded model list, and /v1/cards, which answers the prompt as an
object key. Every accepted connection is appended to
the --log file so a test can prove replay never reached this server.

Every answer carries the header set the real API sends (copied from OpenAI's and Anthropic's
answers), with what varies per request varying: a new request id, a new Cloudflare ray, rate-limit
counters that count down, reset times and processing times.

Usage: python http_fake_api.py --log FILE [--answer PREFIX]   (prints the port on stdout, then serves
until killed; a chat completion answers PREFIX and the question, "echo: " by default)
"""

import argparse
import gzip
import itertools
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = None
ANSWER = "echo: "
_COUNT = itertools.count(1)
_COUNT_LOCK = threading.Lock()


def _iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def api_headers(handler):
    """The headers OpenAI (or, under /v1/messages, Anthropic) sends with an answer, as one request
    among many: the values that vary per request are new each time."""
    with _COUNT_LOCK:
        n = next(_COUNT)
    now = time.time()
    ray = "%016x-SJC" % random.getrandbits(64)
    if handler.path.startswith("/v1/messages"):
        headers = [
            ("anthropic-ratelimit-input-tokens-limit", "400000"),
            ("anthropic-ratelimit-input-tokens-remaining", str(400000 - 13 * n)),
            ("anthropic-ratelimit-input-tokens-reset", _iso(now + 1)),
            ("anthropic-ratelimit-output-tokens-limit", "80000"),
            ("anthropic-ratelimit-output-tokens-remaining", str(80000 - 4 * n)),
            ("anthropic-ratelimit-output-tokens-reset", _iso(now + 1)),
            ("anthropic-ratelimit-requests-limit", "4000"),
            ("anthropic-ratelimit-requests-remaining", str(4000 - n)),
            ("anthropic-ratelimit-requests-reset", _iso(now + 1)),
            ("anthropic-ratelimit-tokens-limit", "480000"),
            ("anthropic-ratelimit-tokens-remaining", str(480000 - 17 * n)),
            ("anthropic-ratelimit-tokens-reset", _iso(now + 1)),
            ("request-id", "req_011C%020x" % random.getrandbits(80)),
            ("anthropic-organization-id", "27796668-7351-40ac-acc4-024aee8995a5"),
            ("via", "1.1 google"),
            ("cf-cache-status", "DYNAMIC"),
            ("x-robots-tag", "none"),
            ("cf-ray", ray),
        ]
    else:
        headers = [
            ("access-control-expose-headers", "X-Request-ID"),
            ("openai-organization", "org-fake"),
            ("openai-processing-ms", str(random.randint(150, 900))),
            ("openai-project", "proj_fake"),
            ("openai-version", "2020-10-01"),
            ("x-envoy-upstream-service-time", str(random.randint(150, 900))),
            ("x-ratelimit-limit-requests", "10000"),
            ("x-ratelimit-limit-tokens", "200000"),
            ("x-ratelimit-remaining-requests", str(10000 - n)),
            ("x-ratelimit-remaining-tokens", str(200000 - 27 * n)),
            ("x-ratelimit-reset-requests", "%.2fs" % (8.64 * random.random())),
            ("x-ratelimit-reset-tokens", "%dms" % random.randint(1, 40)),
            ("x-request-id", "req_%032x" % random.getrandbits(128)),
            ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
            ("cf-cache-status", "DYNAMIC"),
            ("set-cookie", "__cf_bm=abc123.%d; path=/; domain=.api.openai.com; HttpOnly; Secure" % n),
            ("x-content-type-options", "nosniff"),
            ("set-cookie", "_cfuvid=def456.%d; path=/; domain=.api.openai.com; HttpOnly; Secure" % n),
            ("cf-ray", ray),
            ("alt-svc", 'h3=":443"; ma=86400'),
        ]
    for name, value in headers:
        handler.send_header(name, value)


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream; charset=utf-8")
    handler.send_header("cache-control", "no-cache")
    api_headers(handler)
    handler.send_header("connection", "close")
    handler.end_headers()
    for chunk in events:
        handler.wfile.write(chunk.encode())
        handler.wfile.flush()
    handler.close_connection = True


def send_json(handler, body, status=200, gzip_it=False):
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    api_headers(handler)
    if gzip_it:
        data = gzip.compress(data)
        handler.send_header("content-encoding", "gzip")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def last_user_text(body):
    messages = body.get("messages") or []
    if messages:
        content = messages[-1].get("content")
        if isinstance(content, str):
            return content
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    inp = body.get("input")
    return inp if isinstance(inp, str) else json.dumps(inp)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with open(LOG, "a") as f:
            f.write("connection\n")

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            send_json(self, {"object": "list", "data": [
                {"id": "gpt-4o-mini", "object": "model", "created": 1, "owned_by": "system"},
                {"id": "tts-1", "object": "model", "created": 2, "owned_by": "system"},
            ]}, gzip_it=True)
        else:
            send_json(self, {"error": {"message": "no route", "type": "invalid_request_error"}}, 404)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw or b"{}")
        auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        text = last_user_text(body)
        path = self.path.split("?")[0]
        if path == "/v1/chat/completions" and body.get("stream"):
            events = []
            words = ["Hello", ",", " ", "world", "!"]
            for i, word in enumerate(words):
                delta = {"role": "assistant", "content": word} if i == 0 else {"content": word}
                chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
                         "model": body.get("model"), "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                events.append("data: " + json.dumps(chunk) + "\n\n")
            last = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
                    "model": body.get("model"), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            events.append("data: " + json.dumps(last) + "\n\n")
            events.append("data: [DONE]\n\n")
            sse(self, events)
        elif path == "/v1/chat/completions":
            # "created N" answers with that number as the completion's timestamp: a number no
            # redaction can rewrite without changing its type.
            created = text.split(" ", 1)[1] if text.startswith("created ") else ""
            send_json(self, {
                "id": "chatcmpl-1", "object": "chat.completion",
                "created": int(created) if created.isdigit() else 1700000000, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": ANSWER + text}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
                # An upstream that echoes the caller's key: the proxy must scrub it.
                "x_echo": "auth was " + auth,
            })
        elif path == "/v1/responses":
            resp = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
                    "model": body.get("model"), "output": [], "parallel_tool_calls": True,
                    "tool_choice": "auto", "tools": []}
            done = dict(resp, status="completed", output=[{
                "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hi there", "annotations": []}]}])
            if not body.get("stream"):
                # As the real API does, the response echoes the request's settings: the cache key
                # (null when the request sent none) and the metadata.
                send_json(self, dict(done, prompt_cache_key=body.get("prompt_cache_key"),
                                     metadata=body.get("metadata") or {}))
                return
            evs = [
                ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
                ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                 "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi", "logprobs": []}),
                ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                 "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": " there", "logprobs": []}),
                ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": done}),
            ]
            sse(self, ["event: %s\ndata: %s\n\n" % (e, json.dumps(d)) for e, d in evs])
        elif path == "/v1/messages":
            model = body.get("model")
            events = [
                ("message_start", {"type": "message_start", "message": {
                    "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("ping", {"type": "ping"}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "You said " + text}}),
            ]
            if "overload" in text:
                events.append(("error", {"type": "error",
                                         "error": {"type": "overloaded_error", "message": "Overloaded"}}))
            else:
                events += [
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                       "usage": {"output_tokens": 4}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
            sse(self, ["event: %s\ndata: %s\n\n" % (e, json.dumps(d)) for e, d in events])
        elif path == "/v1/cards":
            # Stores what it is given under the key it is given, as careless servers echo a token.
            send_json(self, {"cards": {text: "stored"}})
        elif path in ("/v1/audio/speech", "/v1/audio/echo"):
            wav = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(i % 251 for i in range(4000))
            if path == "/v1/audio/echo":
                # A debug upstream that puts the caller's key in a binary answer.
                wav += b"\x00" + auth.encode() + b"\x00"
            self.send_response(200)
            self.send_header("content-type", "audio/wav")
            self.send_header("content-length", str(len(wav)))
            self.end_headers()
            self.wfile.write(wav)
        else:
            send_json(self, {"error": {"message": "no route " + path, "type": "invalid_request_error"}}, 404)


def main():
    global LOG, ANSWER
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--answer", default=ANSWER)
    args = parser.parse_args()
    LOG = args.log
    ANSWER = args.answer
    open(LOG, "w").close()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
