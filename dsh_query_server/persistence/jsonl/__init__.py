"""The ``jsonl:`` backend (persistence.md §4), by responsibility:

- ``paths``: project directory keys and session-id escaping (§4.1–§4.3);
- ``header``: the header line codec and header-only reads (§4.4, §4.8);
- ``lines``: record lines and the committed-prefix scanner (§4.5);
- ``frames``: Zstandard frame structure (§4.6);
- ``decode``: whole-transcript decoding with seek hints (§4.5, §4.6);
- ``durable``: record encoding and durable writes (§4.11);
- ``survey``: the root survey and revisions (§4.7, §4.10);
- ``proofs``: the same survey, skipping directories whose stat proves them unchanged;
- ``listing``: the listed headers and revisions, kept while their stat proves them (§4.8);
- ``identity``: a transcript's header names its own path (§4.8 step 4.6);
- ``window``: window reads of a verified transcript (the shared algorithm is
  ../logical/windows.py);
- ``backend``: ``JsonlBackend`` itself.
"""

from .backend import JsonlBackend
from .decode import Decoded, decode_raw, decode_zstd
from .errors import JsonlBackendError, RollbackError
from .frames import scan_frames, zstd_frame
from .header import header_line
from .paths import COMPRESSIONS, TRANSCRIPT, escape_segment, project_dir
from .survey import revision_of, revision_of_key, stat_key

__all__ = [
    "COMPRESSIONS",
    "TRANSCRIPT",
    "Decoded",
    "JsonlBackend",
    "JsonlBackendError",
    "RollbackError",
    "decode_raw",
    "decode_zstd",
    "escape_segment",
    "header_line",
    "project_dir",
    "revision_of",
    "revision_of_key",
    "scan_frames",
    "stat_key",
    "zstd_frame",
]
