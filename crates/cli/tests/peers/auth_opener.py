#!/usr/bin/env python3
"""A headless browser for the sign-in tests: `BROWSER=auth_opener.py` makes the signing-in client
(calltape, or mcp-remote in the comparison) run it with the sign-in URL.

Like a real browser, it returns at once, having taken the URL, and goes on in the background: it GETs
the URL and follows the redirects (the conformance suite's authorization endpoint approves at once) to
the client's loopback callback. A client may start its callback listener only after the browser was
opened (mcp-remote does), as a person takes seconds to approve: a hop whose connection is refused is
tried again for up to 20 s. Problems go to $CALLTAPE_HOME/opener.log. With OPENER_LOG set, every URL it
is given is appended to that file before it returns, so a test can count the sign-ins that reached the
browser."""

import http.client
import os
import sys
import time
import urllib.parse

REFUSED_FOR = 20.0
MAX_REDIRECTS = 10


def get(url: str, deadline: float) -> http.client.HTTPResponse:
    """One GET, tried again while the connection is refused and the deadline is not past."""
    parts = urllib.parse.urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    while True:
        connection = connection_type(parts.hostname, parts.port, timeout=30)
        try:
            connection.request("GET", target)
            answer = connection.getresponse()
            answer.read()
            return answer
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        finally:
            connection.close()


def follow(url: str) -> None:
    deadline = time.monotonic() + REFUSED_FOR
    for _ in range(MAX_REDIRECTS):
        answer = get(url, deadline)
        location = answer.getheader("Location")
        if answer.status in (301, 302, 303, 307, 308) and location:
            url = urllib.parse.urljoin(url, location)
            continue
        if answer.status >= 400:
            raise RuntimeError(f"HTTP {answer.status} from {url.split('?')[0]}")
        return
    raise RuntimeError(f"more than {MAX_REDIRECTS} redirects")


def main() -> None:
    url = sys.argv[1]
    if os.environ.get("OPENER_LOG"):
        with open(os.environ["OPENER_LOG"], "a", encoding="utf-8") as opened:
            opened.write(url + "\n")
    # Hand the URL over and return, as a browser does; the rest runs detached, with no pipe of the
    # caller held open.
    if os.fork() > 0:
        return
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        follow(url)
    except Exception as error:  # noqa: BLE001 - any failure is written down for the test to show
        log = os.path.join(os.environ.get("CALLTAPE_HOME", "/tmp"), "opener.log")
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{url.split('?')[0]}: {error}\n")
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main()
