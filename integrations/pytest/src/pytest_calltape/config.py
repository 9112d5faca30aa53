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


# The file that holds the settings, as `calltape replay` finds its own: in a folder and each folder
# above it up to the repository's root, `calltape.toml` first, then `[tool.calltape]` of
# `pyproject.toml`.
FILE_NAME = "calltape.toml"
PYPROJECT = "pyproject.toml"

# The keys of the file's top level (or of `[tool.calltape]`): `replay` is `calltape replay`'s, which
# checks it.
_TOP_KEYS = ("cassette_dir", "upstreams", "replay")


def discover(start: Path) -> tuple[Path, dict] | None:
    """The file that holds the settings for `start` and its calltape table: in `start` and then in each
    folder above it, a `calltape.toml` (the whole file), else a `pyproject.toml` with a `[tool.calltape]`
    table. The search stops after the repository's root (the folder holding `.git`)."""
    for folder in [start, *start.parents]:
        file = folder / FILE_NAME
        if file.is_file():
            return file, _read_toml(file)
        pyproject = folder / PYPROJECT
        if pyproject.is_file():
            tool = _read_toml(pyproject).get("tool")
            table = tool.get("calltape") if isinstance(tool, dict) else None
            if table is not None:
                return pyproject, table
        if (folder / ".git").exists():
            break
    return None


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML ({e}); fix it so calltape's settings can be read")
    except OSError as e:
        raise ConfigError(f"cannot read {path} ({e.strerror}); make it readable or remove it")


def load(rootpath: Path, extra: list[dict] | None = None) -> Settings:
    """Reads the settings of the file `discover` finds from `rootpath`, then the tables conftest.py
    files gave through the `pytest_calltape_upstreams` hook, then `CALLTAPE_UPSTREAM_<NAME>=URL`
    overrides. A relative `cassette_dir` is taken from the folder of the file that gives it."""
    found = discover(rootpath)
    file, table = found if found else (None, {})
    where, prefix = "", ""
    if file is not None:
        pyproject = file.name == PYPROJECT
        where, prefix = (f"[tool.calltape] in {file}", "tool.calltape.") if pyproject else (str(file), "")
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table with cassette_dir and upstreams")
        unknown = sorted(set(table) - set(_TOP_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}; it takes cassette_dir, upstreams and replay")
    upstreams = dict(DEFAULT_UPSTREAMS)
    for source, given in [(f"[{prefix}upstreams] in {file}", table.get("upstreams", {}))] + [
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
    given_dir = table.get("cassette_dir", "tests/cassettes")
    if not isinstance(given_dir, str):
        raise ConfigError(f'{prefix}cassette_dir in {file} must be a folder, e.g. cassette_dir = "tests/cassettes"')
    cassette_dir = Path(given_dir)
    if not cassette_dir.is_absolute():
        cassette_dir = (file.parent if file is not None and "cassette_dir" in table else rootpath) / cassette_dir
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
