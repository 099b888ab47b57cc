"""The served app that several modules share: ``tests/app/serve.py`` with no options, started once.

Each start loads the models (~15-25 s). The modules that use it (test_app_client, test_bad_input,
test_browser) each make their own visitors and conversations and check only those, so one server
answers them all; a module that needs a server of its own (its data dir read whole, its log, a kill,
logins) starts one itself.
"""

from __future__ import annotations

import pytest

from tests.app.browser_support import AppServer


@pytest.fixture(scope="session")
def _shared_server(tmp_path_factory):
    server = AppServer(tmp_path_factory.mktemp("served"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_server(_shared_server):
    """The shared server, running: started on first use, and again if a module left it stopped."""
    if _shared_server.proc is None or _shared_server.proc.poll() is not None:
        _shared_server.stop()
        _shared_server.start()
    return _shared_server
