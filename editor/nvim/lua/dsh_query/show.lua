-- :DshShow {id}: the session view (docs/views.md §3.3) in a scratch buffer. A header, the
-- context timeline as one sparkline line per turn (readTimeline), then the whole log: one head
-- line per message with its class as a highlight group AND the word, the message's text under
-- it, a divider before every replacing event, and closed folds for long tool output and for the
-- events of each log-only run. `R` re-reads, `q` closes.
local config = require("dsh_query.config")
local json = require("dsh_query.json")
local rpc = require("dsh_query.rpc")
local tree = require("dsh_query.tree")

local M = {}

M.buffers = {} -- bufnr -> {session_id}
local ns = vim.api.nvim_create_namespace("dsh_query_show")

M.FOLD_LINES = 6 -- lines of tool output shown before the rest is folded
M.CLASS_HL = { current = "DshQueryCurrent", shadowed = "DshQueryShadowed", ["log-only"] = "DshQueryLogOnly" }
local ROLE_HL = { user = "DshQueryUser", assistant = "DshQueryAssistant", ["tool result"] = "DshQueryTool" }
local MESSAGE = { ["user/message"] = true, ["assistant/message"] = true, ["tool/result"] = true }
local BLOCKS = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" }

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

local function get(t, key)
  return type(t) == "table" and t[key] or nil
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

local function thousands(n)
  local s = tostring(math.floor(n))
  while true do
    local done
    s, done = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
    if done == 0 then
      return s
    end
  end
end

local function clock(ms)
  return type(ms) == "number" and os.date("!%H:%M:%S", math.floor(ms / 1000)) or ""
end

-- a step's size: its recorded context where the log has one, else its ≈ tokens
local function step_value(step)
  local context = get(get(step, "recorded"), "context")
  if type(context) == "number" then
    return context, true
  end
  return get(step.surface, "approxTokens") or 0, false
end

local function shadowed_text(rep)
  local s = rep.shadowed
  local span = s.firstSeq == s.lastSeq and ("#" .. s.firstSeq) or ("#%d–#%d"):format(s.firstSeq, s.lastSeq)
  return ("%s, %s, replaced by #%d"):format(plural(s.count, "event"), span, rep.seq)
end

-- the text of a list of content blocks, per block kind
local function block_lines(blocks)
  local out = {} -- { kind, text }
  for _, b in ipairs(type(blocks) == "table" and blocks or {}) do
    local kind = get(b, "type")
    if kind == "text" and type(b.text) == "string" then
      out[#out + 1] = { "text", b.text }
    elseif kind == "reasoning" and type(b.text) == "string" then
      out[#out + 1] = { "thinking", "thinking: " .. (b.text:gsub("%s+", " ")) }
    elseif kind == "tool-call" then
      local args = type(b.arguments) == "string" and b.arguments:gsub("%s+", " ") or ""
      out[#out + 1] = { "call", ("→ %s %s"):format(tostring(b.name), args) }
    elseif kind == "tool-result" then
      local parts = {}
      local content = get(b, "content")
      for _, c in ipairs(type(content) == "table" and content or {}) do
        if type(get(c, "text")) == "string" then
          parts[#parts + 1] = c.text
        end
      end
      out[#out + 1] = { b.isError == true and "error" or "result", table.concat(parts, "\n") }
    elseif kind == "image" then
      out[#out + 1] = { "image", "[image]" }
    end
  end
  return out
end

local function who(event)
  if event.type == "assistant/message" then
    return "assistant", get(get(get(event.data, "message"), "source"), "model")
  elseif event.type == "tool/result" then
    return "tool result"
  end
  return "user"
end

-- A page under construction: lines, highlights {group, line, col, end_col} and folds {first, last}
-- (0-based lines, end_col -1 for the whole line).
local function page()
  local p = { lines = {}, hls = {}, folds = {} }
  function p.add(text, group)
    for _, l in ipairs(vim.split(text, "\n", { plain = true })) do
      p.lines[#p.lines + 1] = l
      if group then
        p.hls[#p.hls + 1] = { group, #p.lines - 1, 0, -1 }
      end
    end
    return #p.lines - 1
  end
  function p.mark(line, col, text, group)
    p.hls[#p.hls + 1] = { group, line, col, col + #text }
  end
  return p
end

local function timeline_lines(p, timeline)
  local steps = timeline.steps or {}
  p.add("Context per turn (one block per model response: recorded context, else ≈ tokens, an estimate):",
    "DshQueryHint")
  if #steps == 0 then
    p.add("  (no model response)", "DshQueryHint")
    return
  end
  local top = 1
  for _, s in ipairs(steps) do
    top = math.max(top, (step_value(s)))
  end
  local turns, order = {}, {}
  for _, s in ipairs(steps) do
    local key = type(s.turn) == "number" and s.turn or "?"
    if not turns[key] then
      turns[key] = {}
      order[#order + 1] = key
    end
    table.insert(turns[key], s)
  end
  -- each compaction is marked on the line of the turn of the first response after it
  local marks = {}
  for _, rep in ipairs(timeline.replacements or {}) do
    if rep.kind == "compaction" then
      for _, s in ipairs(steps) do
        if s.seq > rep.seq then
          local key = type(s.turn) == "number" and s.turn or "?"
          marks[key] = (marks[key] and (marks[key] .. "; ") or "") .. "▲ compaction: " .. shadowed_text(rep)
          break
        end
      end
    end
  end
  local width = 0
  for _, key in ipairs(order) do
    width = math.max(width, #turns[key])
  end
  width = math.min(width, 60)
  for _, key in ipairs(order) do
    local prefix = ("  turn %-4s "):format(tostring(key))
    local line = p.add(prefix)
    local col = #prefix
    local text = prefix
    local shown = turns[key]
    local last_value, last_recorded = 0, false
    for i, s in ipairs(shown) do
      if i > width then
        break
      end
      local value, recorded = step_value(s)
      local level = value > 0 and math.max(1, math.min(8, math.ceil(value / top * 8))) or 1
      local glyph = BLOCKS[level]
      p.mark(line, col, glyph, recorded and "DshQuerySpark" or "DshQueryEstimate")
      text, col = text .. glyph, col + #glyph
      last_value, last_recorded = value, recorded
    end
    local pad = string.rep(" ", width - math.min(#shown, width))
    local said = last_recorded and (" " .. thousands(last_value) .. " recorded")
      or (" ≈" .. thousands(last_value) .. " (estimate)")
    text = text .. pad .. said
    if marks[key] then
      local at = #text + 2
      text = text .. "  " .. marks[key]
      p.mark(line, at, marks[key], "DshQueryDivider")
    end
    p.lines[line + 1] = text
  end
end

local function message_lines(p, event, class, step_of)
  local role, model = who(event)
  local data = event.data
  local blocks = event.type == "user/message" and get(data, "content") or get(get(data, "message"), "content")
  local head = "▌ " .. role .. " #" .. event.seq .. " · "
  local line = p.add(head)
  local word = class or "unknown"
  local extras = { clock(event.time) }
  if step_of[event.seq] then
    extras[#extras + 1] = "step " .. step_of[event.seq]
  end
  if type(model) == "string" then
    extras[#extras + 1] = model
  end
  p.lines[line + 1] = head .. word .. " · " .. table.concat(extras, " · ")
  local group = M.CLASS_HL[word]
  if group then
    p.mark(line, 0, "▌", group)
    p.mark(line, #head, word, group)
  end
  p.mark(line, #"▌ ", role, ROLE_HL[role])
  for _, b in ipairs(block_lines(blocks)) do
    local kind, text = b[1], b[2]
    if kind == "result" or kind == "error" then
      if kind == "error" then
        p.add("  ✗ error", "DshQueryError")
      end
      local out = vim.split(text:gsub("\n+$", ""), "\n", { plain = true })
      local first = #p.lines
      for _, l in ipairs(out) do
        p.add("  " .. l)
      end
      if #out > M.FOLD_LINES then
        p.folds[#p.folds + 1] = { first + M.FOLD_LINES, #p.lines - 1 }
      end
    elseif kind == "text" then
      for _, l in ipairs(vim.split(text, "\n", { plain = true })) do
        p.add("  " .. l)
      end
    else
      p.add("  " .. text, kind == "call" and "DshQueryTool" or "DshQueryHint")
    end
  end
end

local function folded_run(p, run, classes)
  local counts, order = {}, {}
  for _, e in ipairs(run) do
    if not counts[e.type] then
      order[#order + 1] = e.type
    end
    counts[e.type] = (counts[e.type] or 0) + 1
  end
  local kinds = {}
  for _, t in ipairs(order) do
    kinds[#kinds + 1] = counts[t] > 1 and ("%s ×%d"):format(t, counts[t]) or t
  end
  local span = #run == 1 and ("#" .. run[1].seq) or ("#%d–#%d"):format(run[1].seq, run[#run].seq)
  local first = p.add(("▸ log-only · %s (%s): %s"):format(plural(#run, "event"), span, table.concat(kinds, ", ")),
    "DshQueryLogOnly")
  p.mark(first, #"▸ ", "log-only", "DshQueryLogOnly")
  for _, e in ipairs(run) do
    p.add(("    #%d %s · %s"):format(e.seq, tostring(e.type), classes[e.seq] or "log-only"), "DshQueryLogOnly")
  end
  p.folds[#p.folds + 1] = { first, #p.lines - 1 }
end

--- Lines, highlights and folds for one session's answers.
function M.format(session_id, title, timeline, records, events)
  local p = page()
  local header = timeline.session or {}
  local source = get(header, "source")
  local agent = type(get(source, "agent")) == "string" and source.agent or "dsh"
  local count = present(timeline.capturedThroughSeq) and timeline.capturedThroughSeq + 1 or 0
  local compactions = 0
  for _, rep in ipairs(timeline.replacements or {}) do
    if rep.kind == "compaction" then
      compactions = compactions + 1
    end
  end
  p.add("dsh-query · Session " .. json.string(session_id) .. (title and (" · " .. title) or ""), "DshQueryHeader")
  p.add(("%s · created %s · %s · %s · %s"):format(agent,
    type(header.createdAt) == "number" and os.date("!%Y-%m-%d %H:%M UTC", math.floor(header.createdAt / 1000)) or "?",
    plural(count, "event"), plural(#(timeline.steps or {}), "model response"), plural(compactions, "compaction")))
  local legend = p.add("R re-read · q close · zo/zc open/close folds · classes: current · shadowed · log-only",
    "DshQueryHint")
  local col = #"R re-read · q close · zo/zc open/close folds · classes: "
  for _, word in ipairs({ "current", "shadowed", "log-only" }) do
    p.mark(legend, col, word, M.CLASS_HL[word])
    col = col + #word + #" · "
  end
  timeline_lines(p, timeline)
  p.add("")
  local classes, step_of, reps = {}, {}, {}
  for _, r in ipairs(records or {}) do
    classes[r.seq] = r.surface
  end
  for i, s in ipairs(timeline.steps or {}) do
    step_of[s.seq] = i
  end
  for _, rep in ipairs(timeline.replacements or {}) do
    reps[rep.seq] = rep
  end
  local run = {}
  local function flush()
    if #run > 0 then
      folded_run(p, run, classes)
      run = {}
    end
  end
  for _, event in ipairs(events or {}) do
    if not MESSAGE[event.type] then
      run[#run + 1] = event
    else
      flush()
      local rep = reps[event.seq]
      if rep then
        local kind = rep.kind == "compaction" and "Compaction" or "Tool result rewritten"
        p.add("")
        p.add(("── %s: %s ──"):format(kind, shadowed_text(rep)), "DshQueryDivider")
        p.add(("   surface %s → %s, ≈%s → ≈%s tokens (estimate)"):format(plural(rep.before.events, "event"),
          plural(rep.after.events, "event"), thousands(rep.before.approxTokens), thousands(rep.after.approxTokens)),
          "DshQueryHint")
      end
      p.add("")
      message_lines(p, event, classes[event.seq], step_of)
    end
  end
  flush()
  return p
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function draw(buf, p)
  set_lines(buf, p.lines)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, h in ipairs(p.hls) do
    tree.highlight(buf, ns, h[1], h[2], h[3], h[4] == -1 and #p.lines[h[2] + 1] or h[4])
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_call(win, function()
        vim.wo.foldmethod = "manual"
        vim.wo.foldenable = true
        vim.cmd("normal! zE")
        for _, f in ipairs(p.folds) do
          vim.cmd(("%d,%dfold"):format(f[1] + 1, f[2] + 1))
        end
        vim.wo.foldlevel = 0
      end)
    end
  end
end

local function load(buf)
  local st = M.buffers[buf]
  if not st then
    return
  end
  -- One request, one read of the log: the timeline, each event's class, the title and the log
  -- (readSessionView, views.md §3.2).
  local params = { sessionId = st.session_id, log = true }
  rpc.request("sessionQuery/readSessionView", params, function(err, view)
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    if err then
      local code = type(err.data) == "table" and err.data.code or err.code
      set_lines(buf, { ("dsh-query: cannot show session %s"):format(json.string(st.session_id)),
                       ("%s [%s]"):format(tostring(err.message), tostring(code)) })
      tree.highlight(buf, ns, "DshQueryError", 1, 0, #vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1])
      return
    end
    -- a title that cannot be read (a rejected entry) is no title
    local title = get(get(get(view.title, "value"), "title"), "title")
    draw(buf, M.format(st.session_id, type(title) == "string" and title or nil, view.timeline, view.events,
      view.log))
  end)
end

--- Open the session view of `session_id` in a split (`read_split`); returns the buffer.
function M.open(session_id)
  local name = "dsh-query://show/" .. (type(session_id) == "string" and session_id or json.compact(session_id))
  local buf = tree.scratch(name, "dshqueryshow")
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
  M.buffers[buf] = { session_id = session_id }
  set_lines(buf, { "dsh-query: reading session " .. json.string(session_id) .. "…" })
  local win = tree.show(buf, config.options.read_split)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].conceallevel = 0
  vim.wo[win].cursorline = false
  load(buf)
  return buf
end

return M
