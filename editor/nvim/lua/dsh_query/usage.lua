-- :DshUsage [day|week|month|model|agent|project|session] (docs/usage.md §5): the corpus' tokens
-- and cost from `sessionQuery/usageSummary`, one row per group with a bar of its tokens, then the
-- totals; the same columns and words as `dsh-query usage`. Days are UTC. A count never recorded
-- is "-" (never 0); a cost without a price is "no price". `R` re-reads, `q` closes.
local config = require("dsh_query.config")
local rpc = require("dsh_query.rpc")
local tree = require("dsh_query.tree")

local M = {}

M.groups = { "day", "week", "month", "model", "agent", "project", "session" }
local GROUP_BY = { project = "cwd" }
local BAR = 10
local ns = vim.api.nvim_create_namespace("dsh_query_usage")

--- A count in at most 7 characters; "-" for one never recorded.
function M.compact(n)
  if type(n) ~= "number" then
    return "-"
  end
  if n < 10000 then
    return ("%d"):format(n)
  end
  for _, unit in ipairs({ { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } }) do
    if n >= unit[1] then
      return ("%.1f%s"):format(n / unit[1], unit[2])
    end
  end
  return tostring(n)
end

--- A total's cost: the priced sum (marked * when some responses have no price), or "no price".
function M.dollars(total)
  local cost = total.costUsd
  local unpriced = (total.unpricedResponses or 0) > 0
  if type(cost) ~= "string" then
    return unpriced and "no price" or "-"
  end
  local value = tonumber(cost) or 0
  local text
  if value >= 1 then
    text = ("$%.2f"):format(value)
  else
    text = ("$%.4f"):format(value):gsub("0+$", ""):gsub("%.$", "")
    if text == "$0" and value > 0 then
      text = "<$0.0001"
    end
  end
  return unpriced and (text .. "*") or text
end

local function tokens(total)
  local sum = 0
  for _, key in ipairs({ "input", "cacheRead", "cacheWrite", "output" }) do
    if type(total[key]) == "number" then
      sum = sum + total[key]
    end
  end
  return sum
end

local function row(key, total, largest)
  local line = ("%-24s %6d %8s %8s %8s %8s %10s "):format(
    key, total.responses or 0, M.compact(total.input), M.compact(total.cacheRead),
    M.compact(total.cacheWrite), M.compact(total.output), M.dollars(total))
  if largest and largest > 0 then
    local filled = math.floor(BAR * tokens(total) / largest + 0.5)
    line = line .. ("#"):rep(filled) .. ("."):rep(BAR - filled)
  end
  return line
end

local function key_text(key)
  if key == nil or key == vim.NIL then
    return "(none)"
  end
  local text = tostring(key)
  return #text <= 24 and text or ("…" .. text:sub(-23))
end

--- The buffer's lines for a UsageSummary, grouped `by`.
function M.format(summary, by)
  local lines = {
    ("Usage by %s (%s) · R re-read · q close"):format(by, summary.timeZone or "UTC"),
    ("%-24s %6s %8s %8s %8s %8s %10s %s"):format(by, "resp", "input", "cache rd", "cache wr", "output", "cost", "tokens"),
  }
  local largest = 0
  for _, r in ipairs(summary.rows or {}) do
    largest = math.max(largest, tokens(r.total))
  end
  for _, r in ipairs(summary.rows or {}) do
    lines[#lines + 1] = row(key_text(r.key), r.total, largest)
  end
  local total = summary.total or {}
  lines[#lines + 1] = row(("total (%d sessions)"):format(total.sessions or 0), total, nil)
  if (total.unpricedResponses or 0) > 0 then
    lines[#lines + 1] = ("* %d responses have no price (%s): their tokens are counted, their cost is not"):format(
      total.unpricedResponses, table.concat(total.unpricedModels or {}, ", "))
  end
  lines[#lines + 1] = ("cost: an estimate at list prices (%s); - = not recorded"):format(tostring(summary.prices))
  return lines
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function load(buf, by)
  rpc.request("sessionQuery/usageSummary", { groupBy = GROUP_BY[by] or by, timeZone = "UTC" }, function(err, result)
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    if err then
      local code = type(err.data) == "table" and err.data.code or err.code
      set_lines(buf, { "dsh-query: cannot read usage", ("%s [%s]"):format(tostring(err.message), tostring(code)) })
      tree.highlight(buf, ns, "DshQueryError", 1, 0, #vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1])
      return
    end
    local lines = M.format(result or {}, by)
    set_lines(buf, lines)
    tree.highlight(buf, ns, "DshQueryHeader", 0, 0, #lines[1])
    tree.highlight(buf, ns, "DshQueryHeader", 1, 0, #lines[2])
  end)
end

--- Open the usage table grouped `by` (default "day") in a split; returns the buffer.
function M.open(by)
  by = (by == nil or by == "") and "day" or by
  if not vim.tbl_contains(M.groups, by) then
    vim.notify(("dsh-query: :DshUsage takes one of %s"):format(table.concat(M.groups, ", ")), vim.log.levels.ERROR)
    return nil
  end
  local buf = tree.scratch(("dsh-query://usage/%s"):format(by), "dshquery")
  if config.options.mappings then
    vim.keymap.set("n", "q", tree.close_window, { buffer = buf, nowait = true, silent = true })
    vim.keymap.set("n", "R", function() load(buf, by) end, { buffer = buf, nowait = true, silent = true })
  end
  set_lines(buf, { "loading usage by " .. by .. "…" })
  local win = tree.show(buf, config.options.read_split)
  vim.wo[win].wrap = false
  vim.wo[win].foldmethod = "manual"
  load(buf, by)
  return buf
end

return M
