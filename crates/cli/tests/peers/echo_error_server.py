"""A Streamable HTTP MCP endpoint (standard library only) that fails every tools/call with an HTTP
500 whose body quotes what it was sent, the call's argument values and the bearer token, as careless
servers' error pages do. For the test that a value calltape filled in, or a header it sent, never
reaches its stderr.

Usage: python echo_error_server.py   (prints the port on stdout, then serves until killed)

It answers initialize (the handshake era: server/discover gets "method not found"), accepts
notifications with 202, and answers DELETE with 200.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send(405, "", "text/plain")

    def do_DELETE(self):
        self.send(200, "", "text/plain")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        message = json.loads(raw or "{}")
        method = message.get("method")
        if "id" not in message:
            self.send(202, "", "text/plain")
        elif method == "initialize":
            result = {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "echo-error", "version": "1"},
            }
            self.send(
                200,
                json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}),
                headers=[("mcp-session-id", "s-1")],
            )
        elif method == "tools/call":
            values = " ".join(str(v) for v in message["params"].get("arguments", {}).values())
            token = self.headers.get("authorization", "").removeprefix("Bearer ")
            self.send(500, f"cannot charge {values} for the key {token}: try again", "text/plain")
        else:
            error = {"code": -32601, "message": "Method not found"}
            self.send(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
