"""A second core for an importer's bulk read (the search index build, issue 28) [ours].

Mapping a transcript to its logical log is pure CPU; the index build spends most of its time
there. ``ReadWorker`` runs a child process (``python -m`` this module) holding its own instance of
the same backend, which answers ``inspect(id)`` with the log's bytes: the header's and each
event's JSON, from which the caller rebuilds the very same objects (``Header.from_json``,
``Event.from_json``). A request may name a ``Digest`` instead: the child runs it on the
Inspection and answers the header and the digest's bytes (``Digested``), so the index build has
the child make the documents too and only they cross the pipe. ``ImportBackend.inspect_many``
shares the ids between the worker and itself (see there).

The answers must stay exact whatever happens to the child, so the channel is strict:

- its own pipe pair (passed as fds; the child's stdin/stdout/stderr are /dev/null, so nothing a
  library prints can fall into it);
- every frame is ``MAGIC``, a 4-byte big-endian length and a msgpack payload of a fixed type,
  read to its exact length whatever the pipe hands back per read (short reads and EINTR, as
  under a profiler's ptrace, are the norm);
- every answer names the request it answers and the id asked.

Anything else (EOF, a bad magic, a payload that does not decode as its type, an answer to
another request, a failure in the child) marks the worker ``broken``: the caller reads whatever
it had asked of it in process, exactly as without a worker. A failed ``inspect`` in the child is
not sent as an error either: the caller reads that id itself, so errors are the in-process ones.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import itertools
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, cast

import msgspec

from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Event, Header
from ..contract.results import Digest, Digested, EventOutline, Inspection, Payloads, Reading

MAGIC = b"DQW1"
_HEAD = len(MAGIC) + 4
MAX_FRAME = 1 << 31


class Init(msgspec.Struct, tag=True):
    module: str
    cls: str
    home: str
    uri: str
    options: dict[str, Any]


class Request(msgspec.Struct, tag=True):
    ident: int
    session_id: str
    payloads: Reading | None = None
    digest: tuple[str, str] | None = None  # a ``Digest``: (module, name)


class Answer(msgspec.Struct, tag=True):
    """The head of an answer; the events' JSON follows it in the same frame, back to back
    (``ends``: where each one ends), so neither side holds a second copy per event."""

    ident: int
    session_id: str
    ok: bool
    meta: bytes = b""
    ends: list[int] = msgspec.field(default_factory=list[int])
    # the EventOutlines among the events, each with its position in the log
    outlines: list[tuple[int, EventOutline]] = msgspec.field(
        default_factory=list[tuple[int, EventOutline]]
    )
    digested: bool = False  # the body is the digest's parts (``ends``), not events


class Broken(Exception):
    """The channel to the worker can no longer be trusted."""


def write_frame(fd: int, *parts: bytes) -> None:
    """One frame of ``parts`` back to back, written without joining them."""
    size = sum(len(p) for p in parts)
    views = [memoryview(MAGIC + size.to_bytes(4, "big"))] + [memoryview(p) for p in parts if p]
    i = 0
    while i < len(views):
        n = os.writev(fd, views[i : i + 64])
        while n:
            if n >= len(views[i]):
                n -= len(views[i])
                i += 1
            else:
                views[i] = views[i][n:]
                n = 0


# A frame up to this size is read into one buffer made for it: joining the pieces a pipe hands
# back held a long log's answer twice for a moment (its peak, in the server). A larger one (never
# from an answer of a log the worker takes) is read piece by piece, so a size that a broken
# channel made up costs no memory before the stream ends.
PREALLOCATE = 64 << 20


def read_exact(fd: int, n: int) -> bytes | bytearray:
    """Exactly ``n`` bytes, however many reads it takes; EOF first raises Broken."""
    if n <= PREALLOCATE:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = os.readv(fd, [view[got:]])
            if not k:
                raise Broken("end of stream")
            got += k
        return buf
    parts: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise Broken("end of stream")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_frame(fd: int) -> bytes | bytearray:
    head = read_exact(fd, _HEAD)
    if head[: len(MAGIC)] != MAGIC:
        raise Broken(f"bad frame magic {head[: len(MAGIC)]!r}")
    size = int.from_bytes(head[len(MAGIC) :], "big")
    if size > MAX_FRAME:
        raise Broken(f"frame of {size} bytes")
    return read_exact(fd, size)


_encode = msgspec.msgpack.encode
_answer = msgspec.msgpack.Decoder(Answer)
_request = msgspec.msgpack.Decoder(Init | Request)


def split_answer(frame: bytes | bytearray) -> tuple[Answer, memoryview]:
    """The head (a length-prefixed msgpack Answer) and the events' bytes of one frame."""
    if len(frame) < 4:
        raise Broken("a frame without a head")
    size = int.from_bytes(frame[:4], "big")
    if 4 + size > len(frame):
        raise Broken("a head longer than its frame")
    try:
        answer = _answer.decode(memoryview(frame)[4 : 4 + size])
    except msgspec.DecodeError as exc:
        raise Broken(f"a head that does not decode: {exc}") from None
    body = memoryview(frame)[4 + size :]
    if (answer.ends[-1] if answer.ends else 0) != len(body) or answer.ends != sorted(answer.ends):
        raise Broken("event ends that do not match the frame")
    return answer, body


def inspection_of(answer: Answer, body: memoryview) -> Inspection | Digested:
    """The Inspection the child read, rebuilt from its bytes (or its Digested form)."""
    try:
        meta = Header.from_json(answer.meta)
        if answer.digested:
            if answer.outlines:
                raise Broken("a digest answer with events")
            return Digested(meta, body, answer.ends)  # the frame's own bytes: no copy
        events: list[Event] = []
        start = 0
        outlines = iter(answer.outlines)
        outline = next(outlines, None)
        for end in answer.ends:
            while outline is not None and outline[0] == len(events):
                events.append(cast(Event, outline[1]))
                outline = next(outlines, None)
            events.append(Event.from_json(bytes(body[start:end])))
            start = end
        while outline is not None and outline[0] == len(events):
            events.append(cast(Event, outline[1]))
            outline = next(outlines, None)
        if outline is not None:
            raise Broken("outlines out of order")
        return Inspection(meta, events)
    except ValueError as exc:
        raise Broken(f"an answer that does not decode: {exc}") from None


# The answers' pipe, widened from 64 KiB: a frame of documents is then written in a few large
# pieces, and the caller's feeder thread, which needs the GIL between two reads, is woken a few
# times per frame rather than once per 64 KiB while this process inserts (issue 28) [ours].
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):  # past /proc/sys/fs/pipe-max-size, or not Linux
        pass


DigestFn = Callable[[str, Inspection], list[bytes]]


def thread_nice() -> int:
    """The calling thread's nice value (Linux gives each thread its own: the search warm-up
    runs at +10, and a child started from it inherits that)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except (AttributeError, OSError):
        return 0


def load_digest(digest: Digest) -> DigestFn:
    """The function a Digest names (its module imported)."""
    return cast(DigestFn, getattr(importlib.import_module(digest.module), digest.name))


class ReadWorker:
    """One child reading for bulk reads, one at a time (pool.py keeps it between them), each
    begun by ``init``. Not thread-safe: one caller drives it."""

    def __init__(self) -> None:
        self.nice = thread_nice()  # the child's, inherited from the thread that starts it
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        _widen(up_w)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(down_r), str(up_w)],
                pass_fds=(down_r, up_w),
                # glibc: large blocks (a long line, an event's bytes) mapped apart and returned
                # at once when freed, so a worker reading thousands of logs does not keep the
                # heap of the largest ones (its peak stays one log, not a fragmented heap).
                env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except BaseException:
            for fd in (down_r, down_w, up_r, up_w):
                os.close(fd)
            raise
        os.close(down_r)
        os.close(up_w)
        self._out, self._in = down_w, up_r
        self._next = 0
        self.broken = False
        self.outstanding: dict[int, str] = {}  # request -> id asked
        self.last_size = 0  # the bytes of the last answer's frame

    def init(self, spec: Init) -> None:
        """The backend the next requests read from: the child builds it (or takes the one it
        built for the same ``spec``) and lists its home anew (raises Broken)."""
        if self.broken:
            raise Broken("worker broken")
        try:
            write_frame(self._out, _encode(spec))
        except OSError as exc:
            self.broken = True
            raise Broken(str(exc)) from None

    def renice(self, nice: int) -> None:
        """Lower the child's priority to ``nice`` (never raise it: that needs a privilege)."""
        if nice > self.nice:
            try:
                os.setpriority(os.PRIO_PROCESS, self.process.pid, nice)
                self.nice = nice
            except OSError:
                pass

    @property
    def idle(self) -> bool:
        """Alive, trusted, and nothing asked of it is unanswered: fit for another bulk read."""
        return not self.broken and not self.outstanding and self.process.poll() is None

    def send(self, session_id: str, payloads: Payloads = None, digest: Digest | None = None) -> int:
        """Ask for one id; returns the request's number (raises Broken)."""
        if self.broken:
            raise Broken("worker broken")
        self._next += 1
        named = None if digest is None else (digest.module, digest.name)
        try:
            write_frame(self._out, _encode(Request(self._next, session_id, payloads, named)))
        except OSError as exc:
            self.broken = True
            raise Broken(str(exc)) from None
        self.outstanding[self._next] = session_id
        return self._next

    def ready(self) -> bool:
        """An answer can be read without waiting."""
        return bool(select.select([self._in], [], [], 0)[0])

    def receive(self, token: CancelToken = NULL_TOKEN) -> tuple[int, Inspection | Digested | None]:
        """The next answer: its request and the Inspection (or Digested), or None when the child could not
        read that id (the caller reads it itself). Raises Broken, or the token's cancellation."""
        try:
            while not select.select([self._in], [], [], 0.1)[0]:
                token.raise_if_cancelled()
                if self.process.poll() is not None and not self.ready():
                    raise Broken("worker exited")
            frame = read_frame(self._in)
            self.last_size = len(frame)
            answer, body = split_answer(frame)
        except OSError as exc:
            self.broken = True
            raise Broken(str(exc)) from None
        except Broken:
            self.broken = True
            raise
        asked = self.outstanding.pop(answer.ident, None)
        if asked is None or asked != answer.session_id:
            self.broken = True
            raise Broken(f"an answer to request {answer.ident} for {answer.session_id!r}")
        if not answer.ok:
            return answer.ident, None
        try:
            inspection = inspection_of(answer, body)
            del body, frame  # the frame's memory goes back before the caller works
            return answer.ident, inspection
        except Broken:
            self.broken = True
            raise

    def kill(self) -> None:
        """Stop the child at once (safe from another thread: the reader then sees it exit)."""
        if self.process.returncode is None:
            self.process.kill()

    def close(self) -> None:
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


# The child's collector thresholds: a read makes no reference cycles (decoded JSON, events), so
# the collector's passes over the many young objects of a transcript are pure cost (~8% of the
# child's CPU on bench.readside); a tenth as many passes still reclaims any cycle (issue 28).
GC_THRESHOLD = (100_000, 50, 100)


# Backends a child keeps, one per Init (a composite's members, read in turn by one worker).
KEPT_BACKENDS = 16


def serve(read_fd: int, write_fd: int) -> None:
    """The child: answer requests until EOF, each from the backend the last Init named (built
    once per Init, and listed again at each: see ``_begin``)."""
    gc.set_threshold(*GC_THRESHOLD)
    backends: dict[bytes, Any] = {}  # an ImportBackend per encoded Init
    backend: Any = None
    token = CancelToken()
    digests: dict[tuple[str, str], DigestFn] = {}
    while True:
        try:
            request = _request.decode(read_frame(read_fd))
        except (Broken, msgspec.DecodeError):  # EOF (the pool closed it) or a bad frame
            return
        if isinstance(request, Init):
            backend, token = _begin(backends, request)
            continue
        if backend is None:
            return  # a request before any Init: the caller sees EOF and reads it itself
        try:
            ins = backend.inspect_payloads(request.session_id, request.payloads, token)
            if request.digest is None:
                answer, raws = _events_answer(request, ins)
            else:
                digest = digests.get(request.digest)
                if digest is None:
                    digest = digests[request.digest] = load_digest(Digest(*request.digest))
                raws = digest(request.session_id, ins)
                meta = bytes(ins.meta.raw)
                ends = list(itertools.accumulate(map(len, raws)))
                answer = Answer(request.ident, request.session_id, True, meta, ends, digested=True)
            del ins
        except Exception:  # noqa: BLE001 - the caller reads this id itself, errors and all
            answer, raws = Answer(request.ident, request.session_id, False), []
        head = _encode(answer)
        write_frame(write_fd, len(head).to_bytes(4, "big"), head, *raws)
        del raws, head  # before the next read: two long logs are never held at once


def _begin(backends: dict[bytes, Any], init: Init) -> tuple[Any, CancelToken]:
    """The backend ``init`` names, and a token of the worker's own under which it has just
    listed its home: each inspect then finds its transcript in that survey (as the server's
    request does in its own), instead of proving the whole listing again per id. A kept backend
    lists again: a bulk read must see the home as it is at its start, and its listing's proofs
    make an unchanged home's second listing a few stats (survey.py)."""
    key = _encode(init)
    backend = backends.pop(key, None)
    if backend is None:
        cls = getattr(importlib.import_module(init.module), init.cls)  # an ImportBackend
        backend = cls(init.home, init.uri, **init.options)
    backends[key] = backend  # the most recent last
    while len(backends) > KEPT_BACKENDS:
        del backends[next(iter(backends))]
    token = CancelToken()
    backend.list(token)
    return backend, token


def _events_answer(request: Request, ins: Inspection) -> tuple[Answer, list[bytes]]:
    """The answer of an Inspection sent as its events' own bytes, outlines apart."""
    raws: list[bytes] = []
    ends: list[int] = []
    outlines: list[tuple[int, EventOutline]] = []
    at = 0
    for k, event in enumerate(cast(list[Event | EventOutline], ins.events)):
        if isinstance(event, EventOutline):
            outlines.append((k, event))
            continue
        raws.append(bytes(event.raw))  # the event's own bytes: no copy
        at += len(event.raw)
        ends.append(at)
    meta = bytes(ins.meta.raw)
    return Answer(request.ident, request.session_id, True, meta, ends, outlines), raws


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
