-- The connection to dsh_query_server: start it (vim.lsp.start on 0.8+, vim.lsp.start_client on
-- 0.7 or when `use_start_client` is set), or attach to a client of the same name that is already
-- running; queue requests until `initialize` has answered; route `sessionQuery/didChange`.
-- With `hub` (the default) the server is the user's hub (hub.md §3): its socket on 0.10+, a
-- `dsh-query hub connect` bridge before; a dropped hub connection is reconnected with back-off.
local config = require("dsh_query.config")

local M = {}

local state = {
  client_id = nil, -- the LSP client in use
  path = nil, -- "start" | "start_client" | "attached"
  ready = false, -- initialize has answered
  queue = {}, -- functions waiting for `ready`, called with (client) or (nil, err)
  pending = 0, -- requests sent and not yet answered (for :lua require'dsh_query'.wait())
  anchor = nil, -- hidden buffer vim.lsp.start attaches to (0.8 .. 0.10 always attach)
  listeners = {}, -- didChange listeners
  hub = false, -- the client in use talks to the hub
  stopping = false, -- M.stop() was called: no reconnection
  reconnecting = false,
}
M.state = state

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

local function levels()
  return vim.log and vim.log.levels or { ERROR = 4, WARN = 3, INFO = 2 }
end

--- Show a server error: `dsh-query: <message> [<data.code>]`.
function M.notify_error(err, context)
  local message, code
  if type(err) == "table" then
    message = err.message
    code = type(err.data) == "table" and err.data.code or nil
    if code == nil and err.code ~= nil then
      code = tostring(err.code)
    end
  else
    message = tostring(err)
  end
  local text = "dsh-query: " .. (context and (context .. ": ") or "") .. tostring(message or "error")
  if code then
    text = text .. " [" .. tostring(code) .. "]"
  end
  vim.notify(text, levels().ERROR)
end

local function in_main(fn)
  if vim.in_fast_event() then
    vim.schedule(fn)
  else
    fn()
  end
end

local function get_client(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

local function is_stopped(client)
  if client == nil then
    return true
  end
  if has("0.11") then
    return client:is_stopped()
  end
  return client.is_stopped()
end

local function running_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = config.options.name })
  end
  local out = {}
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == config.options.name then
      out[#out + 1] = client
    end
  end
  return out
end

local function flush(client, err)
  local queue = state.queue
  state.queue = {}
  for _, fn in ipairs(queue) do
    fn(client, err)
  end
end

--- Forget the client and fail the queued requests with `err` (a message or an error object).
--- `notified`: the user has been told already, the failed requests stay quiet.
local function reset(err, notified)
  require("dsh_query.progress").started()
  state.client_id, state.path, state.ready = nil, nil, false
  if type(err) ~= "table" then
    err = { message = err or "the server is not running" }
  end
  flush(nil, vim.tbl_extend("force", err, { notified = notified or nil }))
end

--- `sessionQuery/didChange` {sessionIds?, corpus?}: tell every listener (open trees mark
--- themselves stale; they refresh on `R`).
function M.on_did_change(_, params)
  in_main(function()
    for _, fn in pairs(state.listeners) do
      pcall(fn, params or {})
    end
  end)
end

function M.subscribe(key, fn)
  state.listeners[key] = fn
end

local function anchor_buffer()
  if state.anchor and vim.api.nvim_buf_is_valid(state.anchor) then
    return state.anchor
  end
  local buf = vim.fn.bufnr("dsh-query://server")
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, "dsh-query://server")
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  state.anchor = buf
  return buf
end

local function stop_client(client, force)
  if client then
    pcall(function()
      if has("0.11") then client:stop(force) else client.stop(force) end
    end)
  end
end

-- Neovim's client asserts on an `initialize` error inside a scheduled callback (0.7 .. 0.11), so
-- neither on_error nor on_exit ever hears of it: the user would see a Lua traceback and the
-- requests would wait forever. Wrap the RPC client so an initialize error is answered here
-- instead: notify it with its data.code, fail the queued requests, stop the client.
local function on_initialize_error(err)
  in_main(function()
    M.notify_error(err, "the server refused to initialize")
    local client = get_client(state.client_id)
    local failure = type(err) == "table" and vim.deepcopy(err) or { message = tostring(err) }
    failure.message = "the server refused to initialize: " .. tostring(failure.message)
    reset(failure, true)
    stop_client(client, true)
  end)
end

local function guard_initialize(rpc_client)
  if type(rpc_client) ~= "table" or type(rpc_client.request) ~= "function" then
    return rpc_client
  end
  local request = rpc_client.request
  rpc_client.request = function(method, params, callback, ...)
    if method == "initialize" and type(callback) == "function" then
      local inner = callback
      callback = function(err, result, ...)
        if err then
          return on_initialize_error(err)
        end
        return inner(err, result, ...)
      end
    end
    return request(method, params, callback, ...)
  end
  return rpc_client
end

--- Run fn() with vim.lsp.rpc.start wrapped by guard_initialize (start_client calls it synchronously).
local function guarded(fn)
  local mod = vim.lsp.rpc
  local original = mod.start
  mod.start = function(...)
    return guard_initialize(original(...))
  end
  local ok, a, b = pcall(fn)
  mod.start = original
  if not ok then
    return nil, a
  end
  return a, b
end

local HUB_OPTIONS_ENV = "DSH_QUERY_HUB_OPTIONS"

local function json_options(init_options)
  if init_options == nil or next(init_options) == nil then
    return "{}"
  end
  return vim.fn.json_encode(init_options)
end

--- `cmd` for `dsh-query hub <action>`: `… -m dsh_query_server …` becomes
--- `… -m dsh_query_server.cli hub <action> …`, `dsh-query serve …` becomes
--- `dsh-query hub <action> …`; nil when `cmd` is neither (or names a private-only flag).
function M.hub_argv(cmd, action)
  if type(cmd) ~= "table" then
    return nil
  end
  for _, arg in ipairs(cmd) do
    local flag = tostring(arg):match("^([^=]*)")
    if flag == "--demo" or flag == "--tcp" or flag == "--tcp-token-file" then
      return nil
    end
  end
  local out = {}
  for i, arg in ipairs(cmd) do
    if arg == "-m" and cmd[i + 1] == "dsh_query_server" then
      vim.list_extend(out, { "-m", "dsh_query_server.cli", "hub", action })
      vim.list_extend(out, vim.list_slice(cmd, i + 2))
      return out
    elseif arg == "serve" and i == 2 then
      vim.list_extend(out, { "hub", action })
      vim.list_extend(out, vim.list_slice(cmd, i + 1))
      return out
    end
    out[#out + 1] = arg
  end
  return nil
end

--- The hub to use, or nil for a private server: {argv, env} of the bridge, or {socket} on 0.10+.
local function hub_target(opts)
  if not opts.hub or opts.tcp then
    return nil
  end
  local env = vim.tbl_extend("force", opts.cmd_env or {}, { [HUB_OPTIONS_ENV] = json_options(opts.init_options) })
  local connect_argv = opts.hub_cmd or M.hub_argv(opts.cmd, "connect")
  if not connect_argv then
    return nil
  end
  if has("0.10") and vim.system and vim.lsp.rpc and vim.lsp.rpc.connect then
    local ensure_argv = vim.deepcopy(connect_argv)
    for i, arg in ipairs(ensure_argv) do
      if arg == "connect" and ensure_argv[i - 1] == "hub" then
        ensure_argv[i] = "ensure"
      end
    end
    local done = vim.system(ensure_argv, { env = env, cwd = opts.cmd_cwd, text = true }):wait(20000)
    local ok, status = pcall(vim.fn.json_decode, done.stdout or "")
    if done.code ~= 0 or not ok or type(status) ~= "table" or type(status.socket) ~= "string" then
      error("the hub could not be started: " .. vim.trim(done.stderr or ""))
    end
    return { socket = status.socket }
  end
  return { argv = connect_argv, env = env }
end

local function client_config()
  local opts = config.options
  local cmd = opts.cmd
  local cmd_env = opts.cmd_env
  local hub = hub_target(opts)
  state.hub = hub ~= nil
  if hub and hub.socket then
    local connect = vim.lsp.rpc.connect(hub.socket)
    cmd = function(...)
      return guard_initialize(connect(...))
    end
  elseif hub then
    cmd, cmd_env = hub.argv, hub.env
  end
  if opts.tcp then
    local host, port = tostring(opts.tcp):match("^(.*):(%d+)$")
    if not host or not (vim.lsp.rpc and vim.lsp.rpc.connect) then
      error("tcp = " .. tostring(opts.tcp) .. ": needs HOST:PORT and Neovim 0.8+ (vim.lsp.rpc.connect)")
    end
    local connect = vim.lsp.rpc.connect(host, tonumber(port))
    cmd = function(...)
      return guard_initialize(connect(...))
    end
  end
  local init_options = opts.init_options
  if init_options == nil or next(init_options) == nil then
    init_options = vim.empty_dict()
  end
  return {
    name = opts.name,
    cmd = cmd,
    cmd_env = cmd_env,
    cmd_cwd = opts.cmd_cwd,
    root_dir = (vim.uv or vim.loop).cwd(),
    init_options = init_options,
    handlers = {
      ["sessionQuery/didChange"] = M.on_did_change,
      ["$/progress"] = require("dsh_query.progress").handler,
    },
    on_init = function(client)
      in_main(function()
        if state.client_id == nil or state.client_id == client.id then
          state.client_id = client.id
          state.ready = true
          require("dsh_query.progress").started()
          flush(client)
        end
      end)
    end,
    on_error = function(code, err)
      in_main(function()
        local names = vim.lsp.client_errors or {}
        local what = type(code) == "number" and names[code] or tostring(code)
        M.notify_error(err, "server error " .. tostring(what))
        if not state.ready then
          -- initialize failed (a bad init option answers -32602 SESSION_QUERY_INVALID_CONFIG)
          local client = get_client(state.client_id)
          reset("the server failed to initialize", true)
          stop_client(client, true)
        end
      end)
    end,
    on_exit = function(code, signal, client_id)
      in_main(function()
        if client_id == nil or client_id == state.client_id then
          local was_hub, was_ready = state.hub, state.ready
          if was_hub and was_ready and not state.stopping then
            reset("the hub connection dropped")
            M.reconnect(1)
            return
          end
          if code ~= 0 and code ~= nil then
            vim.notify(("dsh-query: the server exited (code %s, signal %s)"):format(code, signal),
              levels().WARN)
          end
          reset(("the server exited (code %s)"):format(code))
        end
      end)
    end,
  }
end

local function start()
  state.stopping = false
  local argv = config.options.hub_cmd or config.options.cmd
  if not config.options.tcp and type(argv) == "table" and vim.fn.executable(argv[1] or "") == 0 then
    return nil, ("%s is not executable (set cmd in require('dsh_query').setup())"):format(tostring(argv[1]))
  end
  local ok_conf, conf = pcall(client_config)
  if not ok_conf then
    return nil, tostring(conf):gsub("^.-:%d+: ", "")
  end
  local id, err
  if vim.lsp.start and not config.options.use_start_client then
    local opts = {
      bufnr = anchor_buffer(),
      reuse_client = function(client, c)
        return client.name == c.name and not is_stopped(client)
      end,
    }
    if has("0.11") then
      opts.attach = false
    end
    id, err = guarded(function()
      return vim.lsp.start(conf, opts)
    end)
    state.path = "start"
  elseif vim.lsp.start_client then
    id, err = guarded(function()
      return vim.lsp.start_client(conf)
    end)
    state.path = "start_client"
  else -- a future Neovim without start_client
    id, err = guarded(function()
      return vim.lsp.start(conf, { bufnr = anchor_buffer(), attach = false })
    end)
    state.path = "start"
  end
  if not id then
    state.path = nil
    return nil, err or "vim.lsp could not start the client"
  end
  state.client_id = id
  if not state.ready then
    require("dsh_query.progress").starting()
  end
  local timeout = config.options.start_timeout_ms
  vim.defer_fn(function()
    if state.client_id == id and not state.ready then
      local failure = { message = ("the server did not initialize within %d ms"):format(timeout) }
      M.notify_error(failure)
      reset(failure, true)
    end
  end, timeout)
  return id
end

--- Call fn(client) once a ready client exists (starting or attaching as needed), or
--- fn(nil, err) when that fails.
function M.with_client(fn)
  local client = get_client(state.client_id)
  if client and not is_stopped(client) then
    if state.ready then
      fn(client)
    else
      table.insert(state.queue, fn)
    end
    return
  end
  state.client_id, state.ready = nil, false
  for _, running in ipairs(running_clients()) do
    if not is_stopped(running) then
      state.client_id, state.path = running.id, "attached"
      if running.initialized then
        state.ready = true
        fn(running)
      else
        -- a client someone else started and that is still initializing: poll for it
        table.insert(state.queue, fn)
        local id, waited = running.id, 0
        local function poll()
          local c = get_client(id)
          if state.client_id ~= id then
            return
          elseif c and c.initialized then
            state.ready = true
            flush(c)
          elseif not c or is_stopped(c) or waited >= config.options.start_timeout_ms then
            reset("the running dsh_query client did not initialize")
          else
            waited = waited + 50
            vim.defer_fn(poll, 50)
          end
        end
        vim.defer_fn(poll, 50)
      end
      return
    end
  end
  table.insert(state.queue, fn)
  if state.client_id == nil then
    local id, err = start()
    if not id then
      local failure = { message = "cannot start the server: " .. tostring(err) }
      M.notify_error(failure)
      flush(nil, vim.tbl_extend("force", failure, { notified = true }))
    end
  end
end

--- Send a request; cb(err, result). Errors are also shown with vim.notify unless opts.silent.
function M.request(method, params, cb, opts)
  opts = opts or {}
  cb = cb or function() end
  state.pending = state.pending + 1
  local done = false
  local function finish(err, result)
    if done then
      return
    end
    done = true
    in_main(function()
      -- counted as pending until its callback ran, so wait() also covers the follow-up requests
      -- a callback sends (lazy expansion of "expanded" nodes)
      if err and not opts.silent and not err.notified then
        M.notify_error(err)
      end
      local ok, problem = pcall(cb, err, result)
      state.pending = state.pending - 1
      if not ok then
        vim.notify("dsh-query: " .. tostring(problem), levels().ERROR)
      end
    end)
  end
  M.with_client(function(client, err)
    if not client then
      return finish(err or { message = "the server is not running" })
    end
    local handler = function(e, result)
      finish(e, result)
    end
    local ok
    if has("0.11") then
      ok = client:request(method, params or vim.empty_dict(), handler, state.anchor)
    else
      ok = client.request(method, params or vim.empty_dict(), handler, state.anchor)
    end
    if not ok then
      finish({ message = "the server connection is closed" })
    end
  end)
end

--- Synchronous request (for completion): result or nil.
function M.request_sync(method, params, timeout_ms)
  local client = get_client(state.client_id)
  if not client or not state.ready or is_stopped(client) then
    return nil
  end
  local response
  if has("0.11") then
    response = client:request_sync(method, params or vim.empty_dict(), timeout_ms or 1000, state.anchor)
  else
    response = client.request_sync(method, params or vim.empty_dict(), timeout_ms or 1000, state.anchor)
  end
  return response and response.result or nil
end

--- Wait until every request sent so far has answered (tests, scripts). Returns true when idle.
function M.wait(timeout_ms)
  return vim.wait(timeout_ms or 10000, function()
    return state.pending == 0 and #state.queue == 0
  end, 10)
end

--- After a dropped hub connection: connect again (a new hub is started if needed) after the
--- configured back-off, then tell the listeners, so open trees refresh.
function M.reconnect(attempt)
  local delays = config.options.reconnect_ms or {}
  if state.reconnecting or attempt > #delays then
    return
  end
  state.reconnecting = true
  vim.notify("dsh-query: the hub connection dropped; reconnecting", levels().WARN)
  vim.defer_fn(function()
    state.reconnecting = false
    if state.stopping then
      return
    end
    M.with_client(function(client)
      if client then
        for _, fn in pairs(state.listeners) do
          pcall(fn, { corpus = true, reconnected = true })
        end
      elseif attempt < #delays then
        M.reconnect(attempt + 1)
      end
    end)
  end, delays[attempt])
end

function M.stop()
  state.stopping = true
  stop_client(get_client(state.client_id))
  state.client_id, state.ready, state.path = nil, false, nil
end

function M.info()
  local client = get_client(state.client_id)
  return {
    client_id = state.client_id,
    path = state.path,
    ready = state.ready,
    hub = state.hub,
    pending = state.pending,
    capabilities = client and client.server_capabilities or nil,
  }
end

return M
