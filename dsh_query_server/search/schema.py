"""The index database: opening safety (semantics.md §6.3) and the schema (§6.2).

The index is derived and disposable, but the path may name somebody else's file, so nothing in a
file is modified until it is known to be empty or ours. The live overlay lives in TEMP tables on
the service's single connection and disappears with it.

The connection is APSW's: it brings a current SQLite and lets the index register an FTS5
auxiliary function. ``match_spans`` counts a document's merged phrase spans from the phrase's
token positions (§6.8), where ``highlight()`` re-tokenized the whole document only to be measured;
ranking a phrase with thousands of matches took twice as long. The file is a plain SQLite
database, readable by Python's sqlite3 as before.
"""

from __future__ import annotations

import os
import re
from typing import cast, overload

import apsw

from .. import errors
from ..errors import QueryError
from ..files import make_private_dirs
from .config import JOURNAL_MODES

APPLICATION_ID = 0x44534851
SCHEMA_VERSION = 9  # 9: sessions tables keep the header's `source` (importers.md §4.4)
MEMORY_PATH = ":memory:"

DERIVED_TABLES = frozenset(
    {
        "search_state",
        "persisted_sessions",
        "persisted_docs",
        "persisted_docs_data",
        "persisted_docs_idx",
        "persisted_docs_content",
        "persisted_docs_docsize",
        "persisted_docs_config",
    }
)

FTS_HASHSIZE = 8 * 1024 * 1024
PAGE_SIZE = 16384
_DOC_COLUMNS = (
    "text, session_id UNINDEXED, seq UNINDEXED, type UNINDEXED, time UNINDEXED, "
    "surface UNINDEXED, codepoint_length UNINDEXED, tokenize = 'unicode61'"
)
_HEADER_COLUMNS = (
    "id TEXT PRIMARY KEY, version INTEGER NOT NULL, created_at INTEGER NOT NULL, cwd TEXT, "
    "parent_session TEXT, seed_length INTEGER, delegation_depth INTEGER, agent_preset TEXT, "
    "source TEXT"
)
_PERSISTENT_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS search_state (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), "
    "global_generation INTEGER NOT NULL) STRICT",
    "INSERT OR IGNORE INTO search_state (singleton, global_generation) VALUES (1, 0)",
    f"CREATE TABLE IF NOT EXISTS persisted_sessions ({_HEADER_COLUMNS}, revision TEXT NOT NULL, "
    "generation INTEGER NOT NULL) STRICT",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS persisted_docs USING fts5({_DOC_COLUMNS})",
    # The FTS5 settings of the persisted table, each set once (a value already there stays)
    # [ours]:
    # - hashsize: FTS5 flushes its pending terms to a new segment each 1 MiB by default; a first
    #   build then merges hundreds of small segments. 8 MiB made the build's inserts ~25%
    #   cheaper on the real-content home (bench/realhome.py).
    # - automerge: a level's segments are merged once 16 of them exist, not 4, so a build
    #   rewrites each posting about log16 rather than log4 times: the inserts of the 305 MB
    #   real-content home took 1.5 s of CPU instead of 1.8 s, and a term's search there stayed
    #   at ~1 ms. crisismerge must stay above it.
    *(
        f"INSERT INTO persisted_docs(persisted_docs, rank) SELECT '{key}', {value} "
        f"WHERE NOT EXISTS (SELECT 1 FROM persisted_docs_config WHERE k = '{key}')"
        for key, value in (("hashsize", FTS_HASHSIZE), ("automerge", 16), ("crisismerge", 64))
    ),
)
_TEMP_SCHEMA = (
    f"CREATE TEMP TABLE live_sessions ({_HEADER_COLUMNS}, fingerprint TEXT NOT NULL, "
    "persisted INTEGER NOT NULL CHECK (persisted IN (0, 1)), generation INTEGER NOT NULL) STRICT",
    f"CREATE VIRTUAL TABLE temp.live_docs USING fts5({_DOC_COLUMNS})",
)

_USER_TABLES = (
    "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT GLOB 'sqlite_*'"
)

# NUL and the two highlight markers may not occur in indexed text or queries (§8 point 24). Lone
# surrogates have no UTF-8 form; SQLite could not store them at all.
_RESERVED = re.compile("[\x00\ufdd0\ufdd1\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def sanitize(text: str) -> str:
    """Document and query text as the index sees it: reserved code points become U+FFFD."""
    if text.isascii():  # O(1) in CPython; most tool output: then only NUL can be reserved
        return text if "\x00" not in text else text.replace("\x00", REPLACEMENT)
    # Three substring tests and a UTF-8 encoding (which refuses a lone surrogate) run in C at
    # ~3x the regular expression's speed; it then replaces only in the rare text that needs it.
    if "\x00" not in text and "\ufdd0" not in text and "\ufdd1" not in text:
        try:
            text.encode()
        except UnicodeEncodeError:
            pass
        else:
            return text
    return _RESERVED.sub(REPLACEMENT, text)


@overload
def sql_text(value: str) -> str: ...
@overload
def sql_text(value: object) -> object: ...
def sql_text(value: object) -> object:
    """A value bound to SQLite: strings lose lone surrogates (U+FFFD); other values pass."""
    if isinstance(value, str) and _SURROGATE.search(value):
        return _SURROGATE.sub(REPLACEMENT, value)
    return value


def open_failed(detail: str) -> QueryError:
    return QueryError(
        errors.INDEX_FAILED, f"session-search SQLite index failed to open: {detail}", cause=detail
    )


def _detail(exc: BaseException) -> str:
    # An OSError's text embeds the host path; strerror names the failure without it.
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return text or "session-search dependency rejected with a non-Error value"


INDEX_CACHE_KIB = 8192
OVERLAY_CACHE_KIB = 4096


Connection = apsw.Connection
Error = apsw.Error


def match_spans(api: apsw.FTS5ExtensionApi, *_args: apsw.SQLiteValue) -> int:
    """FTS5 auxiliary function: the number of spans highlight() would mark in the one indexed
    column for the one phrase of a search (§6.8): overlapping instances merge, adjacent ones do
    not (§8 point 23)."""
    last = len(api.phrases[0]) - 1  # the phrase's tokens; a match has at least one
    if last == 0:
        return api.inst_count  # one-token instances never overlap; only text is indexed
    count, end = 0, -1
    for start in api.phrase_locations(0)[0]:  # instance offsets in the text column, ascending
        if start > end:
            count += 1
        if start + last > end:
            end = start + last
    return count


# FTS5 keeps at most this many bytes of a token (FTS5_MAX_TOKEN_SIZE); a token of more than a
# quarter of it in code points could be cut, so the finder leaves such documents to highlight().
_MAX_TOKEN_CHARS = 32768 // 4
_DOCUMENT = apsw.FTS5_TOKENIZE_DOCUMENT
_ASCII_TOKEN = re.compile(r"[0-9a-z]+")
_ASCII_SEPARATORS = "[^0-9A-Za-z]+"


class PhraseFinder:
    """Where ``highlight()`` puts a document's first START marker: the start of the phrase's
    first instance (§6.8; overlapping instances merge into a span that starts there).

    The page of a search reads its rows by rowid and finds that offset here, with the index's
    own ``unicode61`` tokenizer, instead of a second ``MATCH`` scan for ``highlight()`` (which
    cost more than the ranking statement for rare phrases). The text is tokenized a growing
    prefix at a time: unicode61 splits at each separator code point, so only a prefix's last
    token can differ from the whole text's."""

    def __init__(self, conn: apsw.Connection, query: str) -> None:
        self._tokenize = conn.fts5_tokenizer("unicode61")
        tokens = self._tokenize(
            query.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_colocated=False
        )
        self.phrase: list[str] = [token for _, _, token in tokens]
        self._usable = bool(self.phrase) and all(
            len(token) <= _MAX_TOKEN_CHARS for token in self.phrase
        )
        # On ASCII text unicode61 is exactly this: tokens are runs of [0-9A-Za-z], folded to
        # lower case, so a regex finds the first instance in C (the tokenizer builds a Python
        # tuple per token). A text short enough that FTS5 cannot have cut a token.
        self._pattern: re.Pattern[str] | None = None
        if self._usable and all(_ASCII_TOKEN.fullmatch(token) for token in self.phrase):
            body = _ASCII_SEPARATORS.join(map(re.escape, self.phrase))
            self._pattern = re.compile(
                rf"(?<![0-9A-Za-z]){body}(?![0-9A-Za-z])", re.IGNORECASE | re.ASCII
            )

    def first(self, text: str, chunk: int = 2048) -> int | None:
        """The code-point offset of the first instance, or None when the finder cannot say
        (no instance found, or a token FTS5 might have cut): the caller asks highlight()."""
        if not self._usable:
            return None
        if self._pattern is not None and len(text) <= _MAX_TOKEN_CHARS and text.isascii():
            found = self._pattern.search(text)
            return None if found is None else found.start()
        data = text.encode()
        phrase, n = self.phrase, len(self.phrase)
        head = phrase[0]
        size = chunk
        while True:
            whole = size >= len(data)
            end = len(data)
            if not whole:
                end = size
                while data[end] & 0xC0 == 0x80:  # back to a code point boundary
                    end -= 1
            # Without colocated tokens each is (start, end, token), byte offsets.
            tokens = cast(
                "list[tuple[int, int, str]]",
                self._tokenize(data[:end], _DOCUMENT, None, include_colocated=False),
            )
            words = [token for _, _, token in tokens]
            usable = len(words) if whole else len(words) - 1  # the cut may split the last
            if end > _MAX_TOKEN_CHARS and max(map(len, words), default=0) > _MAX_TOKEN_CHARS:
                return None
            i = -1
            while True:
                try:
                    i = words.index(head, i + 1, usable - n + 1)
                except ValueError:
                    break
                if words[i : i + n] == phrase:
                    return len(data[: tokens[i][0]].decode())
            if whole:
                return None
            size *= 4


def scalar(conn: apsw.Connection, sql: str) -> int | None:
    """The integer (or NULL) of a statement that yields one row: an aggregate or a pragma."""
    for (value,) in conn.execute(sql):
        if value is None or isinstance(value, int):
            return value
        break
    raise apsw.MismatchError(f"not one integer from {sql}")


def connect(target: str) -> apsw.Connection:
    """The index connection (autocommit; transactions are explicit) with ``match_spans``."""
    conn = apsw.Connection(target)
    conn.register_fts5_function("match_spans", match_spans)
    return conn


def open_index(path: str, journal_mode: str) -> apsw.Connection:
    """Open (creating if needed) the index at ``path`` and add the TEMP overlay; raise
    INDEX_FAILED (`failed to open`) for a refused file or any filesystem or SQLite failure."""
    conn: apsw.Connection | None = None
    try:
        target = path if path == MEMORY_PATH else _prepare_file(path)
        conn = connect(target)
        _check_and_reset(conn)
        if journal_mode not in JOURNAL_MODES:
            raise ValueError(f"unsupported journal mode {journal_mode!r}")
        # 16 KiB pages for a new file (an existing one keeps its own): fewer overflow pages for
        # the long tool outputs a transcript holds, and ~15% less CPU inserting the 305 MB
        # real-content home, a term's search as fast (§6.3) [ours].
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute(f"PRAGMA journal_mode = {journal_mode}").fetchall()
        if journal_mode == "wal":
            # A derived index needs no fsync per commit: WAL with NORMAL stays consistent when
            # the process is killed (and on power loss may lose only the last commits, which the
            # next reconcile redoes). FULL cost ~0.3 s a 305 MB build in fsyncs (§6.3) [ours].
            conn.execute("PRAGMA synchronous = NORMAL")
        _transaction(
            conn,
            *_PERSISTENT_SCHEMA,
            f"PRAGMA application_id = {APPLICATION_ID}",
            f"PRAGMA user_version = {SCHEMA_VERSION}",
        )
        for statement in _TEMP_SCHEMA:
            conn.execute(statement)
        # SQLite's default page cache is 2 MiB per database: every search then re-read the
        # posting lists and content rows of its candidates from the OS. 8 + 4 MiB hold a common
        # phrase's and stay within the memory budget.
        conn.execute(f"PRAGMA main.cache_size = {-INDEX_CACHE_KIB}")
        conn.execute(f"PRAGMA temp.cache_size = {-OVERLAY_CACHE_KIB}")
        return conn
    except QueryError:
        _close_quietly(conn)
        raise
    except (OSError, ValueError, apsw.Error) as exc:
        _close_quietly(conn)
        raise open_failed(_detail(exc)) from None


def _prepare_file(path: str) -> str:
    """§6.3 step 1: absolute path, parents 0700, a missing file created exclusively at 0600."""
    absolute = os.path.abspath(path)
    make_private_dirs(os.path.dirname(absolute))
    try:
        fd = os.open(absolute, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return absolute  # an existing file keeps its mode
    try:
        os.fchmod(fd, 0o600)  # the umask must not widen or narrow it
    finally:
        os.close(fd)
    return absolute


def _check_and_reset(conn: apsw.Connection) -> None:
    """§6.3 steps 2–6: refuse foreign or unknown content before touching anything."""
    application_id = scalar(conn, "PRAGMA application_id")
    user_version = scalar(conn, "PRAGMA user_version")
    tables = [row[0] for row in conn.execute(_USER_TABLES)]
    if application_id not in (0, APPLICATION_ID):
        raise open_failed(
            f"the index file belongs to another application (application_id {application_id})"
        )
    if application_id == 0 and tables:
        raise open_failed("the index file is neither empty nor a session-search index")
    unknown = sorted(name for name in tables if name not in DERIVED_TABLES)
    if unknown:
        raise open_failed(f'the index file contains the unknown table "{unknown[0]}"')
    if tables and user_version != SCHEMA_VERSION:
        _drop_derived(conn, tables)


def _drop_derived(conn: apsw.Connection, tables: list[str]) -> None:
    """§6.3 step 6: an index of another schema version is rebuilt from nothing. Dropping the FTS5
    table drops its shadow tables, hence IF EXISTS; every name is from DERIVED_TABLES."""
    drops = ["DROP TABLE IF EXISTS persisted_docs"]
    drops += [f'DROP TABLE IF EXISTS "{name}"' for name in tables if name != "persisted_docs"]
    _transaction(conn, *drops, "PRAGMA user_version = 0")


def _transaction(conn: apsw.Connection, *statements: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in statements:
            conn.execute(statement).fetchall()
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _close_quietly(conn: apsw.Connection | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except apsw.Error:
            pass
