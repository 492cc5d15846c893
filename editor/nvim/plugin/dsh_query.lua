-- dsh-query commands (:DshSessions, :DshEvents, :DshTrace, :DshRead, :DshSearch, ...).
-- Nothing starts until a command runs; configure with require("dsh_query").setup({...}).
if vim.g.loaded_dsh_query then
  return
end
vim.g.loaded_dsh_query = true

if vim.fn.has("nvim-0.7") == 0 then
  vim.notify("dsh-query needs Neovim 0.7 or newer", vim.log.levels.WARN)
  return
end

require("dsh_query").create_commands()
