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


@pytest.fixture(autouse=True)
def _private_gate(tmp_path_factory, monkeypatch):
    """Every test's live `collection run` gets its own machine-local gate (COLLECTION_GATE), so
    tests, and other checkouts running tests on this machine, never pace one another."""
    monkeypatch.setenv("COLLECTION_GATE", "local:" + str(tmp_path_factory.mktemp("gate")))


@pytest.fixture
def redis_server(tmp_path_factory):
    """A real redis-server on a free loopback port (tests/redis_helper.py); fails, never skips."""
    from redis_helper import RedisServer

    server = RedisServer(str(tmp_path_factory.mktemp("redis"))).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["local", "redis"])
def gate(request, tmp_path):
    """Each politeness gate backend in turn: a local gate in a temporary directory and a real
    redis-server (tests/test_gate.py, tests/test_holds.py)."""
    from collection.fetch.gate import LocalGate
    from collection.fetch.redis_gate import RedisGate

    if request.param == "local":
        made = LocalGate(str(tmp_path / "gate"))
    else:
        made = RedisGate(request.getfixturevalue("redis_server").url)
    made.check()
    yield made
    made.close()
