"""Jobs started from a warm process through the real server, beside cold ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.warm.support import SCRIPT, printed, result, run, run_until_warm, training_script

pytestmark = pytest.mark.asyncio

SAME = ("argv", "cwd", "name", "path0", "var", "sigint", "sigterm", "stdin", "sigchld", "sigpipe")


async def test_a_warm_job_and_a_cold_job_give_the_same_results(
    client: LanguageClient, workspace: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SCRIPT)
    env = {"MY_VAR": "from the launch configuration"}
    outcomes = {}
    for crash in ((), ("--crash",)):
        warm, warm_seen = await run_until_warm(client, changes, script, mark, *crash, env=env)
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"quickdev": {"warmStart": False}})
        )
        cold, cold_seen = await run(client, changes, script, mark, *crash, env=env)
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"quickdev": {}})
        )
        assert not cold_seen["warm"]
        assert {k: warm_seen[k] for k in SAME} == {k: cold_seen[k] for k in SAME}
        assert warm_seen["group_leader"] and warm_seen["session_leader"]
        assert warm["status"] == cold["status"]
        warm_result, cold_result = result(warm), result(cold)
        for key in ("status", "losses", "optimizer_steps", "stop_reason"):
            assert warm_result[key] == cold_result[key], key
        assert [lo["batches"] for lo in warm_result["loaders"]] == [
            lo["batches"] for lo in cold_result["loaders"]
        ]
        for key in ("type", "message", "file", "line"):
            assert (warm_result["error"] or {}).get(key) == (cold_result["error"] or {}).get(key)
        assert ["hello from the script" in printed(r) for r in (warm, cold)] == [True, True]
        # The warm process hides its own objects from the collector; the job's are not.
        assert ["farewell" in printed(r) for r in (warm, cold)] == [True, True]
        outcomes[crash] = warm_result["status"]
    assert outcomes == {(): "passed", ("--crash",): "failed"}
