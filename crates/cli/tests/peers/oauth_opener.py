"""A headless stand-in for the user's browser, for the sign-in tests: `BROWSER=oauth_opener.py`.

Usage: python oauth_opener.py URL

It GETs the sign-in URL and follows the authorization server's redirects to the loopback redirect URI
that calltape listens on, as a browser would once the user approved. With OPENER_LOG set, it appends
each URL it was given to that file (one per line), so a test can count the sign-ins that reached the
browser.
"""

import os
import sys
import urllib.request


def main():
    url = sys.argv[1]
    log = os.environ.get("OPENER_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(url + "\n")
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
