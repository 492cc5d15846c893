"""`make test` touches nothing on the machine but the repository, its caches and the system
packages it names (issue 25 finding 6): every apt-get install that make would run leaves the
packages already installed as they are and adds no recommended extras, and the session's guard
on the real home (tests/home_guard.py) notices a place that appears while the tests run."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.home_guard import WATCHED, HomeGuard

ROOT = Path(__file__).resolve().parents[2]
APT_TARGETS = ("postgres-deps", "nvim-deps", "vscode-apt", "bench-deps")


def test_every_apt_install_make_would_run_upgrades_nothing(tmp_path: Path) -> None:
    """The commands make prints for its apt targets, forced (-B) as on a machine that has none
    of the packages: each apt-get install carries --no-upgrade and --no-install-recommends."""
    env = {**os.environ, "HOME": str(tmp_path)}  # nothing below runs; HOME only names caches
    shown = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", *APT_TARGETS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    installs = re.findall(r"apt-get install [^;|&}]*", shown.stdout)
    assert len(installs) >= 2 * len(APT_TARGETS)  # each: from the lists it has, then updated
    for command in installs:
        assert "--no-upgrade" in command and "--no-install-recommends" in command, command
    assert all(name in shown.stdout for name in ("postgresql", "neovim", "chromium", "ripgrep"))


def test_the_home_guard_names_what_appeared_and_only_that(tmp_path: Path) -> None:
    (tmp_path / ".npm").mkdir()  # there before: not the session's doing, not watched
    guard = HomeGuard(tmp_path)
    assert ".npm" not in guard.watched and ".config/code-server" in guard.watched
    assert guard.report() is None
    (tmp_path / ".npm" / "_logs").mkdir()
    (tmp_path / ".cache" / "dsh-query-e2e").mkdir(parents=True)  # its own cache: allowed
    assert guard.report() is None
    (tmp_path / ".config" / "code-server").mkdir(parents=True)
    (tmp_path / ".config" / "code-server" / "config.yaml").write_text("auth: password\n")
    message = guard.report()
    assert message is not None and str(tmp_path / ".config/code-server") in message
    assert guard.created() == [".config/code-server"]
    assert not any(path.startswith(".cache/dsh-query-") for path in WATCHED)
