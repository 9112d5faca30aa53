"""The pytest plugin: `@pytest.mark.calltape`, `--calltape-mode`, the `calltape` fixture, and a test
that fails when one of its requests found no recording."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from . import hooks
from .mcp import McpHttpServer, McpServer, new_log
from .config import MODES, PLACEHOLDER_KEY, ConfigError, Settings, file_safe, load, unset_key_variables
from .proxy import Proxy, ProxyError, find_binary

_STATE = pytest.StashKey["_Session"]()
_TEST = pytest.StashKey["Calltape"]()
_MCP = pytest.StashKey["list[McpServer | McpHttpServer]"]()


class Calltape:
    """What the `calltape` fixture gives a test: its cassette and the base URLs that reach it."""

    def __init__(self, name: str, path: Path, mode: str, live: bool, urls: dict[str, str], env: dict[str, str]):
        self.name = name
        self.cassette = path
        self.mode = "live" if live else mode
        self.live = live
        self._urls = urls
        self._env = env
        self._saved: dict[str, str | None] = {}
        self._failures_before = 0

    def base_url(self, upstream: str = "openai") -> str:
        """The base URL an SDK client of `upstream` should use in this test."""
        try:
            return self._urls[upstream]
        except KeyError:
            raise KeyError(f"no upstream named {upstream!r}; calltape knows {', '.join(sorted(self._urls))}") from None

    @property
    def env(self) -> dict[str, str]:
        """The environment variables this test runs with, e.g. {"OPENAI_BASE_URL": ...}."""
        return dict(self._env)


class _Session:
    def __init__(self, config: pytest.Config):
        self.config = config
        # Read now so a broken [tool.calltape] stops the run before any test; read again with the
        # conftest.py files' upstreams when the proxy starts, once collection has loaded them all.
        self.settings: Settings = load(config.rootpath)
        self.proxy: Proxy | None = None
        self.failed: ProxyError | None = None
        self.report: dict | None = None
        # The key variables that hold a placeholder for this run.
        self.placeholders: list[str] = []

    def started(self) -> Proxy:
        """The session's proxy, started by the first test that needs it."""
        if self.failed is not None:
            raise self.failed
        if self.proxy is None:
            try:
                extra = [t for t in self.config.hook.pytest_calltape_upstreams(config=self.config) if t]
                self.settings = load(self.config.rootpath, extra)
                self.proxy = Proxy(self.settings, self.config.getoption("calltape_mode"), self.config.rootpath)
            except (ConfigError, ProxyError) as e:
                self.failed = e if isinstance(e, ProxyError) else ProxyError(str(e))
                raise self.failed from None
            if self.proxy.mode == "replay":
                # An SDK refuses to start without a key before any request reaches the proxy; in
                # replay nothing reaches the real API, so CI needs no key.
                self.placeholders = unset_key_variables(self.settings.upstreams, os.environ)
                for var in self.placeholders:
                    os.environ[var] = PLACEHOLDER_KEY
        return self.proxy

    def restore_keys(self) -> None:
        for var in self.placeholders:
            if os.environ.get(var) == PLACEHOLDER_KEY:
                del os.environ[var]


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser):
    group = parser.getgroup("calltape", "record and replay LLM API calls with calltape")
    group.addoption(
        "--calltape-mode",
        choices=MODES,
        default=None,
        help="auto (replay what is recorded, record the rest), replay (strict, offline), record "
        "(re-record), live or verify; default: CALLTAPE_MODE, LLM_TEST_MODE, UPDATE_RECORDINGS, "
        "replay when CI is set, else auto",
    )
    parser.addini(
        "calltape_mode",
        "strict: only tests marked @pytest.mark.calltape get a cassette; auto: every test does",
        default="strict",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "calltape(live=False): record and replay this test's LLM API calls in a cassette of its own; "
        "live=True sends them to the real API",
    )
    if config.getini("calltape_mode") not in ("strict", "auto"):
        raise pytest.UsageError(f"calltape_mode = {config.getini('calltape_mode')!r}: use strict or auto")
    try:
        config.stash[_STATE] = _Session(config)
    except ConfigError as e:
        raise pytest.UsageError(f"calltape: {e}") from None


def _state(config) -> _Session:
    return config.stash[_STATE]


def cassette_name(item: pytest.Item) -> str:
    """`<test file stem>/<test name>`, with a class's name before the test's and the parameters'
    id after it, each part file-safe."""
    parts = [file_safe(Path(str(item.path)).stem)]
    names = [n.name for n in item.listchain()[1:] if isinstance(n, pytest.Class)]
    test = getattr(item, "originalname", None) or item.name
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        test = f"{test}-{callspec.id}"
    parts.append(".".join(file_safe(n) for n in [*names, test]))
    return "/".join(parts)


def _applies(item: pytest.Item) -> pytest.Mark | bool:
    marker = item.get_closest_marker("calltape")
    if marker is not None:
        return marker
    return item.config.getini("calltape_mode") == "auto"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    applies = _applies(item)
    if not applies:
        return
    live = bool(applies.kwargs.get("live", False)) if isinstance(applies, pytest.Mark) else False
    state = _state(item.config)
    try:
        proxy = state.started()
    except ProxyError as e:
        pytest.fail(f"calltape: {e}", pytrace=False)
    name = cassette_name(item)
    urls, env = {}, {}
    for u in state.settings.upstreams.values():
        root = u.url if live else f"{proxy.cassette_url(name)}/{u.name}"
        urls[u.name] = u.base_url(root)
        env[u.env] = urls[u.name]
    test = Calltape(name, state.settings.cassette_dir / f"{name}.jsonl", proxy.mode, live, urls, env)
    test._saved = {k: os.environ.get(k) for k in env}
    test._failures_before = 0 if live else proxy.cassette(name)["failures"]
    os.environ.update(env)
    item.stash[_TEST] = test


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    test = item.stash.get(_TEST, None)
    try:
        return (yield)
    finally:
        if test is not None and not test.live:
            _fail_on_misses(item, test)
        _fail_on_mcp_misses(item)


def _fail_on_mcp_misses(item) -> None:
    for server in item.stash.get(_MCP, []):
        server.stop()
        misses = server.misses()
        if misses:
            shown = os.path.relpath(server.recording, item.config.invocation_params.dir)
            pytest.fail(
                f"calltape: MCP request(s) of this test found no answer in {shown}; record it again "
                f"with --calltape-mode record (and the real server in calltape_mcp_upstream) if the "
                f"change is intended\n" + "\n".join(misses),
                pytrace=False,
            )


def _record_command(item) -> str:
    """The command that records this one test's cassette, from the folder pytest was run in."""
    here = item.config.invocation_params.dir
    node = item.nodeid.split("::", 1)
    node[0] = os.path.relpath(item.path, here)
    return f"pytest --calltape-mode record {shlex.quote('::'.join(node))}"


def _fail_on_misses(item, test: Calltape) -> None:
    answer = _state(item.config).started().cassette(test.name)
    new = answer["failures"] - test._failures_before
    if new > 0 and answer["cassette"].get("missing"):
        shown = os.path.relpath(test.cassette, item.config.invocation_params.dir)
        pytest.fail(
            f"calltape: no cassette at {shown}; record it with: {_record_command(item)}\n{answer['text']}",
            pytrace=False,
        )
    if new > 0:
        pytest.fail(
            f"calltape: {new} request(s) of this test failed against cassette {test.cassette} "
            f"({answer['mode']} mode); record it again with --calltape-mode record if the change "
            f"is intended\n{answer['text']}",
            pytrace=False,
        )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    test = item.stash.get(_TEST, None)
    if test is None:
        return
    for k, v in test._saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def calltape(request) -> Calltape:
    """The test's cassette and base URLs (`calltape.base_url("openai")`), for clients made before
    the test set the environment. The test must use the calltape marker (or calltape_mode = auto)."""
    test = request.node.stash.get(_TEST, None)
    if test is None:
        pytest.fail(
            "the calltape fixture needs @pytest.mark.calltape on the test or its module "
            "(or calltape_mode = auto in the pytest configuration)",
            pytrace=False,
        )
    return test


@pytest.fixture
def calltape_mcp_upstream():
    """The real MCP server the `mcp_server` fixture records from: a command (a list of words) or a
    Streamable HTTP URL. None (the default) answers from the recordings only; override it in
    conftest.py."""
    return None


@pytest.fixture
def mcp_server(request, calltape_mcp_upstream) -> McpServer:
    """A stdio MCP server for this test: `calltape mock` answering from the test's own recording,
    `<cassette_dir>/<test file>/<test>.mcp.jsonl`, recorded from `calltape_mcp_upstream` in auto mode
    on the first run. A request the recording cannot answer fails the test, even when the client
    swallowed the error, with the closest recorded call shown."""
    try:
        binary = find_binary()
    except ProxyError as e:
        pytest.fail(f"calltape: {e}", pytrace=False)
    item = request.node
    recording = _state(item.config).settings.cassette_dir / f"{cassette_name(item)}.mcp.jsonl"
    log = new_log()
    request.addfinalizer(lambda: log.unlink(missing_ok=True))
    server = McpServer(binary, recording, item.config.getoption("calltape_mode"), calltape_mcp_upstream, log)
    item.stash.setdefault(_MCP, []).append(server)
    return server


@pytest.fixture
def mcp_server_url(request, calltape_mcp_upstream) -> str:
    """The Streamable HTTP form of `mcp_server`: the URL of an MCP server for this test,
    `http://127.0.0.1:PORT/_cassette/NAME/mcp`, served by a `calltape serve --mock --cassette-dir`
    of its own that answers from the same recording, `<cassette_dir>/<test file>/<test>.mcp.jsonl`,
    recorded from `calltape_mcp_upstream` in auto mode on the first run. The server is stopped when
    the test's call ends; a request the recording cannot answer fails the test, with the closest
    recorded call shown."""
    try:
        binary = find_binary()
    except ProxyError as e:
        pytest.fail(f"calltape: {e}", pytrace=False)
    item = request.node
    log = new_log()
    request.addfinalizer(lambda: log.unlink(missing_ok=True))
    cassette_dir = _state(item.config).settings.cassette_dir
    mode = item.config.getoption("calltape_mode")
    try:
        server = McpHttpServer(binary, cassette_dir, f"{cassette_name(item)}.mcp", mode, calltape_mcp_upstream, log)
    except RuntimeError as e:
        pytest.fail(f"calltape: {e}", pytrace=False)
    request.addfinalizer(server.stop)
    item.stash.setdefault(_MCP, []).append(server)
    return server.url


def pytest_sessionfinish(session):
    state = session.config.stash.get(_STATE, None)
    if state is None or state.proxy is None:
        return
    state.report = state.proxy.stop()
    state.restore_keys()


def pytest_terminal_summary(terminalreporter, config):
    state = config.stash.get(_STATE, None)
    if state is None or state.proxy is None:
        return
    report = state.report or {}
    cassettes = report.get("cassettes", [])
    hits = sum(c.get("hits", 0) for c in cassettes)
    failed = sum(1 for c in cassettes if c.get("misses") or c.get("drift") or any(f.get("refused") for f in c.get("fuzzy", [])))
    terminalreporter.write_line(
        f"calltape: {state.proxy.mode} mode, {len(cassettes)} cassettes, {hits} replayed, {failed} with failures"
    )
    if state.placeholders:
        terminalreporter.write_line(
            f"calltape: {', '.join(state.placeholders)} unset, so a placeholder key stood in for this "
            "replay run (it sends nothing to the real API)"
        )
    if state.proxy.returncode not in (0, None) or state.report is None:
        terminalreporter.write_line(f"calltape http exited with {state.proxy.returncode}:\n{state.proxy.log()}")
    state.proxy.cleanup()
