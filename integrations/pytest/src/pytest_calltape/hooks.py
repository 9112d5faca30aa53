"""Hooks a conftest.py may implement."""


def pytest_calltape_upstreams(config):
    """Return upstreams to add to or change from `[tool.calltape.upstreams]`, as a dict
    `{NAME: {"url": ..., "env": ..., "path": ...}}` (or `{NAME: URL}` to change only the URL)."""
