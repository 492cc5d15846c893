-- A small pretty printer for decoded JSON values (Neovim 0.7 has no pretty vim.json.encode).
-- Objects print with a stable key order: the event envelope and header keys first, in the order
-- semantics.md lists them, then the rest in code-point order. Integers print exactly up to 2^53.
local M = {}

local ORDER = {
  -- event envelope
  "type", "seq", "time", "ignorable", "surfaceOp", "sourceEventSeqs", "data",
  -- session header
  "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin", "delegationDepth",
  "agentPreset",
  -- common payload keys
  "op", "start", "end", "turn", "step", "index", "callId", "name", "arguments", "role", "content", "source",
  "kind", "text", "message", "reason", "usage", "interrupted", "error", "meta", "title",
}
local RANK = {}
for i, key in ipairs(ORDER) do
  RANK[key] = i
end

local EMPTY_DICT_MT = getmetatable(vim.empty_dict())

local function is_array(t)
  if getmetatable(t) == EMPTY_DICT_MT then
    return false
  end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" then
      return false
    end
    n = n + 1
  end
  for i = 1, n do
    if t[i] == nil then
      return false
    end
  end
  return true
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    keys[#keys + 1] = tostring(k)
  end
  table.sort(keys, function(a, b)
    local ra, rb = RANK[a], RANK[b]
    if ra and rb then
      return ra < rb
    elseif ra or rb then
      return ra ~= nil
    end
    return a < b
  end)
  return keys
end

function M.number(n)
  if n ~= n then
    return "null" -- NaN is not JSON
  elseif n == math.huge or n == -math.huge then
    return n > 0 and "1e999" or "-1e999"
  elseif n == math.floor(n) and math.abs(n) < 2 ^ 53 then
    return string.format("%d", n)
  end
  local s = string.format("%.15g", n)
  if tonumber(s) ~= n then
    s = string.format("%.17g", n)
  end
  return s
end

function M.string(s)
  return vim.fn.json_encode(s)
end

--- Compact one-line JSON with the same key order.
function M.compact(value)
  local kind = type(value)
  if value == nil or value == vim.NIL then
    return "null"
  elseif kind == "boolean" then
    return value and "true" or "false"
  elseif kind == "number" then
    return M.number(value)
  elseif kind == "string" then
    return M.string(value)
  elseif kind == "table" then
    local parts = {}
    if is_array(value) then
      for _, item in ipairs(value) do
        parts[#parts + 1] = M.compact(item)
      end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    for _, key in ipairs(sorted_keys(value)) do
      parts[#parts + 1] = M.string(key) .. ": " .. M.compact(value[key])
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return M.string(tostring(value))
end

local function pretty(value, indent, out, prefix, suffix, width)
  -- `prefix` goes before the value on its first line (a key), `suffix` after its last (a comma)
  local pad = string.rep("  ", indent)
  if type(value) ~= "table" or value == vim.NIL then
    out[#out + 1] = pad .. prefix .. M.compact(value) .. suffix
    return
  end
  local one = M.compact(value)
  local array = is_array(value)
  local empty = next(value) == nil
  -- short arrays of scalars stay on one line ([3, 4, 5], []), objects open up unless empty
  if empty or (array and #pad + #prefix + #one + #suffix <= width and not one:find("[{%[]", 2)) then
    out[#out + 1] = pad .. prefix .. one .. suffix
    return
  end
  out[#out + 1] = pad .. prefix .. (array and "[" or "{")
  if array then
    for i, item in ipairs(value) do
      pretty(item, indent + 1, out, "", i < #value and "," or "", width)
    end
  else
    local keys = sorted_keys(value)
    for i, key in ipairs(keys) do
      pretty(value[key], indent + 1, out, M.string(key) .. ": ", i < #keys and "," or "", width)
    end
  end
  out[#out + 1] = pad .. (array and "]" or "}") .. suffix
end

--- Pretty JSON as a list of lines (2-space indent).
function M.pretty_lines(value, width)
  local out = {}
  pretty(value, 0, out, "", "", width or 100)
  return out
end

return M
