import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def builtin_registry(monkeypatch):
    """A fresh registry without entry-point plugins, for tests that pin its exact contents."""
    from ilplayer import plugins

    monkeypatch.setenv(plugins.AUTOLOAD_ENV, "1")
    registry = plugins._Registry()
    monkeypatch.setattr(plugins, "_registry", registry)
    return registry
