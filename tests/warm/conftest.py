from tests.server.conftest import client, settings, workspace  # noqa: F401 - the real server
