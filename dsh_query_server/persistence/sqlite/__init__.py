"""The ``sqlite:`` backend (persistence.md §5), by responsibility:

- ``location``: file safety (§5.3);
- ``schema``: identity, schema, settings and the opening transaction (§5.2, §5.4);
- ``codec``: text, provenance and ``data`` column codecs (§5.5);
- ``rows``: events rows written and read, the committed-prefix rule (§5.5, §5.6);
- ``sessions``: sessions rows and their rules (§5.4, §5.6 step 2);
- ``queries``: the read statements and stored tail discovery (§5.6, §5.7);
- ``backend``: ``SqliteBackend``, its window reads through ../logical/windows.py.
"""

from .backend import RowHints, SqliteBackend
from .codec import MalformedProvenance, decode_provenance, encode_provenance, stored_data
from .schema import APPLICATION_ID, USER_VERSION, SessionDatabaseRefused

__all__ = [
    "APPLICATION_ID",
    "USER_VERSION",
    "MalformedProvenance",
    "RowHints",
    "SessionDatabaseRefused",
    "SqliteBackend",
    "decode_provenance",
    "encode_provenance",
    "stored_data",
]
