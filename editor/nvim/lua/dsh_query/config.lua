-- Options of the dsh-query Neovim client. `require("dsh_query").setup(opts)` merges `opts` into
-- these defaults (deeply, so `{ read_window = { after = 5 } }` keeps `before`).
local M = {}

M.defaults = {
  -- How to start the server (a stdio language server). Any argv works, e.g.
  -- { "dsh-query", "serve" } or { "/path/to/.venv/bin/python", "-m", "dsh_query_server", "--demo" }.
  cmd = { "python3", "-m", "dsh_query_server" },
  cmd_env = nil, -- extra environment for the server process
  cmd_cwd = nil, -- working directory of the server process
  -- Use the one server your command line, editors and agents share (`dsh-query hub`, started
  -- when none runs), keyed by `init_options`: over its Unix socket on Neovim 0.10+, through a
  -- `dsh-query hub connect` stdio bridge before. The bridge's argv is derived from `cmd`
  -- (`… -m dsh_query_server …` or `dsh-query serve …`) unless `hub_cmd` gives it. Off (or with
  -- `--demo`/`--tcp` in `cmd`, or `tcp` set): `cmd` runs a private server as before.
  hub = true,
  hub_cmd = nil, -- e.g. { "dsh-query", "hub", "connect" }
  -- After the hub connection drops: reconnect (starting a hub if needed) after these delays, in
  -- milliseconds, then refresh the open trees.
  reconnect_ms = { 250, 500, 1000, 2000, 4000, 8000, 15000 },
  -- Connect to a server already listening on a loopback TCP port (`dsh-query serve --tcp H:P`)
  -- instead of starting one: "127.0.0.1:7777". Needs Neovim 0.8+ (vim.lsp.rpc.connect).
  tcp = nil,
  -- Sent as `initializationOptions`, overriding the server's flags key by key, e.g.
  -- { persistence = "jsonl:/home/me/.dsh/sessions", index = ":memory:", readWindowMax = 50 }.
  init_options = {},
  -- LSP client name; an already running client of this name (for example one you configured with
  -- nvim-lspconfig or vim.lsp.config) is reused instead of starting a second server.
  name = "dsh_query",
  -- Use vim.lsp.start_client even where vim.lsp.start exists (Neovim 0.8+). On 0.7 the
  -- start_client path is the only one.
  use_start_client = false,
  -- Milliseconds to wait for `initialize` before queued requests fail.
  start_timeout_ms = 15000,
  -- Events shown around the target by :DshRead / <CR> on an event (bounded by readWindowMax).
  read_window = { before = 2, after = 2 },
  -- Hits per page of :DshSearch (null = the server's search.defaultLimit).
  search_limit = nil,
  -- Where trees and event windows open (any Ex command that makes a window).
  tree_split = "topleft vsplit",
  tree_width = 70, -- columns of a vertical tree split; nil keeps Vim's size
  read_split = "belowright split",
  -- End tree lines with `{{{N` / `}}}N` fold markers around each expanded subtree
  -- (foldmethod=marker; concealed by the dshquery syntax), so zc / zo / zM / zR fold subtrees.
  fold_markers = true,
  -- codicon name -> text icon; merged over the built-in table (see lua/dsh_query/icons.lua).
  icons = {},
  ascii_icons = false, -- plain ASCII icons for terminals/fonts without the symbols
  -- Set to false to leave every mapping to you (see :help dsh-query-mappings).
  mappings = true,
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- lists are replaced, not merged: tbl_deep_extend would merge cmd = {"a"} into the default argv
  if opts and opts.cmd then
    M.options.cmd = opts.cmd
  end
  return M.options
end

return M
