"""Shared pytest configuration."""


def pytest_configure(config):
    # Selectable with `-m e2e` / deselectable with `-m "not e2e"`; runs by default.
    config.addinivalue_line("markers", "e2e: end to end in a real VS Code (code-server + headless Chromium)")
