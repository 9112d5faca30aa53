"""pytest-calltape: each test's LLM API calls recorded to and replayed from a cassette of its own,
through one `calltape http` proxy per test session."""

from .config import Upstream
from .plugin import Calltape

__all__ = ["Calltape", "Upstream"]
