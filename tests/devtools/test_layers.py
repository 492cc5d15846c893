"""The structure check (dsh_query_server/devtools/layers.py) on small package trees written here:
up-layer imports, import circles and long modules are reported; a tree that keeps the rules is
clean. The last test runs it on the real tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dsh_query_server.devtools.layers import Rules, check, imports, modules


def tree(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for rel, text in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [pkg, *(p for p in pkg.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return pkg


CLEAN = {
    "errors.py": "class QueryError(Exception): ...\n",
    "model/event.py": "from .. import errors\n",
    "session/fold.py": "from ..model.event import x\nfrom .store import y\n",
    "session/store.py": "from ..model import event\n",
    "query/service.py": "import pkg.session.fold\nfrom pkg.errors import QueryError\n",
    "server/app.py": "from ..query import service\nfrom ..search.index import z\n",
    "search/index.py": "from ..query.service import w\n",
    "cli.py": "from .server import app\nfrom .schema import main\nimport json\n",
    "devtools/tool.py": "from ..cli import main\n",
    "schema.py": "from .server.app import q\n",
}


def test_a_tree_that_keeps_the_rules_is_clean(tmp_path):
    assert check(tree(tmp_path, CLEAN)) == []


def test_an_import_up_a_layer_is_reported_with_its_line(tmp_path):
    files = dict(CLEAN)
    files["query/extra.py"] = "import os\n"
    files["mcp/tools.py"] = "from ..errors import QueryError\n"
    files["session/store.py"] = (
        "from ..model import event\n\n\ndef f():\n    from ..query import extra\n"
    )
    files["model/event.py"] = "from .. import errors\nfrom pkg.mcp.tools import main, other\n"
    found = check(tree(tmp_path, files))
    assert found == [
        "layer: pkg/model/event.py:2: model imports mcp (pkg.mcp.tools)",
        "layer: pkg/session/store.py:5: session imports query (pkg.query.extra)",
    ]


def test_base_utilities_import_no_layer_and_top_modules_are_importable_by_none(tmp_path):
    files = dict(CLEAN)
    files["errors.py"] = "from .model import event\n"
    files["cli.py"] = "from .devtools import tool\n"
    found = check(tree(tmp_path, files))
    assert "layer: pkg/errors.py:1: base imports model (pkg.model.event)" in found
    assert "layer: pkg/cli.py:1: cli imports top (pkg.devtools.tool)" in found


def test_mcp_imports_the_core_never_the_server(tmp_path):
    files = dict(CLEAN)
    files["core/runtime.py"] = "from ..query import service\n"
    files["mcp/tools.py"] = "from ..core import runtime\nfrom ..server.app import q\n"
    found = check(tree(tmp_path, files))
    assert found == ["layer: pkg/mcp/tools.py:2: mcp imports server (pkg.server.app)"]


def test_an_import_circle_is_reported_once_with_its_modules(tmp_path):
    files = dict(CLEAN)
    files["query/a.py"] = "from . import b\n"
    files["query/b.py"] = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    files["query/c.py"] = "from .a import thing\n"
    found = check(tree(tmp_path, files))
    assert found == ["circle: pkg.query.a <-> pkg.query.b <-> pkg.query.c"]


def test_a_long_module_is_reported(tmp_path):
    files = dict(CLEAN)
    files["query/long.py"] = "x = 1\n" * 601
    files["query/ok.py"] = "x = 1\n" * 600
    assert check(tree(tmp_path, files)) == [
        "size: pkg/query/long.py has 601 lines (over 600: split it by responsibility)"
    ]
    assert check(tree(tmp_path, files), Rules(max_lines=700)) == []


def test_a_backend_read_outside_persistence_is_reported(tmp_path):
    """Every read goes through the mount's door (persistence/reads.py): outside persistence/,
    naming a backend's optional read paths or calling one of its reads is reported, comments
    included (as ``grep`` finds them); inside persistence/ it is the door's business."""
    files = dict(CLEAN)
    files["persistence/reads.py"] = (
        "def window(b, t):\n    return b.capabilities.windows.inspect_window('s', 0, 1, t)\n"
    )
    files["query/service.py"] = (
        "def load(binding, t):\n"
        "    if binding.capabilities.windows:  # probing\n"
        "        return binding.backend.inspect('s', t)\n"
        "    binding.backend.list_snapshots(t)\n"
        "    return binding.logs.window('s', 0, 1, t)  # the door: fine\n"
    )
    files["search/index.py"] = "# reconcile calls inspect_many here\nx = b.list_one('s')\n"
    files["server/app.py"] = "r = export.read_raw('s')\ny = w.inspect_outline('s')\n"
    assert check(tree(tmp_path, files)) == [
        "door: pkg/query/service.py:2: reads a backend outside persistence/ (capabilities.)",
        "door: pkg/query/service.py:3: reads a backend outside persistence/ (.backend.inspect)",
        "door: pkg/query/service.py:4: reads a backend outside persistence/ (.backend.list)",
        "door: pkg/search/index.py:1: reads a backend outside persistence/ (inspect_many)",
        "door: pkg/search/index.py:2: reads a backend outside persistence/ (list_one)",
        "door: pkg/server/app.py:1: reads a backend outside persistence/ (read_raw)",
        "door: pkg/server/app.py:2: reads a backend outside persistence/ (inspect_outline)",
    ]
    files["query/service.py"] = "capabilities = 1  # a word, not an attribute read\n"
    files["search/index.py"] = "read_raw_header = inspect_windows = 1\n"
    files["server/app.py"] = "from ..query import service\n"
    assert check(tree(tmp_path, files)) == []


def test_a_module_in_no_layer_is_reported(tmp_path):
    files = dict(CLEAN)
    files["stray.py"] = "import os\n"
    assert check(tree(tmp_path, files)) == ["layer: pkg/stray.py is in no layer (stray)"]


def test_imports_resolve_relative_names_to_modules(tmp_path):
    pkg = tree(
        tmp_path, {**CLEAN, "query/deep/x.py": "from ... import errors\nfrom ..service import s\n"}
    )
    known = modules(pkg)
    found = imports("pkg.query.deep.x", known["pkg.query.deep.x"], known)
    assert [(i.target, i.line) for i in found] == [("pkg.errors", 1), ("pkg.query.service", 2)]
    init = imports("pkg.query", known["pkg.query"], known)
    assert init == []


def test_the_command_exits_non_zero_and_lists_the_offences(tmp_path):
    files = dict(CLEAN)
    files["model/event.py"] = "from ..server import app\n"
    pkg = tree(tmp_path, files)
    command = [sys.executable, "-m", "dsh_query_server.devtools.layers", str(pkg)]
    bad = subprocess.run(command, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "layer: pkg/model/event.py:1: model imports server (pkg.server.app)" in bad.stdout
    (pkg / "model" / "event.py").write_text("from .. import errors\n", encoding="utf-8")
    good = subprocess.run(command, capture_output=True, text=True)
    assert (good.returncode, good.stdout) == (0, "")


def test_the_package_itself_keeps_the_rules():
    """The structure check over dsh_query_server: no import up a layer, no circle, no module over
    600 lines (issue 13). A failure lists each offence with its file and line."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.devtools.layers"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
