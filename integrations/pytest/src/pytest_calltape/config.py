"""The plugin's settings: upstreams and their base-URL variables, the cassette folder, the mode."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

MODES = ("auto", "replay", "record", "update", "append", "live", "verify")


@dataclass(frozen=True)
class Upstream:
    """An API the proxy forwards to: `url` is the real API, `env` the variable an SDK reads its base
    URL from, `path` what follows the host in that base URL (`v1` for OpenAI's SDKs), and `key` the
    variable an SDK reads its API key from."""

    name: str
    url: str
    env: str
    path: str = ""
    key: str = ""

    def base_url(self, root: str) -> str:
        """The base URL under `root` (the proxy's per-test root, or the real API's)."""
        path = self.path.strip("/")
        return f"{root.rstrip('/')}/{path}" if path else root.rstrip("/")


# Each upstream's API, the variables its SDKs read their base URL and key from, and the path of the
# base URL: the one table the plugin knows providers by.
DEFAULT_UPSTREAMS = {
    "openai": Upstream("openai", "https://api.openai.com", "OPENAI_BASE_URL", "v1", "OPENAI_API_KEY"),
    "anthropic": Upstream("anthropic", "https://api.anthropic.com", "ANTHROPIC_BASE_URL", "", "ANTHROPIC_API_KEY"),
}

# What a replay run puts in an unset key variable, so that an SDK which refuses to start without a
# key reaches the proxy, which answers from the cassette and sends nothing upstream.
PLACEHOLDER_KEY = "calltape-replay-placeholder-key"


def default_key_variable(name: str) -> str:
    """The key variable of an upstream that names none: `<NAME>_API_KEY`, as SDKs name theirs."""
    return f"{name.upper().replace('-', '_')}_API_KEY"


def unset_key_variables(upstreams: dict[str, Upstream], environ) -> list[str]:
    """The key variables of `upstreams` that `environ` leaves unset or empty, each once, in order."""
    unset = []
    for u in upstreams.values():
        if u.key and not environ.get(u.key) and u.key not in unset:
            unset.append(u.key)
    return unset

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class ConfigError(Exception):
    """A setting that cannot be used; the message says which and what to write instead."""


@dataclass
class Settings:
    upstreams: dict[str, Upstream]
    cassette_dir: Path


def load(rootpath: Path, extra: list[dict] | None = None) -> Settings:
    """Reads `[tool.calltape]` from `rootpath/pyproject.toml`, then the tables conftest.py files gave
    through the `pytest_calltape_upstreams` hook, then `CALLTAPE_UPSTREAM_<NAME>=URL` overrides."""
    table = {}
    pyproject = rootpath / "pyproject.toml"
    if pyproject.is_file():
        try:
            with pyproject.open("rb") as f:
                table = tomllib.load(f).get("tool", {}).get("calltape", {})
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{pyproject} is not valid TOML ({e}); fix it so [tool.calltape] can be read")
    upstreams = dict(DEFAULT_UPSTREAMS)
    for source, given in [(f"[tool.calltape.upstreams] in {pyproject}", table.get("upstreams", {}))] + [
        ("pytest_calltape_upstreams", t) for t in (extra or [])
    ]:
        if not isinstance(given, dict):
            raise ConfigError(f"{source} must be a table of NAME = {{ url = ..., env = ... }}")
        for name, spec in given.items():
            upstreams[name] = _upstream(source, name, spec, upstreams.get(name))
    for name in list(upstreams):
        override = os.environ.get(f"CALLTAPE_UPSTREAM_{name.upper().replace('-', '_')}")
        if override:
            u = upstreams[name]
            upstreams[name] = Upstream(name, override, u.env, u.path, u.key)
    cassette_dir = Path(table.get("cassette_dir", "tests/cassettes"))
    if not cassette_dir.is_absolute():
        cassette_dir = rootpath / cassette_dir
    return Settings(upstreams, cassette_dir)


def _upstream(source: str, name: str, spec, known: Upstream | None) -> Upstream:
    if not _NAME.match(name):
        raise ConfigError(f"{source}: upstream name {name!r} must be letters, digits, '_' and '-'")
    if isinstance(spec, str):
        spec = {"url": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{source}: upstream {name!r} must be a URL or a table with url, env, path and key")
    unknown = set(spec) - {"url", "env", "path", "key"}
    if unknown:
        raise ConfigError(f"{source}: upstream {name!r} has unknown keys {sorted(unknown)}; use url, env, path and key")
    url = spec.get("url") or (known.url if known else None)
    env = spec.get("env") or (known.env if known else None)
    if not url or not env:
        raise ConfigError(
            f"{source}: upstream {name!r} needs url and env, e.g. "
            f'{name} = {{ url = "https://api.example.com", env = "{name.upper()}_BASE_URL" }}'
        )
    path = spec.get("path", known.path if known else "")
    key = spec.get("key") or (known.key if known else default_key_variable(name))
    return Upstream(name, url, env, path, key)


def file_safe(text: str) -> str:
    """One path segment of a cassette name: letters, digits, `.`, `_` and `-`, never `.` or `..`."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "_"
    return safe
