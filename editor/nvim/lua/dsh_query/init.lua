-- dsh-query: browse AI-agent session histories from Neovim (0.7.2 .. 0.11) through
-- dsh_query_server's tree views and query methods. See editor/README.md and :help dsh-query.
local commands = require("dsh_query.commands")
local config = require("dsh_query.config")
local rpc = require("dsh_query.rpc")
local tree = require("dsh_query.tree")
local read = require("dsh_query.read")
local show = require("dsh_query.show")
local usage_view = require("dsh_query.usage")
local json = require("dsh_query.json")
local unreadable = require("dsh_query.unreadable")

local M = {}

local function define_highlights()
  local links = {
    DshQueryHeader = "Title",
    DshQueryHint = "Comment",
    DshQueryStale = "WarningMsg",
    DshQueryDescription = "Comment",
    DshQuerySessionId = "Identifier",
    DshQueryAgent = "Type",
    DshQueryIcon = "Special",
    DshQueryLive = "String",
    DshQueryPersisted = "Constant",
    DshQueryLogOnly = "NonText",
    DshQueryShadowed = "Comment",
    -- the session view (:DshShow): classes, roles, dividers and the context sparkline
    DshQueryCurrent = "String",
    DshQueryUser = "Statement",
    DshQueryAssistant = "Type",
    DshQueryTool = "PreProc",
    DshQueryDivider = "WarningMsg",
    DshQuerySpark = "Number",
    DshQueryEstimate = "Comment",
    DshQuerySub = "Type",
    DshQueryWarning = "WarningMsg",
    DshQueryError = "ErrorMsg",
    DshQueryTarget = "Visual",
  }
  for group, target in pairs(links) do
    vim.cmd(("highlight default link %s %s"):format(group, target))
  end
end

local initialised = false

local function ensure_setup()
  if initialised then
    return
  end
  initialised = true
  define_highlights()
  -- A client started elsewhere (lspconfig, vim.lsp.config) has no handler of ours: route the
  -- notification through the global table too, unless the user already routes it.
  if vim.lsp.handlers["sessionQuery/didChange"] == nil then
    vim.lsp.handlers["sessionQuery/didChange"] = rpc.on_did_change
  end
end

--- The server's progress on one line, for a statusline ("" when nothing runs): e.g.
--- `dsh-query searchSessions: indexing 512 of 1,600 transcripts (32%)` (docs/protocol.md §8).
function M.progress()
  return require("dsh_query.progress").status()
end

--- Configure the client (optional: the commands work with the defaults). Calling it again
--- replaces the options; a running server keeps running until :DshRestart.
function M.setup(opts)
  config.set(opts)
  ensure_setup()
  return config.options
end

local function sid_text(id)
  return type(id) == "string" and id or json.compact(id)
end

M.groupings = { "agent", "workspace", "none" }

--- :DshSessions [agent|workspace]: the corpus, newest first (sessions view), or grouped by
--- agent or by workspace (cwd); the server computes the groups (args.groupBy).
function M.sessions(group_by)
  ensure_setup()
  if group_by == nil or group_by == "" or group_by == "none" then
    return tree.open({ name = "dsh-query://sessions", title = "Sessions", view = "sessions",
                       empty_text = "(no sessions)", on_roots = unreadable.check })
  end
  if not vim.tbl_contains(M.groupings, group_by) then
    vim.notify("dsh-query: usage: :DshSessions [agent|workspace|none]", vim.log.levels.ERROR)
    return nil
  end
  return tree.open({ name = "dsh-query://sessions/by-" .. group_by, title = "Sessions by " .. group_by,
                     view = "sessions", args = { groupBy = group_by }, empty_text = "(no sessions)",
                     on_roots = unreadable.check })
end

--- :DshEvents {id}: every raw event of a session with its surface status (events view).
function M.events(session_id)
  ensure_setup()
  return tree.open({ name = "dsh-query://events/" .. sid_text(session_id), title = "Events of " .. sid_text(session_id),
                     view = "events", args = { sessionId = session_id }, empty_text = "(no events)" })
end

--- :DshTrace {id} [seq]: the lineage of a session (lineage view) or, with a seq, the
--- relationships of one event (eventTrace view).
function M.trace(session_id, seq)
  ensure_setup()
  if seq == nil then
    return tree.open({ name = "dsh-query://lineage/" .. sid_text(session_id), title = "Lineage of " .. sid_text(session_id),
                       view = "lineage", args = { sessionId = session_id } })
  end
  return tree.open({ name = ("dsh-query://trace/%s/%s"):format(sid_text(session_id), json.number(seq)),
                     title = ("Trace of #%s in %s"):format(json.number(seq), sid_text(session_id)),
                     view = "eventTrace", args = { sessionId = session_id, seq = seq } })
end

--- :DshUsage [by]: tokens and cost by day (or week, month, model, agent, project, session).
function M.usage(by)
  ensure_setup()
  return usage_view.open(by)
end

--- :DshRead {id} {seq}: the event window around one event, in a split.
function M.read(session_id, seq)
  ensure_setup()
  return read.open(session_id, seq)
end

--- :DshShow {id}: the session view (views.md §3.3): the context per turn and the transcript
--- with each event's class, in a split.
function M.show(session_id)
  ensure_setup()
  return show.open(session_id)
end

--- The file-name segment of an id (tools.md §2.3): each UTF-16 code unit outside
--- [A-Za-z0-9_-] becomes "_" (a character beyond the BMP is two units).
function M.export_segment(session_id)
  local out = {}
  for ch in session_id:gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    if ch:match("^[A-Za-z0-9_-]$") then
      out[#out + 1] = ch
    else
      out[#out + 1] = ch:byte(1) >= 240 and "__" or "_"
    end
  end
  return table.concat(out)
end

--- :DshExport {id} [path]: the session and its sub-agents as a ZIP (sessionQuery/exportSession,
--- includeDescendants); the path defaults to ./dsh-session-<seg>.zip.
function M.export(session_id, path)
  ensure_setup()
  path = path or ("dsh-session-" .. M.export_segment(session_id) .. ".zip")
  local absolute = vim.fn.fnamemodify(path, ":p")
  local params = { sessionId = session_id, outputPath = absolute, includeDescendants = true }
  rpc.request("sessionQuery/exportSession", params, function(err, result)
    if err then
      return rpc.notify_error(err, "export")
    end
    vim.notify(("dsh-query: exported %d entries to %s"):format(#result.entries, result.path))
  end)
end

local SURFACE_ICON = { current = "circle-filled", shadowed = "circle-slash", ["log-only"] = "circle-outline" }

local function hit_node(hit, index)
  local match = hit.bestMatch or {}
  local header = hit.header or {}
  local sid = match.sessionId or header.id
  local state = {}
  if hit.live then state[#state + 1] = "live" end
  if hit.persisted then state[#state + 1] = "persisted" end
  local snippet = tostring(match.snippet or ""):gsub("%s+", " ")
  return {
    id = ("hit:%d:%s:%s"):format(index, sid_text(sid), tostring(match.seq)),
    label = ("%s #%s %s"):format(sid_text(sid), json.number(match.seq or -1), tostring(match.type)),
    description = table.concat({ tostring(match.surface or "?"), table.concat(state, " "), '"' .. snippet .. '"' }, " · "),
    tooltip = ("%s\n#%s %s (%s)\n\n%s"):format(sid_text(sid), tostring(match.seq), tostring(match.type),
      tostring(match.surface), tostring(match.snippet or "")),
    icon = SURFACE_ICON[match.surface] or "search",
    collapsible = "none",
    contextValue = "search.hit",
    resource = { sessionId = sid, seq = match.seq },
    command = { title = "Open Event", command = commands.OPEN_EVENT, arguments = { { sessionId = sid, seq = match.seq } } },
  }
end

--- :DshSearch {query}: sessions matching a full-text query, best first; <CR> on a hit opens its
--- event window; a final "More…" node loads the next page (nextCursor).
function M.search(query)
  ensure_setup()
  local counter = 0
  local function loader(_, item, cb)
    local params = { query = query, limit = config.options.search_limit }
    if item then
      params.cursor = item.node.cursor
    end
    rpc.request("sessionQuery/searchSessions", params, function(err, page)
      if err then
        return cb(err)
      end
      if not item then
        unreadable.warn(page, true) -- the sessions this search left out, every time
      end
      local nodes = {}
      for _, hit in ipairs(page.items or {}) do
        counter = counter + 1
        nodes[#nodes + 1] = hit_node(hit, counter)
      end
      if page.nextCursor ~= nil and page.nextCursor ~= vim.NIL then
        counter = counter + 1
        nodes[#nodes + 1] = { id = "more:" .. counter, label = "More…", icon = "ellipsis",
                              collapsible = "collapsed", contextValue = "more", cursor = page.nextCursor }
      end
      cb(nil, nodes)
    end)
  end
  return tree.open({ name = "dsh-query://search/" .. query, title = ("Search %s"):format(json.string(query)),
                     view = "search", loader = loader, empty_text = "(no matches)" })
end

--- Run a server command (workspace/executeCommand), e.g. commands.SERVER_STATUS.
function M.execute(command, arguments, cb)
  ensure_setup()
  rpc.request("workspace/executeCommand", { command = command, arguments = arguments or { vim.empty_dict() } },
    function(err, result)
      if not err and cb == nil then
        vim.notify("dsh-query: " .. command .. " → " .. json.compact(result))
      end
      if cb then
        cb(err, result)
      end
    end)
end

--- Any request to the server: require("dsh_query").request(method, params, function(err, result) end)
function M.request(method, params, cb, opts)
  ensure_setup()
  rpc.request(method, params, cb, opts)
end

--- Wait until every request sent so far has been answered and rendered (scripts and tests).
function M.wait(timeout_ms)
  return rpc.wait(timeout_ms)
end

--- {client_id, path = "start" | "start_client" | "attached", ready, pending, capabilities}
function M.info()
  return rpc.info()
end

function M.restart()
  rpc.stop()
  M.execute(commands.SERVER_STATUS)
end

--- Session ids for command completion (only when the server is already running).
function M.complete_sessions(arg_lead)
  local records = rpc.request_sync("sessionQuery/listSessions", vim.empty_dict(), 1000) or {}
  local out = {}
  for _, record in ipairs(records) do
    local id = record.header and record.header.id
    if type(id) == "string" and id:sub(1, #arg_lead) == arg_lead then
      out[#out + 1] = id
    end
  end
  table.sort(out)
  return out
end

-- :Dsh* commands ---------------------------------------------------------------------------------

local function usage(text)
  vim.notify("dsh-query: usage: " .. text, vim.log.levels.ERROR)
end

--- Split "id [seq]" arguments: a trailing integer is the seq, the rest (spaces kept) the id.
local function id_and_seq(args)
  local id, seq = args:match("^%s*(.-)%s+(%d+)%s*$")
  if id and id ~= "" then
    return id, tonumber(seq)
  end
  return vim.trim(args), nil
end
M._id_and_seq = id_and_seq

function M.create_commands()
  local cmd = vim.api.nvim_create_user_command
  local complete = function(lead, line)
    -- only the first argument is a session id
    local before = line:match("^%S+%s+(.*)$") or ""
    if before:find("%s") then
      return {}
    end
    return M.complete_sessions(lead)
  end
  cmd("DshSessions", function(o) M.sessions(vim.trim(o.args)) end, {
    nargs = "?", desc = "dsh-query: sessions (grouped by agent or workspace)",
    complete = function(lead)
      return vim.tbl_filter(function(g) return g:sub(1, #lead) == lead end, M.groupings)
    end,
  })
  cmd("DshEvents", function(o)
    local id = vim.trim(o.args)
    if id == "" then return usage(":DshEvents {session-id}") end
    M.events(id)
  end, { nargs = "+", complete = complete, desc = "dsh-query: events of a session" })
  cmd("DshTrace", function(o)
    local id, seq = id_and_seq(o.args)
    if id == "" then return usage(":DshTrace {session-id} [seq]") end
    M.trace(id, seq)
  end, { nargs = "+", complete = complete, desc = "dsh-query: lineage of a session or trace of an event" })
  cmd("DshRead", function(o)
    local id, seq = id_and_seq(o.args)
    if id == "" or seq == nil then return usage(":DshRead {session-id} {seq}") end
    M.read(id, seq)
  end, { nargs = "+", complete = complete, desc = "dsh-query: event window" })
  cmd("DshShow", function(o)
    local id = vim.trim(o.args)
    if id == "" then return usage(":DshShow {session-id}") end
    M.show(id)
  end, { nargs = "+", complete = complete, desc = "dsh-query: a session's transcript and context" })
  cmd("DshExport", function(o)
    local args = vim.trim(o.args)
    local id, path = args:match("^(.-)%s+(%S+%.zip)$")
    if not id or id == "" then id, path = args, nil end
    if id == "" then return usage(":DshExport {session-id} [path.zip]") end
    M.export(id, path)
  end, { nargs = "+", complete = complete, desc = "dsh-query: export a session as a ZIP" })
  cmd("DshSearch", function(o)
    if vim.trim(o.args) == "" then return usage(":DshSearch {query}") end
    M.search(o.args)
  end, { nargs = "+", desc = "dsh-query: full-text search" })
  cmd("DshUsage", function(o) M.usage(vim.trim(o.args)) end, {
    nargs = "?", desc = "dsh-query: tokens and cost by day, week, month, model, agent, project or session",
    complete = function(lead)
      return vim.tbl_filter(function(g) return g:sub(1, #lead) == lead end, usage_view.groups)
    end,
  })
  cmd("DshStatus", function() M.execute(commands.SERVER_STATUS) end, { nargs = 0, desc = "dsh-query: persistence status" })
  cmd("DshMount", function(o) M.execute(commands.SERVER_MOUNT, { { uri = o.args } }) end,
    { nargs = 1, desc = "dsh-query: mount jsonl:/root or sqlite:/file.db" })
  cmd("DshUnmount", function() M.execute(commands.SERVER_UNMOUNT) end, { nargs = 0 })
  cmd("DshCheckpoint", function(o)
    local args = vim.trim(o.args) == "" and vim.empty_dict() or { sessionId = vim.trim(o.args) }
    M.execute(commands.SERVER_CHECKPOINT, { args })
  end, { nargs = "?", complete = complete, desc = "dsh-query: checkpoint live sessions" })
  cmd("DshRestart", function() M.restart() end, { nargs = 0, desc = "dsh-query: restart the server" })
end

return M
