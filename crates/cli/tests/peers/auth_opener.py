#!/usr/bin/env python3
"""A headless browser for the sign-in tests: `BROWSER=auth_opener.py` makes calltape run it with the
sign-in URL. It GETs the URL and follows the redirects (the conformance suite's authorization endpoint
approves at once) to calltape's loopback callback. Problems go to $CALLTAPE_HOME/opener.log. With
OPENER_LOG set, every URL it is given is appended to that file, so a test can count the sign-ins that
reached the browser."""

import os
import sys
import urllib.request

url = sys.argv[1]
if os.environ.get("OPENER_LOG"):
    with open(os.environ["OPENER_LOG"], "a", encoding="utf-8") as opened:
        opened.write(url + "\n")
try:
    with urllib.request.urlopen(url, timeout=30) as answer:
        answer.read()
except Exception as error:  # noqa: BLE001 - any failure is written down for the test to show
    log = os.path.join(os.environ.get("CALLTAPE_HOME", "/tmp"), "opener.log")
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"{url.split('?')[0]}: {error}\n")
    sys.exit(1)
