"""One `calltape http` process: started on a free loopback port, asked about a cassette after each
test, stopped at the end of the session."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .config import Settings


class ProxyError(Exception):
    """The proxy could not be found, started or asked; the message says what to do."""


def find_binary() -> str:
    """`CALLTAPE_BIN`, else `calltape` on PATH (a build from source wins), else the binary of the
    `calltape` wheel this package depends on: pip puts it in the scripts folder of the environment
    (or of the user's scheme), which is not on PATH when pytest runs from an environment that was
    not activated."""
    given = os.environ.get("CALLTAPE_BIN")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise ProxyError(f"CALLTAPE_BIN={given} is not an executable file; point it at the calltape binary")
        return given
    found = shutil.which("calltape")
    if found:
        return found
    name = "calltape.exe" if os.name == "nt" else "calltape"
    folders = [sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        folders.append(sysconfig.get_path("scripts", user_scheme))
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ProxyError(
        "the calltape binary is not on PATH nor installed beside pytest; install it (pip install calltape) or set CALLTAPE_BIN to its path"
    )


class Proxy:
    def __init__(self, settings: Settings, mode: str | None, cwd: Path):
        self.settings = settings
        self._work = tempfile.TemporaryDirectory(prefix="pytest-calltape-")
        work = Path(self._work.name)
        self.report_path = work / "report.json"
        self.stderr_path = work / "proxy.log"
        cmd = [find_binary(), "http", "--listen", "127.0.0.1:0", "--cassette-dir", str(settings.cassette_dir)]
        for u in settings.upstreams.values():
            cmd += ["--upstream", f"{u.name}={u.url}"]
        if mode:
            cmd += ["--mode", mode]
        cmd += ["--allow-misses", "--report", str(self.report_path), "--report-format", "json"]
        # Served only under a random per-run path prefix, which the URLs it prints carry: no other
        # local user can use this proxy.
        cmd += ["--path-token", str(work / "path-token")]
        self._stderr = self.stderr_path.open("wb")
        try:
            self._child = subprocess.Popen(
                cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr
            )
        except OSError as e:
            raise ProxyError(f"cannot start {cmd[0]}: {e}") from e
        # One `NAME URL` line per upstream, then the proxy's root URL.
        lines = [self._child.stdout.readline().decode() for _ in range(len(settings.upstreams) + 1)]
        if not lines[-1].startswith("http://"):
            self._child.wait()
            raise ProxyError(f"calltape http did not start:\n{self.log()}")
        self.url = lines[-1].strip()
        self.mode = self.cassette("_")["mode"]
        self.returncode: int | None = None

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def cassette_url(self, name: str) -> str:
        """The root URL that routes a request to cassette `name` (its `/` written `%2F`, so the name
        stays one path segment)."""
        return f"{self.url}/_cassette/{name.replace('/', '%2F')}"

    def cassette(self, name: str) -> dict:
        """What the run did so far with cassette `name`: hits, misses, fuzzy hits, drift, `failures`
        and the failure `text`."""
        url = f"{self.url}/_calltape/cassette/{urllib.parse.quote(name)}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=30) as r:
                return json.load(r)
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ProxyError(f"cannot ask the calltape proxy about cassette {name!r}: {e}\n{self.log()}") from e

    def stop(self) -> dict | None:
        """Stops the proxy (it writes the cassettes it recorded) and returns its JSON report."""
        if self._child.poll() is None:
            self._child.send_signal(signal.SIGTERM)
            try:
                self._child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
        self.returncode = self._child.returncode
        self._child.stdout.close()
        self._stderr.close()
        try:
            return json.loads(self.report_path.read_text())
        except (OSError, ValueError):
            return None

    def cleanup(self) -> None:
        self._work.cleanup()
