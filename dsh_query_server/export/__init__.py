"""Session export (tools.md §2): one ZIP of stored session logs, with sub-agents and media.

Every session in the corpus exports: a live one as its live log, a stored one as its raw artifact
when the backend exposes one, otherwise as its logical log (§2.2). The archive is written to a
private temporary file next to the target and published atomically (§2.4).

Modules: ``params`` (the method's params, options and result), ``archive`` (the method and the ZIP
writer), ``collect`` (which sessions and what each one's file holds), ``encode`` (a logical log as
the lines of §2.2), ``media`` (the image attachments of §2.3).
"""
