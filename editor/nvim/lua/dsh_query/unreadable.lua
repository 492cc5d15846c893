-- Unreadable sessions (docs/semantics.md §6.5 [ours]): persisted logs a search left out because
-- they are damaged, and transcripts a listing skipped. The client warns with vim.notify: how many,
-- then one line per session (its id, what is wrong and its file).

local rpc = require("dsh_query.rpc")

local M = {}

local last = nil -- what the last warning named, so a refreshed tree does not repeat it

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

--- The warning's text for a result that names unreadable sessions, or nil when it names none.
function M.message(report)
  local count = present(report) and report.unreadableCount or nil
  if not present(count) or count == 0 then
    return nil
  end
  local entries = present(report.unreadable) and report.unreadable or {}
  local lines = { ("dsh-query: %d unreadable session%s left out (damaged logs):"):format(count, count == 1 and "" or "s") }
  for _, e in ipairs(entries) do
    lines[#lines + 1] = ("  %s: %s"):format(tostring(e.sessionId), tostring(e.message))
  end
  if count > #entries then
    lines[#lines + 1] = ("  … and %d more"):format(count - #entries)
  end
  return table.concat(lines, "\n")
end

--- Warn about `report`'s unreadable sessions; unless `again`, only when they changed since the
--- last warning (a tree refresh repeats nothing; a search names them every time).
function M.warn(report, again)
  local text = M.message(report)
  if text == nil then
    last = nil
    return
  end
  if again or text ~= last then
    vim.notify(text, vim.log.levels.WARN)
  end
  last = text
end

--- Ask the server's status (what the last listing skipped and the last search left out).
function M.check()
  rpc.request("sessionPersistence/status", vim.empty_dict(), function(err, status)
    if not err then
      M.warn(status)
    end
  end)
end

return M
