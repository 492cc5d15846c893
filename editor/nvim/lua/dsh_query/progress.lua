-- Work-done progress from dsh_query_server (docs/protocol.md §8): the server reports `$/progress`
-- (begin / report / end) for any request that runs past 0.5 s, on a token it asks Neovim to
-- create (Neovim declares window.workDoneProgress). This keeps the state of every token of ours
-- and hands each notification on to Neovim's own handler too, so progress plugins keep working.
-- `require('dsh_query').progress()` is the one-line summary for a statusline; the
-- `User DshQueryProgress` autocommand fires on every change.
local M = {}

local tokens = {} -- token -> { title, message, percentage }
local order = {} -- tokens in the order they began

local function summary(entry)
  local text = entry.title or "dsh-query"
  if entry.message and entry.message ~= "" then
    text = text .. ": " .. entry.message
  end
  if entry.percentage then
    text = text .. (" (%d%%)"):format(entry.percentage)
  end
  return text
end

local function changed()
  vim.schedule(function()
    pcall(vim.cmd, "doautocmd <nomodeline> User DshQueryProgress")
  end)
end

local function forget(token)
  tokens[token] = nil
  for i, t in ipairs(order) do
    if t == token then
      table.remove(order, i)
      break
    end
  end
end

--- The `$/progress` handler (Neovim's handler signature since 0.5.1).
function M.handler(err, result, ctx, cfg)
  local value = type(result) == "table" and result.value or nil
  local token = type(result) == "table" and result.token or nil
  if token ~= nil and type(value) == "table" then
    local kind = value.kind
    if kind == "begin" then
      tokens[token] = { title = value.title, message = value.message, percentage = value.percentage }
      table.insert(order, token)
    elseif kind == "report" and tokens[token] then
      local entry = tokens[token]
      if value.message ~= nil then
        entry.message = value.message
      end
      if value.percentage ~= nil then
        entry.percentage = value.percentage
      end
    elseif kind == "end" and tokens[token] then
      forget(token)
    end
    changed()
  end
  local default = vim.lsp.handlers["$/progress"]
  if default and default ~= M.handler then
    return default(err, result, ctx, cfg)
  end
end

local STARTING = {} -- the pseudo-token of a server that is starting (no $/progress before it runs)

--- The server is starting: until `started()`, the status says so (the server's own progress can
--- only begin once it runs, about half a second later; issue 28).
function M.starting()
  if tokens[STARTING] == nil then
    tokens[STARTING] = { title = "dsh-query", message = "starting the server" }
    table.insert(order, 1, STARTING) -- the oldest: a request's own progress shows over it
    changed()
  end
end

--- The server initialized, or failed to: the starting status goes.
function M.started()
  if tokens[STARTING] ~= nil then
    forget(STARTING)
    changed()
  end
end

--- What runs now, on one line ("" when nothing does): the newest request's title, message and
--- percentage, e.g. `dsh-query searchSessions: indexing 512 of 1,600 transcripts (32%)`.
function M.status()
  local token = order[#order]
  if token == nil then
    return ""
  end
  return summary(tokens[token])
end

--- Every request in progress, oldest first: { {title, message, percentage}, ... }.
function M.active()
  local out = {}
  for _, token in ipairs(order) do
    table.insert(out, vim.deepcopy(tokens[token]))
  end
  return out
end

return M
