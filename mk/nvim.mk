# Neovim client (editor/nvim): tests/editors/nvim/ drives Debian's neovim headless.
# Included by the Makefile's `-include mk/*.mk` (which defines SUDO and BIN).

.PHONY: nvim-deps test-nvim

TEST_DEPS += nvim-deps

# Idempotent: nothing to do when nvim is on PATH (any version from 0.7.2 on works).
nvim-deps:
	@command -v nvim >/dev/null || $(call apt_install,neovim)

# Only the Neovim tests.
test-nvim: install nvim-deps
	$(BIN)/python -m pytest -q tests/editors/nvim $(PYTEST_ARGS)
