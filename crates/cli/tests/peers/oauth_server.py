"""An MCP server behind OAuth, with its authorization server, for the end-to-end tests of sign-in.

Usage: python oauth_server.py

It listens on 127.0.0.1 (a free port) and prints its MCP endpoint URL on the first line of stdout. The
MCP endpoint (/mcp) answers 401 with a `WWW-Authenticate` challenge that names its protected resource
metadata until a request carries a token it issued; the authorization server registers clients
(RFC 7591), approves every authorization request at once (PKCE S256 checked) and issues and refreshes
tokens. Two more endpoints steer and observe it:

- POST /control/expire: every access token issued so far stops working (refresh tokens keep working);
- GET /control/stats: how many registrations, authorizations, code grants, refresh grants and
  client credentials grants it saw.

A pre-registered confidential client, `ci-client` with the secret `ci-client-secret-value`, may use
the client credentials grant (with `client_secret_basic` or `client_secret_post`), as a CI job would.

The MCP side is the smallest stateless server: initialize, tools/list with one tool, tools/call (the
tool `echo_token` answers with the caller's access token, as a careless server might).
"""

import base64
import hashlib
import json
import secrets
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {
    "registrations": 0,
    "authorizations": 0,
    "code_grants": 0,
    "refresh_grants": 0,
    "client_credentials_grants": 0,
    "refused": 0,
}
CI_CLIENT = ("ci-client", "ci-client-secret-value")
CLIENTS = {CI_CLIENT[0]: {"redirect_uris": [], "secret": CI_CLIENT[1]}}
CODES = {}
ACCESS = set()
REFRESH = set()
BASE = ""


def s256(verifier):
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_empty(self, status, headers=()):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            return self.send_json(
                200,
                {
                    "resource": BASE + "/mcp",
                    "authorization_servers": [BASE],
                    "scopes_supported": ["mcp"],
                },
            )
        if path == "/.well-known/oauth-authorization-server":
            return self.send_json(
                200,
                {
                    "issuer": BASE,
                    "authorization_endpoint": BASE + "/authorize",
                    "token_endpoint": BASE + "/token",
                    "registration_endpoint": BASE + "/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": [
                        "authorization_code",
                        "refresh_token",
                        "client_credentials",
                    ],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": [
                        "none",
                        "client_secret_basic",
                        "client_secret_post",
                    ],
                },
            )
        if path == "/authorize":
            return self.authorize()
        if path == "/control/stats":
            with LOCK:
                return self.send_json(200, dict(STATE))
        if path == "/mcp":
            # No server-initiated stream.
            return self.send_empty(405, [("Allow", "POST")])
        return self.send_empty(404)

    def authorize(self):
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        client = CLIENTS.get(query.get("client_id"))
        redirect = query.get("redirect_uri", "")
        if (
            client is None
            or redirect not in client["redirect_uris"]
            or query.get("response_type") != "code"
            or query.get("code_challenge_method") != "S256"
            or not query.get("code_challenge")
            or query.get("resource") != BASE + "/mcp"
        ):
            return self.send_json(400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        with LOCK:
            STATE["authorizations"] += 1
            CODES[code] = (query["client_id"], redirect, query["code_challenge"])
        target = redirect + "?" + urllib.parse.urlencode(
            {"code": code, "state": query.get("state", "")}
        )
        self.send_empty(302, [("Location", target)])

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/register":
            return self.register()
        if path == "/token":
            return self.token()
        if path == "/control/expire":
            with LOCK:
                ACCESS.clear()
            return self.send_json(200, {"expired": True})
        if path == "/mcp":
            return self.mcp()
        return self.send_empty(404)

    def do_DELETE(self):
        self.send_empty(405, [("Allow", "POST")])

    def register(self):
        request = json.loads(self.body() or b"{}")
        with LOCK:
            STATE["registrations"] += 1
            client_id = "client-%d" % STATE["registrations"]
            CLIENTS[client_id] = {"redirect_uris": request.get("redirect_uris", [])}
        self.send_json(
            201,
            {
                "client_id": client_id,
                "redirect_uris": request.get("redirect_uris", []),
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
            },
        )

    def issue(self, refreshable=True):
        access = "at-" + secrets.token_urlsafe(24)
        ACCESS.add(access)
        issued = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": "mcp",
        }
        if refreshable:
            refresh = "rt-" + secrets.token_urlsafe(24)
            REFRESH.add(refresh)
            issued["refresh_token"] = refresh
        return issued

    def client_secret(self, form):
        """The client ID and secret of the request: HTTP Basic, else the form's fields."""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth[len("Basic ") :]).decode()
            client_id, _, secret = decoded.partition(":")
            return urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)
        return form.get("client_id"), form.get("client_secret")

    def token(self):
        form = dict(urllib.parse.parse_qsl(self.body().decode()))
        grant = form.get("grant_type")
        with LOCK:
            if grant == "authorization_code":
                found = CODES.pop(form.get("code", ""), None)
                if (
                    found is None
                    or found[0] != form.get("client_id")
                    or found[1] != form.get("redirect_uri")
                    or s256(form.get("code_verifier", "")) != found[2]
                ):
                    return self.send_json(400, {"error": "invalid_grant"})
                STATE["code_grants"] += 1
                return self.send_json(200, self.issue())
            if grant == "client_credentials":
                if self.client_secret(form) != CI_CLIENT:
                    return self.send_json(401, {"error": "invalid_client"})
                STATE["client_credentials_grants"] += 1
                return self.send_json(200, self.issue(refreshable=False))
            if grant == "refresh_token":
                refresh = form.get("refresh_token", "")
                if refresh not in REFRESH:
                    return self.send_json(400, {"error": "invalid_grant"})
                REFRESH.discard(refresh)
                STATE["refresh_grants"] += 1
                return self.send_json(200, self.issue())
        self.send_json(400, {"error": "unsupported_grant_type"})

    def mcp(self):
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        with LOCK:
            valid = token in ACCESS
            if not valid:
                STATE["refused"] += 1
        raw = self.body()
        if not valid:
            challenge = (
                'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp"'
                % BASE
            )
            if token is not None:
                challenge += ', error="invalid_token"'
            return self.send_json(
                401, {"error": "unauthorized"}, [("WWW-Authenticate", challenge)]
            )
        message = json.loads(raw)
        method = message.get("method")
        if "id" not in message:
            return self.send_empty(202)
        if method == "initialize":
            result = {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-fixture", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {
                "tools": [
                    {
                        "name": "whoami",
                        "description": "Says that the caller signed in.",
                        "inputSchema": {"type": "object"},
                    }
                ]
            }
        elif method == "tools/call" and message["params"].get("name") == "echo_token":
            # A careless server that echoes the caller's token.
            result = {"content": [{"type": "text", "text": "your token: " + token}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "signed in"}]}
        elif method == "ping":
            result = {}
        else:
            return self.send_json(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "method not found"},
                },
            )
        self.send_json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


def main():
    global BASE
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    BASE = "http://127.0.0.1:%d" % server.server_address[1]
    print(BASE + "/mcp", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
