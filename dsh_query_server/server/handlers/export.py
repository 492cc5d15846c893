"""Session export (tools.md §2.4): the ZIP written to a server-side path."""

from __future__ import annotations

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...export.archive import export_session
from ...export.params import ExportParams, ExportResult, export_options
from ..registry import method


@method(
    "sessionQuery/exportSession",
    params=ExportParams,
    result=ExportResult,
    errors=(
        E.INVALID_REQUEST,
        E.INVALID_CONFIG,
        E.ABORTED,
        *E.LOAD,
        E.INVALID_LINEAGE,
        E.EXPORT_FAILED,
    ),
)
def export(rt: Runtime, p: ExportParams, token: CancelToken) -> ExportResult:
    """Write a session (and its descendants) as the tools.md §2.4 ZIP to a server-side path."""
    return export_session(
        rt.service,
        p.sessionId,
        p.outputPath,
        export_options(rt.config.raw),  # INVALID_CONFIG, checked per call as the config is raw
        include_descendants=p.includeDescendants is True,  # null is absent: the defaults
        include_media=p.includeMedia is not False,
        overwrite=p.overwrite is True,
        workspace_roots=p.workspaceRoots,
        token=token,
    )
