"""Every `§` reference in the package, the tests and the benchmarks names a section of docs/.

"semantics.md §6.5" must be a numbered heading of docs/semantics.md; in "persistence.md
§4.7–§4.10" and "protocol.md §3–§5, §7" every number belongs to the file named first; a bare
"§3.0.6" must be a heading of some file in docs/. The README links docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = ("dsh_query_server", "tests", "bench")
SPEC_FILES = (
    "semantics",
    "persistence",
    "protocol",
    "editor",
    "importers",
    "tools",
    "postgres",
    "views",
)

HEADING = re.compile(r"^#{1,6}\s+(?:§\s*)?(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
# A file name, then a run of § numbers joined by commas, dashes, "and" or "to".
CHAIN = re.compile(
    r"(?:\b([a-z]+)\.md\s*)?(§\s*\d+(?:\.\d+)*(?:(?:\s*(?:,|–|-|—|and|to|/)\s*)§\s*\d+(?:\.\d+)*)*)"
)
NUMBER = re.compile(r"§\s*(\d+(?:\.\d+)*)")


def sections() -> dict[str, set[str]]:
    return {
        path.stem: set(HEADING.findall(path.read_text(encoding="utf-8")))
        for path in DOCS.glob("*.md")
    }


def references(text: str) -> list[tuple[str | None, str, int]]:
    """(file stem or None for bare, section number, line) for every § number in ``text``."""
    out: list[tuple[str | None, str, int]] = []
    for match in CHAIN.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        for number in NUMBER.findall(match.group(2)):
            out.append((match.group(1), number.rstrip("."), line))
    return out


def unresolved(files: list[Path], known: dict[str, set[str]], root: Path = ROOT) -> list[str]:
    everywhere = set().union(*known.values())
    missing: list[str] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for doc, number, line in references(text):
            ok = number in known.get(doc, set()) if doc else number in everywhere
            if not ok:
                name = f"{doc}.md §{number}" if doc else f"§{number}"
                missing.append(f"{path.relative_to(root)}:{line}: {name}")
    return missing


def test_references_are_parsed_with_their_file():
    text = "see semantics.md §6.5 and persistence.md §4.7–§4.10, protocol.md §3–§5, §7\n§3.0.6."
    assert references(text) == [
        ("semantics", "6.5", 1),
        ("persistence", "4.7", 1),
        ("persistence", "4.10", 1),
        ("protocol", "3", 1),
        ("protocol", "5", 1),
        ("protocol", "7", 1),
        (None, "3.0.6", 2),
    ]


def test_an_unknown_section_is_reported(tmp_path):
    known = {"semantics": {"1", "6.5"}, "protocol": {"2"}}
    source = tmp_path / "m.py"
    sign = "\N{SECTION SIGN}"  # spelled out: this file's own references must all resolve
    source.write_text(f"# semantics.md {sign}6.5, {sign}2\n# {sign}2 and {sign}9\n", "utf-8")
    found = unresolved([source], known, tmp_path)
    assert found == [f"m.py:1: semantics.md {sign}2", f"m.py:2: {sign}9"]


def test_the_spec_is_in_docs():
    for stem in SPEC_FILES:
        assert (DOCS / f"{stem}.md").is_file(), stem
    known = sections()
    assert {"3.0.6", "6.5", "7.1"} <= known["semantics"]
    assert {"2.1", "3.2"} <= known["persistence"]


def test_every_section_reference_resolves_in_docs():
    files = [p for name in SCANNED for p in sorted((ROOT / name).rglob("*.py"))]
    assert unresolved(files, sections()) == []


def test_the_readme_links_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/README.md)" in readme and "](docs/reference.md)" in readme
    assert "../shared/spec" not in readme
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for stem in SPEC_FILES:
        assert f"`{stem}.md`" in index, stem


def test_the_readme_names_every_mcp_tool():
    """The README lists the tools by name, with no count to go stale: each tool of the registry
    (mcp/args.py) is named in its "Use it from your agent" section."""
    from dsh_query_server.mcp.args import TOOLS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from your agent", 1)[1].split("\n## ", 1)[0]
    assert [t.name for t in TOOLS if f"`{t.name}`" not in section] == []
