-- The event window (`sessionQuery/readEvent`): the target event with `before`/`after` neighbours,
-- each as pretty JSON under a `// #seq type` comment line, the target marked
-- `// >>> #seq type  (target)` ... `// <<< end of target #seq` and highlighted; the cursor lands
-- on the target. `R` re-reads, `q` closes.
local config = require("dsh_query.config")
local json = require("dsh_query.json")
local rpc = require("dsh_query.rpc")
local tree = require("dsh_query.tree")

local M = {}

M.buffers = {} -- bufnr -> {session_id, seq, stale}
local ns = vim.api.nvim_create_namespace("dsh_query_read")

local function display_id(session_id)
  return type(session_id) == "string" and session_id or json.compact(session_id)
end

--- Lines (and the 0-based range of the target block) for a SessionEventWindow.
function M.format(window, session_id, seq)
  local lines = {}
  local events = window.events or {}
  local first, last = window.startSeq, window.endSeq
  lines[#lines + 1] = ("// dsh-query event window · session %s · events #%s..#%s · target #%s"):format(
    json.string(display_id(session_id)), json.number(first or seq), json.number(last or seq), json.number(seq))
  lines[#lines + 1] = "// R re-read · q close"
  local target_seq = window.target and window.target.seq or seq
  local target_range = nil
  for _, event in ipairs(events) do
    if type(event) == "table" and event.data == nil then
      event.data = vim.NIL -- "data": null arrives as a missing key (vim.lsp decodes null as nil)
    end
    lines[#lines + 1] = ""
    local is_target = type(event) == "table" and event.seq == target_seq
    local head = ("#%s %s"):format(json.number(event.seq or -1), tostring(event.type))
    local start = #lines
    if is_target then
      lines[#lines + 1] = "// >>> " .. head .. "  (target)"
    else
      lines[#lines + 1] = "// " .. head
    end
    for _, l in ipairs(json.pretty_lines(event, 100)) do
      lines[#lines + 1] = l
    end
    if is_target then
      lines[#lines + 1] = "// <<< end of target #" .. json.number(event.seq)
      target_range = { start, #lines }
    end
  end
  return lines, target_range
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function load(buf)
  local st = M.buffers[buf]
  if not st then
    return
  end
  st.stale = false
  local win_opts = config.options.read_window or {}
  local params = { sessionId = st.session_id, seq = st.seq, before = win_opts.before, after = win_opts.after }
  rpc.request("sessionQuery/readEvent", params, function(err, result)
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    if err then
      local code = type(err.data) == "table" and err.data.code or err.code
      set_lines(buf, {
        ("// dsh-query: cannot read event #%s of session %s"):format(tostring(st.seq), json.string(display_id(st.session_id))),
        ("// %s [%s]"):format(tostring(err.message), tostring(code)),
      })
      tree.highlight(buf, ns, "DshQueryError", 1, 0, #vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1])
      return
    end
    local lines, range = M.format(result or {}, st.session_id, st.seq)
    set_lines(buf, lines)
    tree.highlight(buf, ns, "DshQueryHeader", 0, 0, #lines[1])
    if range then
      for l = range[1], range[2] - 1 do
        tree.highlight(buf, ns, "DshQueryTarget", l, 0, #lines[l + 1])
      end
      for _, win in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_buf(win) == buf then
          pcall(vim.api.nvim_win_set_cursor, win, { range[1] + 1, 0 })
          pcall(vim.api.nvim_win_call, win, function()
            vim.cmd("normal! zt")
          end)
        end
      end
    end
  end)
end

rpc.subscribe("read", function(params)
  for buf, st in pairs(M.buffers) do
    if not vim.api.nvim_buf_is_valid(buf) then
      M.buffers[buf] = nil
    elseif not st.stale and (params.corpus or vim.tbl_contains(params.sessionIds or {}, st.session_id)) then
      st.stale = true
      local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] or ""
      vim.bo[buf].modifiable = true
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, { first .. "  [stale: press R to re-read]" })
      vim.bo[buf].modifiable = false
      vim.bo[buf].modified = false
    end
  end
end)

--- Open the event window for (session, seq) in a split (`read_split`); returns the buffer.
function M.open(session_id, seq)
  local name = ("dsh-query://event/%s/%s"):format(display_id(session_id), json.number(seq))
  local buf = tree.scratch(name, "jsonc")
  if not M.buffers[buf] then
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      once = true,
      callback = function()
        M.buffers[buf] = nil
      end,
    })
    if config.options.mappings then
      vim.keymap.set("n", "q", tree.close_window, { buffer = buf, nowait = true, silent = true })
      vim.keymap.set("n", "R", function() load(buf) end, { buffer = buf, nowait = true, silent = true })
    end
  end
  M.buffers[buf] = { session_id = session_id, seq = seq, stale = false }
  set_lines(buf, { "// loading event #" .. json.number(seq) .. " of " .. json.string(display_id(session_id)) .. "…" })
  local win = tree.show(buf, config.options.read_split)
  -- a split inherits the tree window's options: undo the ones trees set
  vim.wo[win].wrap = false
  vim.wo[win].foldmethod = "manual"
  vim.wo[win].conceallevel = 0
  vim.wo[win].cursorline = false
  load(buf)
  return buf
end

return M
