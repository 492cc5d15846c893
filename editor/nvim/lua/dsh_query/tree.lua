-- Tree buffers: the server's views (protocol.md §6, `sessionQuery/treeChildren`) and local lists
-- (search hits) rendered as indented text in a scratch buffer.
--
--   ▾ ● fix-flaky-tests: Flaky payment retry tests  2025-11-30 · live · persisted {{{1
--     ▸ ≡ Events
--     ▸ ⑂ Lineage  2 children }}}1
--
-- Children are fetched lazily when a node is expanded; nodes the server sends as "expanded" are
-- fetched right away. Expansion is remembered by node id (ids are stable), so `R` (refresh) keeps
-- what was open. An expanded node's line ends with a `{{{N` fold marker and the last line of its
-- subtree with `}}}N` (both concealed by the dshquery syntax), so zc / zo / zM / zR fold subtrees.
local commands = require("dsh_query.commands")
local config = require("dsh_query.config")
local icons = require("dsh_query.icons")
local rpc = require("dsh_query.rpc")

local M = {}

M.buffers = {} -- bufnr -> tree state
local HEADER = 2 -- lines above the first node
local ns = vim.api.nvim_create_namespace("dsh_query_tree")

local OPEN_EVENT = commands.OPEN_EVENT

local ICON_HL = {
  ["circle-filled"] = "DshQueryLive",
  ["history"] = "DshQueryPersisted",
  ["circle-outline"] = "DshQueryLogOnly",
  ["circle-slash"] = "DshQueryShadowed",
  ["warning"] = "DshQueryWarning",
  ["error"] = "DshQueryError",
  ["type-hierarchy-sub"] = "DshQuerySub",
}

-- An event node's class (protocol.md §6 `surface`) colours its icon; the description says the word.
local SURFACE_HL = { current = "DshQueryCurrent", shadowed = "DshQueryShadowed", ["log-only"] = "DshQueryLogOnly" }

local function nonempty(value)
  return value ~= nil and value ~= vim.NIL and value ~= ""
end

local function one_line(text)
  return (tostring(text):gsub("[\r\n]+", " "))
end

-- node helpers ---------------------------------------------------------------------------------

local function session_id_of(node)
  local r = node.resource
  if type(r) == "table" and type(r.sessionId) == "string" then
    return r.sessionId
  end
end

local function seq_of(node)
  local r = node.resource
  if type(r) == "table" and type(r.seq) == "number" then
    return r.seq
  end
end

local function is_session(node)
  return type(node.contextValue) == "string" and node.contextValue:match("^session") ~= nil
end

--- The event a node points to, through its command (dshQuery.openEvent) or its resource.
local function event_of(node)
  local cmd = node.command
  if type(cmd) == "table" and cmd.command == OPEN_EVENT and type(cmd.arguments) == "table" then
    local a = cmd.arguments[1]
    if type(a) == "table" and a.sessionId ~= nil and type(a.seq) == "number" then
      return a.sessionId, a.seq
    end
  end
  if seq_of(node) ~= nil and session_id_of(node) ~= nil and (node.collapsible or "none") == "none" then
    return session_id_of(node), seq_of(node)
  end
end
M.event_of = event_of

local function node_text(node)
  local label = one_line(nonempty(node.label) and node.label or node.id or "?")
  local sid = session_id_of(node)
  if is_session(node) and sid and sid ~= label then
    label = sid .. ": " .. label
  end
  return label
end

-- state ----------------------------------------------------------------------------------------

local function new_item(node, depth, parent)
  return { node = node, depth = depth, parent = parent, children = nil, expanded = false, loading = false }
end

local function server_loader(st, item, cb)
  local params = { view = st.view }
  if item then
    params.nodeId = item.node.id
  elseif st.args then
    params.args = st.args
  end
  rpc.request("sessionQuery/treeChildren", params, function(err, result)
    cb(err, result and result.nodes or {})
  end)
end

local function error_node(err, parent_id)
  local code = type(err) == "table" and type(err.data) == "table" and err.data.code or nil
  return {
    id = "error:" .. tostring(parent_id or "root"),
    label = type(err) == "table" and tostring(err.message) or tostring(err),
    description = code or (type(err) == "table" and err.code and tostring(err.code)) or nil,
    icon = "error",
    collapsible = "none",
    contextValue = "error",
  }
end

-- rendering ------------------------------------------------------------------------------------

--- Highlight bytes [col, end_col) of a 0-based line (extmarks: nvim_buf_add_highlight is
--- deprecated from 0.11 on).
function M.highlight(buf, namespace, group, line, col, end_col)
  if end_col > col then
    pcall(vim.api.nvim_buf_set_extmark, buf, namespace, line, col, { end_col = end_col, hl_group = group })
  end
end

local function toggle_glyph(item)
  local ascii = config.options.ascii_icons
  local c = item.node.collapsible
  if item.loading then
    return ascii and ". " or "⋯ "
  elseif c == nil or c == "none" then
    return "  "
  elseif item.expanded then
    return ascii and "- " or "▾ "
  end
  return ascii and "+ " or "▸ "
end

-- Visible items in order. An expanded node with visible children opens a fold on its line
-- (`{{{d+1`); the last line of its subtree closes it (`}}}d+1`), so zc on any line inside
-- closes the node above it, as in a file browser.
local function flatten(items, out)
  for _, item in ipairs(items or {}) do
    item.fold_open, item.fold_close = nil, nil
    out[#out + 1] = item
    if item.expanded and item.children then
      item.fold_open = item.depth + 1
      if #item.children == 0 then
        out[#out + 1] = { placeholder = "(empty)", depth = item.depth + 1, parent = item }
      else
        flatten(item.children, out)
      end
      local last = out[#out]
      last.fold_close = math.min(last.fold_close or math.huge, item.depth + 1)
    end
  end
  return out
end

local function fold_suffix(item)
  if not config.options.fold_markers then
    return ""
  end
  return (item.fold_open and (" {{{" .. item.fold_open) or "") .. (item.fold_close and (" }}}" .. item.fold_close) or "")
end

--- Width of the agent column for these lines: nil when every session in them is dsh's.
local function agent_column(items)
  local width, foreign = 0, false
  for _, item in ipairs(items) do
    local agent = item.node and item.node.agent
    if nonempty(agent) then
      width = math.max(width, #agent)
      foreign = foreign or agent ~= "dsh"
    end
  end
  return foreign and width or nil
end

local function line_of(item, agent_width)
  local indent = string.rep("  ", item.depth)
  if item.placeholder then
    return indent .. "  " .. item.placeholder .. fold_suffix(item), {}
  end
  local node = item.node
  local glyph = toggle_glyph(item)
  local icon = icons.get(node.icon)
  local parts, hls = { indent, glyph }, {}
  local col = #indent + #glyph
  if icon then
    hls[#hls + 1] = { SURFACE_HL[node.surface] or ICON_HL[node.icon] or "DshQueryIcon", col, col + #icon }
    parts[#parts + 1] = icon .. " "
    col = col + #icon + 1
  end
  -- Session nodes name their agent (claude-code, codex, gemini-cli, opencode, copilot-cli,
  -- qwen-code, dsh): a column before the label, shown once the tree holds a session of another
  -- agent than dsh (a dsh-only corpus stays as it was).
  if agent_width and nonempty(node.agent) then
    local agent = string.format("%-" .. agent_width .. "s ", node.agent)
    hls[#hls + 1] = { "DshQueryAgent", col, col + #node.agent }
    parts[#parts + 1] = agent
    col = col + #agent
  end
  local text = node_text(node)
  local sid = session_id_of(node)
  if is_session(node) and sid and text:sub(1, #sid) == sid then
    hls[#hls + 1] = { "DshQuerySessionId", col, col + #sid }
  end
  parts[#parts + 1] = text
  col = col + #text
  if nonempty(node.description) then
    local desc = "  " .. one_line(node.description)
    hls[#hls + 1] = { node.contextValue == "error" and "DshQueryError" or "DshQueryDescription", col, col + #desc }
    parts[#parts + 1] = desc
  end
  parts[#parts + 1] = fold_suffix(item)
  return table.concat(parts), hls
end

local function header_lines(st)
  local title = "dsh-query · " .. st.title
  if st.stale then
    title = title .. "  [stale: press R to refresh]"
  end
  return { title, "<CR> expand/open · K details · e events · t trace · R refresh · q close" }
end

local function cursor_ids(st)
  local out = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == st.bufnr then
      local lnum = vim.api.nvim_win_get_cursor(win)[1]
      local item = st.lines[lnum]
      out[win] = { id = item and item.node and item.node.id, lnum = lnum }
    end
  end
  return out
end

function M.render(st)
  if not vim.api.nvim_buf_is_valid(st.bufnr) then
    return
  end
  local saved = cursor_ids(st)
  local lines = header_lines(st)
  local hls = { { "DshQueryHeader", 0, 0, -1 }, { "DshQueryHint", 1, 0, -1 } }
  if st.stale then
    hls[#hls + 1] = { "DshQueryStale", 0, #("dsh-query · " .. st.title), -1 }
  end
  st.lines = {}
  if st.roots == nil then
    lines[#lines + 1] = "  loading…"
  elseif #st.roots == 0 then
    lines[#lines + 1] = "  " .. (st.empty_text or "(empty)")
  else
    local items = flatten(st.roots, {})
    local agent_width = agent_column(items)
    for _, item in ipairs(items) do
      local text, line_hls = line_of(item, agent_width)
      lines[#lines + 1] = text
      st.lines[#lines] = item
      for _, h in ipairs(line_hls) do
        hls[#hls + 1] = { h[1], #lines - 1, h[2], h[3] }
      end
    end
  end
  vim.bo[st.bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(st.bufnr, 0, -1, false, lines)
  vim.bo[st.bufnr].modifiable = false
  vim.bo[st.bufnr].modified = false
  vim.api.nvim_buf_clear_namespace(st.bufnr, ns, 0, -1)
  for _, h in ipairs(hls) do
    M.highlight(st.bufnr, ns, h[1], h[2], h[3], h[4] == -1 and #lines[h[2] + 1] or h[4])
  end
  -- keep each window's cursor on the node it was on
  for win, at in pairs(saved) do
    local target = nil
    if at.id then
      for lnum, item in pairs(st.lines) do
        if item.node and item.node.id == at.id then
          target = lnum
          break
        end
      end
    end
    if target == nil then
      target = math.min(math.max(at.lnum, 1), #lines)
    end
    if not st.placed and st.roots ~= nil and #lines > HEADER then
      target = HEADER + 1 -- first render with nodes: start on the first node
    end
    if vim.api.nvim_win_is_valid(win) then
      pcall(vim.api.nvim_win_set_cursor, win, { target, 0 })
    end
  end
  if st.roots ~= nil and next(saved) ~= nil then
    st.placed = true
  end
end

-- loading --------------------------------------------------------------------------------------

local load_children

local function build(st, nodes, depth, parent)
  local items = {}
  for _, node in ipairs(nodes or {}) do
    local item = new_item(node, depth, parent)
    items[#items + 1] = item
    local id = node.id
    local want = st.open[id] or (node.collapsible == "expanded" and not st.closed[id])
    if want and node.collapsible ~= "none" and node.collapsible ~= nil then
      load_children(st, item)
    end
  end
  return items
end

load_children = function(st, item)
  local gen = st.gen
  item.loading = true
  st.loader(st, item, function(err, nodes)
    if st.gen ~= gen or not vim.api.nvim_buf_is_valid(st.bufnr) then
      return
    end
    item.loading = false
    if err then
      item.children = { new_item(error_node(err, item.node.id), item.depth + 1, item) }
    else
      item.children = build(st, nodes, item.depth + 1, item)
    end
    item.expanded = true
    st.open[item.node.id] = true
    M.render(st)
  end)
end

--- Re-fetch the roots and every node that was expanded; clears the stale mark.
function M.refresh(bufnr)
  local st = M.buffers[bufnr or vim.api.nvim_get_current_buf()]
  if not st then
    return
  end
  st.gen = st.gen + 1
  st.stale = false
  local gen = st.gen
  if st.roots == nil then
    M.render(st)
  end
  st.loader(st, nil, function(err, nodes)
    if st.gen ~= gen or not vim.api.nvim_buf_is_valid(st.bufnr) then
      return
    end
    if err then
      st.roots = { new_item(error_node(err), 0, nil) }
    else
      st.roots = build(st, nodes, 0, nil)
      if st.on_roots then
        st.on_roots(nodes)
      end
    end
    M.render(st)
  end)
end

-- windows and buffers -------------------------------------------------------------------------

local function apply_window_options(win)
  vim.wo[win].wrap = false
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].list = false
  vim.wo[win].spell = false
  vim.wo[win].cursorline = true
  vim.wo[win].signcolumn = "no"
  if config.options.fold_markers then
    vim.wo[win].foldmethod = "marker"
    vim.wo[win].foldmarker = "{{{,}}}"
    vim.wo[win].foldlevel = 99
    vim.wo[win].conceallevel = 3
    vim.wo[win].concealcursor = "nvic"
  end
end
M.apply_window_options = apply_window_options

--- Open a window for `buf`: reuse one that shows it, else the current window when it holds an
--- empty unnamed buffer (a fresh Neovim), else a new split made with `split_cmd`.
function M.show(buf, split_cmd, width)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  local cur = vim.api.nvim_get_current_buf()
  local blank = vim.api.nvim_buf_get_name(cur) == "" and not vim.bo[cur].modified
    and vim.api.nvim_buf_line_count(cur) == 1 and vim.api.nvim_buf_get_lines(cur, 0, 1, false)[1] == ""
    and vim.bo[cur].buftype == ""
  -- a split that fails (E36: not enough room) falls back to the current window
  if not blank and pcall(vim.cmd, split_cmd) then
    if width and (split_cmd:find("vert") or split_cmd:find("vsplit")) then
      pcall(vim.cmd, "vertical resize " .. tonumber(width))
    end
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

local function scratch(name, filetype)
  local existing = vim.fn.bufnr("^" .. vim.fn.escape(name, "^$.*~[]\\/") .. "$")
  local buf = existing
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, buf, name)
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].shiftwidth = 2
  if vim.bo[buf].filetype ~= filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end
M.scratch = scratch

local function close_window()
  if #vim.api.nvim_list_wins() > 1 then
    vim.cmd("close")
  else
    vim.cmd("enew")
  end
end
M.close_window = close_window

--- The item under the cursor (or at `lnum`) of a tree buffer.
function M.item_at(bufnr, lnum)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local st = M.buffers[bufnr]
  if not st then
    return nil
  end
  lnum = lnum or vim.api.nvim_win_get_cursor(0)[1]
  local item = st.lines[lnum]
  return item and item.node and item or nil, st
end

function M.toggle(bufnr, lnum)
  local item, st = M.item_at(bufnr, lnum)
  if not item or item.loading or item.node.collapsible == "none" or item.node.collapsible == nil then
    return false
  end
  local id = item.node.id
  if item.expanded then
    item.expanded = false
    st.open[id] = nil
    st.closed[id] = true
    M.render(st)
  elseif item.children then
    item.expanded = true
    st.open[id] = true
    st.closed[id] = nil
    M.render(st)
  else
    st.closed[id] = nil
    load_children(st, item)
    M.render(st)
  end
  return true
end

--- <CR>: open the event a node links to (in a split), else expand/collapse it; a leaf session
--- link (lineage parent/child) opens that session's events.
function M.activate(bufnr, lnum)
  local item = M.item_at(bufnr, lnum)
  if not item then
    return
  end
  local node = item.node
  local sid, seq = event_of(node)
  if sid ~= nil then
    require("dsh_query").read(sid, seq)
  elseif node.collapsible ~= "none" and node.collapsible ~= nil then
    M.toggle(bufnr, lnum)
  elseif type(node.command) == "table" and type(node.command.command) == "string"
    and node.command.command:match("^dshQuery%.server%.") then
    require("dsh_query").execute(node.command.command, node.command.arguments)
  elseif is_session(node) and session_id_of(node) then
    require("dsh_query").events(session_id_of(node))
  elseif node.contextValue == "error" then
    vim.notify("dsh-query: " .. tostring(node.tooltip or node.label), vim.log.levels.ERROR)
  end
end

--- K: the node's tooltip (or its JSON) in a floating window.
function M.details(bufnr, lnum)
  local item = M.item_at(bufnr, lnum)
  if not item then
    return
  end
  local node = item.node
  local text = nonempty(node.tooltip) and tostring(node.tooltip) or node_text(node)
  local lines = vim.split(text, "\n", { plain = true })
  if vim.lsp.util and vim.lsp.util.open_floating_preview then
    vim.lsp.util.open_floating_preview(lines, "plaintext", { border = "single", focus_id = "dsh_query_details" })
  else
    vim.notify(text)
  end
end

--- e: the events view of the session under the cursor.
function M.events_at(bufnr, lnum)
  local item = M.item_at(bufnr, lnum)
  local sid = item and session_id_of(item.node)
  if sid then
    require("dsh_query").events(sid)
  end
end

--- t: the lineage of the session under the cursor, or the trace of the event under it.
function M.trace_at(bufnr, lnum)
  local item = M.item_at(bufnr, lnum)
  if not item then
    return
  end
  local sid, seq = event_of(item.node)
  if sid ~= nil then
    require("dsh_query").trace(sid, seq)
  elseif session_id_of(item.node) then
    require("dsh_query").trace(session_id_of(item.node))
  end
end

local function map(buf, lhs, fn, desc)
  vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
end

local function set_mappings(buf)
  if not config.options.mappings then
    return
  end
  map(buf, "<CR>", function() M.activate(buf) end, "dsh-query: expand or open")
  map(buf, "o", function() M.activate(buf) end, "dsh-query: expand or open")
  map(buf, "<2-LeftMouse>", function() M.activate(buf) end, "dsh-query: expand or open")
  map(buf, "K", function() M.details(buf) end, "dsh-query: details")
  map(buf, "e", function() M.events_at(buf) end, "dsh-query: events of this session")
  map(buf, "t", function() M.trace_at(buf) end, "dsh-query: trace")
  map(buf, "R", function() M.refresh(buf) end, "dsh-query: refresh")
  map(buf, "q", close_window, "dsh-query: close")
end

--- Should a didChange {sessionIds?, corpus?} mark this tree stale?
local function affected(st, params)
  if params.corpus or st.view == "sessions" or st.view == "lineage" or st.view == "search" then
    return true
  end
  local sid = st.args and st.args.sessionId
  for _, id in ipairs(params.sessionIds or {}) do
    if id == sid then
      return true
    end
  end
  return false
end

rpc.subscribe("tree", function(params)
  for buf, st in pairs(M.buffers) do
    if not vim.api.nvim_buf_is_valid(buf) then
      M.buffers[buf] = nil
    elseif params.reconnected then -- a new connection (maybe a new hub): everything again
      M.refresh(buf)
    elseif not st.stale and affected(st, params) then
      st.stale = true
      M.render(st)
    end
  end
end)

--- Open (or focus and refresh) a tree buffer.
--- spec = { name, title, view, args?, loader?, empty_text? }
function M.open(spec)
  local buf = scratch(spec.name, "dshquery")
  local st = M.buffers[buf]
  if not st then
    st = { bufnr = buf, open = {}, closed = {}, gen = 0, lines = {} }
    M.buffers[buf] = st
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      once = true,
      callback = function()
        M.buffers[buf] = nil
      end,
    })
    vim.api.nvim_create_autocmd("BufWinEnter", {
      buffer = buf,
      callback = function()
        apply_window_options(vim.api.nvim_get_current_win())
      end,
    })
    set_mappings(buf)
  end
  st.view, st.args, st.title = spec.view, spec.args, spec.title
  st.loader = spec.loader or server_loader
  st.on_roots = spec.on_roots -- called after each successful load of the roots
  st.empty_text = spec.empty_text
  st.roots = nil
  st.placed = false
  local win = M.show(buf, config.options.tree_split, config.options.tree_width)
  apply_window_options(win)
  M.render(st)
  M.refresh(buf)
  return buf
end

--- Tree lines without the fold markers (for tests and scripts).
function M.text(bufnr)
  local out = {}
  for _, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    out[#out + 1] = (line:gsub(" }}}%d+$", ""):gsub(" {{{%d+$", ""))
  end
  return out
end

--- First line (1-based) whose text contains `needle` (plain), after the header.
function M.find(bufnr, needle)
  for lnum, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if lnum > HEADER and line:find(needle, 1, true) then
      return lnum
    end
  end
end

return M
