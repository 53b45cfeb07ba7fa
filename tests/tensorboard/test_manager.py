"""Starting, reusing, replacing and stopping real TensorBoard servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

import psutil
import pytest
from quickdev.tensorboard import cli, state
from quickdev.tensorboard.manager import (
    TensorBoardError,
    TensorBoardOwner,
    ensure_tensorboard,
    stop_tensorboard,
)

from tests.support.tensorboard import get_json, poll


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def helpers_left(leader: int) -> list[int]:
    """Live processes of the server's group: its data server, the plugin's processes."""
    left = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == leader and not gone(proc.pid):
                left.append(proc.pid)
        except ProcessLookupError:
            pass
    return left


def test_starts_on_loopback_and_answers(fresh_logdir: Path) -> None:
    server = ensure_tensorboard(fresh_logdir)
    assert server.url.startswith("http://127.0.0.1:")
    assert not server.reused
    env = get_json(server.url + "data/environment")
    assert env["data_location"] == str(fresh_logdir.resolve())
    listening = [
        c.laddr
        for c in psutil.Process(server.pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening, "the server listens"
    assert all(addr.ip == "127.0.0.1" for addr in listening), listening


def test_second_call_reuses_the_live_server(fresh_logdir: Path) -> None:
    first = ensure_tensorboard(fresh_logdir)
    second = ensure_tensorboard(fresh_logdir)
    assert (second.pid, second.url) == (first.pid, first.url)
    assert second.reused


def test_reused_from_another_process_through_the_cli(fresh_logdir: Path) -> None:
    server = ensure_tensorboard(fresh_logdir)
    out = subprocess.run(
        [sys.executable, "-m", "quickdev", "tensorboard", "--logdir", str(fresh_logdir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert json.loads(out) == {"url": server.url, "pid": server.pid}


def test_dead_server_is_replaced(fresh_logdir: Path) -> None:
    old = ensure_tensorboard(fresh_logdir)
    os.killpg(old.pid, signal.SIGKILL)
    poll("the killed server to exit", lambda: gone(old.pid))
    new = ensure_tensorboard(fresh_logdir)
    assert new.pid != old.pid
    assert not new.reused
    get_json(new.url + "data/environment")


def test_hung_server_is_replaced_and_killed(fresh_logdir: Path) -> None:
    old = ensure_tensorboard(fresh_logdir)
    os.kill(old.pid, signal.SIGSTOP)  # alive, port open, never answers
    try:
        new = ensure_tensorboard(fresh_logdir)
    finally:
        if not gone(old.pid):
            os.kill(old.pid, signal.SIGCONT)
    assert new.pid != old.pid
    assert gone(old.pid)
    get_json(new.url + "data/environment")


def test_stop_ends_the_server_and_forgets_it(fresh_logdir: Path) -> None:
    server = ensure_tensorboard(fresh_logdir)
    assert len(helpers_left(server.pid)) > 1, "a running server has helper processes"
    assert stop_tensorboard(fresh_logdir) == server.pid
    assert gone(server.pid)
    poll("its helper processes to exit", lambda: not helpers_left(server.pid))
    assert state.read_record(fresh_logdir.resolve()) is None
    assert stop_tensorboard(fresh_logdir) is None


def test_cli_prints_one_json_line_and_stops(
    fresh_logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(fresh_logdir) == 0
    started = json.loads(capsys.readouterr().out)
    assert set(started) == {"url", "pid"}
    assert cli.main(fresh_logdir, stop=True) == 0
    assert json.loads(capsys.readouterr().out) == {"stopped": True, "pid": started["pid"]}
    assert gone(started["pid"])


def test_owner_stops_the_servers_it_started(tmp_path: Path) -> None:
    owner = TensorBoardOwner()
    servers = [owner.ensure(tmp_path / name) for name in ("a", "b")]
    owner.stop_all()
    assert all(gone(s.pid) for s in servers)


def test_server_exits_when_its_owner_is_killed(tmp_path: Path) -> None:
    logdir = tmp_path / "runs"
    owner_code = (
        "import sys, time; from pathlib import Path\n"
        "from quickdev.tensorboard.manager import TensorBoardOwner\n"
        "server = TensorBoardOwner().ensure(Path(sys.argv[1]))\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", owner_code, str(logdir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        assert not gone(pid)
    finally:
        owner.kill()  # no chance to clean up: the server must notice by itself
        owner.wait()
    poll("the orphaned server to exit", lambda: gone(pid), timeout_s=30)
    poll("its helper processes to exit", lambda: not helpers_left(pid))


def test_missing_plugin_names_what_to_install(tmp_path: Path) -> None:
    """A real interpreter without tensorboard or the plugin: a bare virtual environment."""
    env_dir = tmp_path / "bare"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    with pytest.raises(TensorBoardError) as err:
        ensure_tensorboard(tmp_path / "runs", python=str(python))
    message = str(err.value)
    assert "pip install torch-tb-profiler==0.4.3 tensorboard==2.21.0" in message
    assert "\n" not in message


def test_a_file_as_logdir_is_a_usage_error(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "result.json"
    not_a_dir.write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "quickdev", "tensorboard", "--logdir", str(not_a_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "is a file" in line and "directory that holds the runs" in line
    assert not_a_dir.read_text() == "{}"


def test_a_proxy_in_the_environment_is_not_used_for_loopback(fresh_logdir: Path) -> None:
    dead_proxy = "http://127.0.0.1:9"  # nothing listens on the discard port
    env = dict(os.environ, HTTP_PROXY=dead_proxy, http_proxy=dead_proxy)
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    out = subprocess.run(
        [sys.executable, "-m", "quickdev", "tensorboard", "--logdir", str(fresh_logdir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["url"].startswith("http://127.0.0.1:")
