-- The server names VS Code codicons (protocol.md §6); Neovim shows them as text.
local M = {}

M.unicode = {
  ["circle-filled"] = "●", -- live session / current event
  ["history"] = "◷", -- persisted-only session
  ["circle-outline"] = "○", -- log-only event
  ["circle-slash"] = "⊘", -- shadowed event
  ["warning"] = "!", -- unresolved parent
  ["error"] = "✗", -- an error node
  ["type-hierarchy-sub"] = "↳", -- sub-agent / forked session
  ["type-hierarchy"] = "⑂", -- lineage group
  ["list-unordered"] = "≡", -- events group
  ["list-ordered"] = "⋮", -- replacement chain
  ["ellipsis"] = "…", -- "more" node
  ["arrow-swap"] = "⇄", -- replaced by
  ["replace-all"] = "⇉", -- replaced events
  ["arrow-left"] = "←", -- sources
  ["arrow-right"] = "→", -- derived events
  ["search"] = "⌕",
  ["info"] = "i",
  ["sparkle"] = "✦", -- a Claude Code session / the claude-code group
  ["robot"] = "⚙", -- a Codex session / the codex group
  ["star-full"] = "★", -- a Gemini CLI session / the gemini-cli group
  ["terminal"] = "❯", -- an OpenCode session / the opencode group
  ["copilot"] = "◈", -- a Copilot CLI session / the copilot-cli group
  ["cloud"] = "☁", -- a Qwen Code session / the qwen-code group
  ["folder"] = "▤", -- a workspace group
  ["question"] = "?", -- sessions without a workspace
  ["fold"] = "⊟", -- a compaction helper session
}

M.ascii = {
  ["circle-filled"] = "*",
  ["history"] = "@",
  ["circle-outline"] = "o",
  ["circle-slash"] = "x",
  ["warning"] = "!",
  ["error"] = "E",
  ["type-hierarchy-sub"] = "\\",
  ["type-hierarchy"] = "Y",
  ["list-unordered"] = "=",
  ["list-ordered"] = ":",
  ["ellipsis"] = "~",
  ["arrow-swap"] = "<>",
  ["replace-all"] = ">>",
  ["arrow-left"] = "<-",
  ["arrow-right"] = "->",
  ["search"] = "?",
  ["info"] = "i",
  ["sparkle"] = "C",
  ["robot"] = "X",
  ["star-full"] = "G",
  ["terminal"] = "O",
  ["copilot"] = "P",
  ["cloud"] = "Q",
  ["folder"] = "/",
  ["question"] = "?",
  ["fold"] = "z",
}

M.fallback = { unicode = "•", ascii = "-" }

--- Text for a codicon name (nil for a node without an icon).
function M.get(name)
  if name == nil or name == vim.NIL then
    return nil
  end
  local opts = require("dsh_query.config").options
  local custom = opts.icons or {}
  if custom[name] then
    return custom[name]
  end
  local table_ = opts.ascii_icons and M.ascii or M.unicode
  return table_[name] or (opts.ascii_icons and M.fallback.ascii or M.fallback.unicode)
end

return M
