"""A bearer check in front of a Streamable HTTP MCP server, for the `serve --url` tests (Python
standard library only).

Usage: python bearer_proxy.py PORT UPSTREAM_URL LOG_FILE

The accepted tokens come from the environment (BEARER_TOKENS, comma-separated), never argv. A request
without `Authorization: Bearer <one of them>` is answered 401 with a `WWW-Authenticate` challenge;
any other is forwarded to UPSTREAM_URL's host (same method, path, headers and body) and the answer
streamed back as it comes, SSE included. Each forwarded request appends one line to LOG_FILE:
{"token": <the token's index in BEARER_TOKENS>, "method": ..., "session": <Mcp-Session-Id or null>}
(the index, never the token), so a test can tell which credential used which upstream session.
"""

import http.client
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
UPSTREAM = urllib.parse.urlsplit(sys.argv[2])
LOG = sys.argv[3]
TOKENS = [t for t in os.environ.get("BEARER_TOKENS", "").split(",") if t]
LOCK = threading.Lock()
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
       "proxy-authorization", "proxy-connection"}


class Proxy(BaseHTTPRequestHandler):
    # HTTP/1.0: an answer ends when the connection closes, so streams need no re-framing.
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def forward(self):
        auth = self.headers.get("Authorization", "")
        index = TOKENS.index(auth[7:]) if auth.startswith("Bearer ") and auth[7:] in TOKENS else None
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if index is None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer error="invalid_token"')
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error":"invalid_token"}')
            return
        with LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"token": index, "method": self.command,
                                  "session": self.headers.get("Mcp-Session-Id")}) + "\n")
        conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        conn.request(self.command, self.path, body=body, headers=headers)
        answer = conn.getresponse()
        self.send_response(answer.status)
        for k, v in answer.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.end_headers()
        try:
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            conn.close()

    do_GET = do_POST = do_DELETE = forward


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Proxy).serve_forever()
