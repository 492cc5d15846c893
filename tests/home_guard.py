"""The test session writes nothing into the real home but its caches, ~/.cache/dsh-query-* (issue
25 finding 6).

Every process the tests start gets a temporary HOME and XDG folders (conftest.py), so a tool
that still writes into the real home bypassed them (a path computed from the password database,
an environment built from scratch, an explicit real path). ``HomeGuard`` watches the places the
tools the suite drives write to when they use the real home: each one absent when the session
starts must still be absent when it ends, or the session fails naming it. Places that exist
already are not watched (the guard cannot tell who wrote them), and another process that creates
one of them during the session is blamed on it too: the guard says so.
"""

from __future__ import annotations

from pathlib import Path

# Where each tool writes, relative to the home, when it is not given a home of its own.
WATCHED = (
    ".config/code-server",  # code-server's default config (with a password), on any start
    ".local/share/code-server",  # and its logs
    ".config/chromium",  # Chromium's profile and crash reports
    ".cache/chromium",
    ".pki",  # Chromium's NSS database
    ".cache/dconf",  # GLib, loaded by Chromium
    ".cache/ms-playwright",  # Playwright's browsers (we use Debian's chromium)
    ".npm",  # npm's cache and logs
    ".config/configstore",  # npm's update check
    ".cache/node-gyp",  # Node headers for native modules
    ".cache/pip",
    ".cache/nvim",
    ".local/share/nvim",
    ".local/state/nvim",
    ".cache/dsh-query",  # our own search index, store and state
    ".local/state/dsh-query",
    ".dsh",
)


class HomeGuard:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.watched = [path for path in WATCHED if not (home / path).exists()]

    def created(self) -> list[str]:
        """The watched places that exist now."""
        return [path for path in self.watched if (self.home / path).exists()]

    def report(self) -> str | None:
        created = self.created()
        if not created:
            return None
        places = ", ".join(str(self.home / path) for path in created)
        return (
            f"the test session wrote outside the repository and its caches: {places} appeared"
            " while it ran (if another process made them at the same time, remove them and run"
            " again)"
        )
