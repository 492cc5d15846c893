"""The command line's progress bar (cli/progress_bar.py): drawn on stderr when stderr is a
terminal (a pseudo-terminal here), never when it is piped; through a private server and through
the hub. The servers run with ``DSH_QUERY_PROGRESS_DELAY_MS=0`` so that even a small home's index
build reports."""

from __future__ import annotations

import json
import os
import pathlib
import pty
import subprocess
import sys

import pytest

from tests.builders import U, hdr, write_transcript
from tests.hub.hub_helpers import short_run_dir
from tests.import_helpers import isolated_env

pytestmark = pytest.mark.wire

SESSIONS = 30


def _home(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "dsh"
    for n in range(SESSIONS):
        write_transcript(root, hdr(f"s{n:03d}"), [U(0, f"needle number {n}")])
    return root


def _env(tmp_path: pathlib.Path) -> dict[str, str]:
    tmp_path.mkdir(exist_ok=True)
    env = isolated_env(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["XDG_RUNTIME_DIR"] = short_run_dir()  # a hub's socket path must stay short
    env["DSH_QUERY_PROGRESS_DELAY_MS"] = "0"
    env["COLUMNS"] = "120"
    env.pop("NO_COLOR", None)
    return env


def _run_on_pty(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """The command with stderr on a pseudo-terminal, stdout a pipe: (status, stdout, stderr)."""
    main, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        stdout=subprocess.PIPE,
        stderr=secondary,
        stdin=subprocess.DEVNULL,
        env={**env, "TERM": "xterm-256color"},
    )
    os.close(secondary)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    process.stdout.close()
    status = process.wait(120)
    return status, out, b"".join(chunks).decode(errors="replace")


def _stop_hub(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "hub", "stop"],
        env=env,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "hub,extra", [(False, []), (True, []), (True, ["--json"])], ids=["private", "hub", "hub-json"]
)
def test_progress_on_a_terminal_only(tmp_path, hub, extra):
    """``--json`` through the hub asks ``hub/render``: its progress is titled by the search."""
    root = _home(tmp_path)
    env = _env(tmp_path)
    args = ["search", "needle", "--persistence", f"jsonl:{root}", *extra]
    if not hub:
        args.append("--no-hub")
    try:
        status, out, err = _run_on_pty(args, env)
        assert status == 0, err
        assert "s000" in out or "needle" in out
        if extra:
            assert json.loads(out)["items"]
        # The bar, drawn on the terminal (the warm-up may have built the index already, so the
        # search may only list the transcripts).
        assert "dsh-query searchSessions" in err, err
        assert "━" in err and ("listing transcripts" in err or "indexing" in err), err
        # Before the server can show anything, the command shows what it waits for (the
        # delay is 0 here, so at once): first the server or the hub, then the answer.
        first = "reaching the hub" if hub else "starting the server"
        assert first in err, err
        assert err.index(first) < err.index("waiting for the server"), err
        assert err.index("waiting for the server") < err.index("dsh-query searchSessions"), err

        # The same search piped: the second one finds the index built, so a fresh home is used.
        piped_root = _home(tmp_path / "piped")
        env_piped = _env(tmp_path / "piped")
        piped_args = [a if not a.startswith("jsonl:") else f"jsonl:{piped_root}" for a in args]
        done = subprocess.run(
            [sys.executable, "-m", "dsh_query_server.cli", *piped_args],
            capture_output=True,
            text=True,
            env=env_piped,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # nothing but the answer, and that on stdout
        assert "indexing" not in done.stdout
        if hub:
            _stop_hub(env_piped)
    finally:
        if hub:
            _stop_hub(env)


def test_export_draws_its_sessions_on_a_terminal_only(tmp_path):
    """``dsh-query export --descendants``: the bar counts the sessions written (export/archive.py)."""
    from tests.mcp_helpers import write_corpus

    write_corpus(f"jsonl:{tmp_path / 'ex'}?compression=none")
    env = _env(tmp_path)
    args = ["export", "s-root", "--descendants", "--persistence", f"jsonl:{tmp_path / 'ex'}"]
    status, out, err = _run_on_pty([*args, "-o", str(tmp_path / "a.zip")], env)
    assert status == 0, err
    assert out == f"{tmp_path / 'a.zip'}\n"
    assert "dsh-query exportSession" in err and "exported 1 of " in err, err
    piped = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args, "-o", str(tmp_path / "b.zip")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and piped.stdout == f"{tmp_path / 'b.zip'}\n"
