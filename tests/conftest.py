"""Shared pytest fixtures. Add fixtures; do not replace others' (several engineers share this file)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from loopback import LoopbackServer  # noqa: E402


@pytest.fixture
def loopback():
    """A running HTTPS loopback server (tests/loopback.py); route names with its resolve map."""
    with LoopbackServer() as server:
        yield server
