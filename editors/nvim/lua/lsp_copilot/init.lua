-- lsp-copilot for Neovim: starts `lsp-copilot serve` for programming filetypes and shows
-- its inline completions as ghost text; <Tab> accepts, <M-Right> / <M-C-Right> accept the
-- next word / line, <M-\> asks for suggestions now (several), <M-]> / <M-[> cycle.
--   Neovim 0.12: vim.lsp.config / vim.lsp.enable and vim.lsp.inline_completion.
--   Neovim 0.10, 0.11: ghost text of our own (lsp_copilot.ghost), from
--   textDocument/inlineCompletion requested as the user types.
local feedback = require('lsp_copilot.feedback')
local ghost = require('lsp_copilot.ghost')
local trust = require('lsp_copilot.trust')

local M = {}

M.name = 'lsp_copilot'

---@class lsp_copilot.Options
---@field cmd? string[] server command (default: lsp-copilot on PATH, else in a .venv above the cwd once you agree, with `serve`)
---@field confirm_server? fun(path: string): boolean? asks whether a project's own server may run (default: a dialog; true: run, false: never, nil: not now)
---@field trust_file? string where the answers are kept (default: stdpath('data')/lsp_copilot/trusted_servers.json)
---@field filetypes? string[] filetypes to attach to (default: M.default_filetypes)
---@field root_markers? string[]
---@field settings? table server settings, camelCase (enable, model, maxPromptTokens, ...)
---@field ghost_text? 'auto'|'native'|'extmark' native needs Neovim 0.12 (auto: native when available)
---@field accept_key? string|false insert-mode key that accepts (default <Tab>; falls back to the key itself)
---@field dismiss_key? string|false insert-mode key that dismisses (default <C-]>)
---@field suggest_key? string|false insert-mode key that asks for suggestions now, an explicit request (default <M-\>)
---@field next_key? string|false insert-mode key: the next suggestion (default <M-]>)
---@field prev_key? string|false insert-mode key: the previous suggestion (default <M-[>)
---@field accept_word_key? string|false insert-mode key: accept the next word (default <M-Right>)
---@field accept_line_key? string|false insert-mode key: accept the next line (default <M-C-Right>)
---@field debounce_ms? integer extmark ghost text: wait this long after a keystroke (default 150)

M.default_filetypes = {
  'c', 'cpp', 'cs', 'css', 'go', 'haskell', 'html', 'java', 'javascript', 'javascriptreact',
  'json', 'kotlin', 'lua', 'make', 'markdown', 'ocaml', 'php', 'python', 'ruby', 'rust',
  'scala', 'sh', 'sql', 'swift', 'toml', 'typescript', 'typescriptreact', 'vim', 'yaml', 'zig',
}

---@type lsp_copilot.Options
M.options = {}

---@type { state: string, message: string, latency_ms: number? }
M.state = { state = 'starting', message = '' }

local has_011 = vim.fn.has('nvim-0.11') == 1

---@param client vim.lsp.Client
function M.is_stopped(client)
  if has_011 then
    return client:is_stopped()
  end
  return client.is_stopped() ---@diagnostic disable-line
end

--- The server command: lsp-copilot on PATH, else in a virtual environment above the cwd
--- once the user agreed to run that file (lsp_copilot.trust).
---@param ask? boolean false: only an answer already kept counts (:checkhealth)
---@return string[]?
function M.find_cmd(ask)
  return trust.find_cmd(ask ~= false and (M.options.confirm_server or trust.confirm) or nil, M.options.trust_file)
end

function M.native()
  local mode = M.options.ghost_text or 'auto'
  if mode == 'extmark' then
    return false
  end
  return vim.lsp.inline_completion ~= nil
end

---@param bufnr? integer
---@return vim.lsp.Client?
function M.client(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr })[1]
end

---@param client vim.lsp.Client
---@param method string
---@param params table?
---@param handler fun(err: any, result: any)
function M.request(client, method, params, handler)
  if has_011 then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler) ---@diagnostic disable-line
end

---@param client vim.lsp.Client
---@param method string
---@param params table?
---@param timeout_ms integer?
---@return any result, any err
function M.request_sync(client, method, params, timeout_ms)
  local response
  if has_011 then
    response = client:request_sync(method, params, timeout_ms or 5000)
  else
    response = client.request_sync(method, params, timeout_ms or 5000) ---@diagnostic disable-line
  end
  if not response then
    return nil, 'timeout'
  end
  return response.result, response.err
end

--- lspCopilot/stats. `{}` rather than no params: the server rejects a custom request
--- whose params are missing.
---@return table? stats, any err
function M.stats(timeout_ms)
  local client = M.client()
  if not client then
    return nil, 'lsp-copilot is not running'
  end
  return M.request_sync(client, 'lspCopilot/stats', vim.empty_dict(), timeout_ms)
end

--- For statuslines: "lsp-copilot: loading (…)", "lsp-copilot 120 ms", "lsp-copilot: error".
function M.statusline()
  local s = M.state
  if s.state == 'ready' then
    return s.latency_ms and ('lsp-copilot %d ms'):format(s.latency_ms) or 'lsp-copilot'
  end
  return ('lsp-copilot: %s%s'):format(s.state, s.message ~= '' and (' (' .. s.message .. ')') or '')
end

--- Update M.state from the server's stats (asynchronously).
---@param client vim.lsp.Client
function M.refresh_state(client)
  M.request(client, 'lspCopilot/stats', vim.empty_dict(), function(err, stats)
    if not err and stats then
      M.state.state = stats.engine_state == 'failed' and 'error' or stats.engine_state
      M.state.message = stats.engine_error or ''
      vim.cmd.redrawstatus()
    end
  end)
end

local function server_settings()
  return { lspCopilot = M.options.settings or vim.empty_dict() }
end

function M.toggle()
  M.options.settings = M.options.settings or {}
  local enable = M.options.settings.enable == false
  M.options.settings.enable = enable
  M.state = { state = enable and 'loading' or 'disabled', message = '' }
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if has_011 then
      client:notify('workspace/didChangeConfiguration', { settings = server_settings() })
    else
      client.notify('workspace/didChangeConfiguration', { settings = server_settings() }) ---@diagnostic disable-line
    end
  end
  if enable then
    for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
      M.refresh_state(client) -- ready already, or loading (progress follows)
    end
  else
    ghost.dismiss()
  end
  vim.notify('lsp-copilot ' .. (enable and 'enabled' or 'disabled'))
  return enable
end

--- Accept the suggestion on screen (applied on the next tick, so that this works from an
--- <expr> mapping). Returns false when there is none.
function M.accept()
  if M.native() then
    return vim.lsp.inline_completion.get({ on_accept = M._accept_native })
  end
  if not ghost.current() then
    return false
  end
  vim.schedule(ghost.accept)
  return true
end

--- Neovim 0.12's inline completion object for `bufnr`: it has no public way to make an
--- explicit request, so this reaches for its (private) instance; nil where that changed.
---@param bufnr integer
local function native_completor(bufnr)
  local ok, capability = pcall(require, 'vim.lsp._capability')
  local class = ok and type(capability.all) == 'table' and capability.all.inline_completion
  local completor = class and class.active and class.active[bufnr]
  if completor and type(completor.request) == 'function' then
    return completor
  end
end

--- Ask for suggestions now (triggerKind Invoked: never cut short, several of them).
---@return boolean
function M.suggest()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return false
  end
  local completor = M.native() and native_completor(bufnr)
  if completor then
    -- Drop the automatic request pending or under way: its answer would replace this one.
    pcall(completor.reset_timer, completor)
    pcall(completor.abort, completor)
    completor:request(1)
  else
    ghost.request(client, bufnr, 1)
  end
  return true
end

--- Show the suggestion `count` away (negative: back); with a single one on screen, ask
--- for more first (an explicit request), as VS Code does.
---@param count integer
---@return boolean
function M.select(count)
  if not M.native() then
    return ghost.select(count)
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local completor = native_completor(bufnr)
  if completor and completor.current and completor:count_items() < 2 then
    M._select_after = count -- once the answer is in (see watch_inline_results)
    pcall(completor.reset_timer, completor)
    completor:request(1)
    return true
  end
  vim.lsp.inline_completion.select({ bufnr = bufnr, count = count })
  M._show_current(bufnr)
  return true
end

--- didShow for the item Neovim 0.12 has on screen now (after cycling): feedback names the
--- item the user sees, not the first one answered.
---@param bufnr integer
function M._show_current(bufnr)
  local completor = native_completor(bufnr)
  local item = completor and completor.current
  local client = item and vim.lsp.get_client_by_id(item.client_id)
  local params = item and feedback.params(item)
  if client and params then
    feedback.shown(client, params)
  end
end

--- Accept the next word or line of the suggestion on screen.
---@param what 'word'|'line'
---@return boolean
function M.accept_part(what)
  if M.native() then
    return vim.lsp.inline_completion.get({
      on_accept = function(item)
        M._accept_native(item, what)
      end,
    })
  end
  return ghost.accept_part(what)
end

--- Apply a vim.lsp.inline_completion item (what Neovim's default does), or its next word
--- or line, then tell the server (acceptedChars for a part).
---@param item vim.lsp.inline_completion.Item
---@param what? 'word'|'line'
function M._accept_native(item, what)
  local bufnr = vim.api.nvim_get_current_buf()
  local full = type(item.insert_text) == 'string' and item.insert_text or item.insert_text.value
  local text = what and ghost.next_part(full, what) or full
  local lines = vim.split(text, '\n', { plain = true })
  local row, col, end_row, end_col
  if item.range then
    row, col = item.range.start.row, item.range.start.col
    end_row, end_col = item.range.end_.row, item.range.end_.col
    if #text < #full then -- a part: the closers the item covers stay (its rest covers them)
      end_row, end_col = row, col
    end
  else
    local cursor = vim.api.nvim_win_get_cursor(0)
    row, col, end_row, end_col = cursor[1] - 1, cursor[2], cursor[1] - 1, cursor[2]
  end
  vim.api.nvim_buf_set_text(bufnr, row, col, end_row, end_col, lines)
  vim.api.nvim_win_set_cursor(0, { row + #lines, (#lines == 1 and col or 0) + #lines[#lines] })
  local client = vim.lsp.get_client_by_id(item.client_id)
  if client then
    -- The item taken, by its own id (the user may have cycled away from the first one).
    local params = vim.tbl_extend('force', feedback.params(item) or feedback.pending(client.id) or {
      uri = vim.uri_from_bufnr(bufnr), position = { line = row, character = col } }, { text = full })
    if #text < #full then
      params.acceptedChars = ghost.units(text, client.offset_encoding)
    end
    feedback.accepted(client, params)
  end
end

--- Neovim 0.12's inline completion calls the request handler directly: wrap our client's
--- request() to see what was shown (didShow / didReject) and how long it took.
---@param client vim.lsp.Client
local function watch_inline_results(client)
  local request = client.request
  ---@diagnostic disable-next-line: duplicate-set-field
  client.request = function(self, method, params, handler, bufnr)
    if method == 'textDocument/inlineCompletion' and handler
      and params.textDocument.uri ~= vim.uri_from_bufnr(vim.api.nvim_get_current_buf()) then
      -- Neovim 0.12's inline completion asks for every attached buffer when the cursor
      -- moves in any of them, each with the current window's position: a wasted engine
      -- call, and an answer whose range may not exist in that buffer. Answer it here.
      vim.schedule(function()
        handler(nil, { items = {} }, { method = method, client_id = self.id, bufnr = bufnr })
      end)
      return true, nil
    end
    if method == 'textDocument/inlineCompletion' and handler then
      local started = vim.uv.hrtime()
      local inner = handler
      handler = function(err, result, ctx, config)
        M.state.latency_ms = (vim.uv.hrtime() - started) / 1e6
        local items = not err and result and (result.items or result) or {}
        local item = items[1]
        local text = item and (type(item.insertText) == 'string' and item.insertText or item.insertText.value)
        if text and text ~= '' then
          feedback.shown(self, { uri = params.textDocument.uri, position = params.position, text = text,
            id = feedback.id(item) })
        else
          feedback.dismissed(self)
        end
        local out = inner(err, result, ctx, config)
        local count = M._select_after
        if count and params.context and params.context.triggerKind == 1 then
          M._select_after = nil
          vim.lsp.inline_completion.select({ bufnr = ctx and ctx.bufnr, count = count })
          M._show_current(ctx and ctx.bufnr or vim.api.nvim_get_current_buf())
        end
        return out
      end
    end
    return request(self, method, params, handler, bufnr)
  end
end

---@param client vim.lsp.Client
---@param bufnr integer
local function on_attach(client, bufnr)
  if M.native() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    vim.api.nvim_create_autocmd('InsertLeave', {
      buffer = bufnr,
      callback = function()
        feedback.dismissed(client)
      end,
    })
  else
    ghost.attach(client, bufnr, M.options.debounce_ms or 150)
  end
end

local function on_init(client)
  if M.native() then
    watch_inline_results(client)
  end
end

--- Switch between Neovim's inline completion and the extmark ghost text at run time.
---@param mode 'auto'|'native'|'extmark'
function M.use_ghost(mode)
  M.options.ghost_text = mode
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    for bufnr in pairs(client.attached_buffers) do
      if vim.lsp.inline_completion then
        vim.lsp.inline_completion.enable(M.native(), { bufnr = bufnr })
      end
      if M.native() then
        ghost.detach_all()
      else
        on_attach(client, bufnr)
      end
    end
  end
end

local function track_progress()
  local group = vim.api.nvim_create_augroup('lsp_copilot.progress', { clear = true })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if not client or client.name ~= M.name then
        return
      end
      local value = ev.data.params.value
      if value.kind == 'end' then
        -- The end message says "ready" or why not; stats say which. Asynchronously: a
        -- synchronous request would nest the event loop inside this autocommand.
        M.refresh_state(client)
      else
        M.state.state = 'loading'
        M.state.message = value.message or value.title or ''
      end
      vim.cmd.redrawstatus()
    end,
  })
end

local function show_stats()
  local stats, err = M.stats()
  if not stats then
    vim.notify('lsp-copilot: ' .. vim.inspect(err), vim.log.levels.ERROR)
    return
  end
  local lines = vim.split(vim.inspect(stats), '\n')
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = 'lua'
  vim.bo[buf].bufhidden = 'wipe'
  vim.b[buf].lsp_copilot_stats = stats
  local width = math.min(80, vim.o.columns - 4)
  local height = math.min(#lines, vim.o.lines - 4)
  vim.api.nvim_open_win(buf, true, {
    relative = 'editor', style = 'minimal', border = 'rounded', title = ' lsp-copilot stats ',
    width = width, height = math.max(height, 1), row = 1, col = math.max(0, vim.o.columns - width - 2),
  })
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf })
end

---@param opts? lsp_copilot.Options
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', {
    ghost_text = 'auto',
    accept_key = '<Tab>',
    dismiss_key = '<C-]>',
    suggest_key = '<M-\\>',
    next_key = '<M-]>',
    prev_key = '<M-[>',
    accept_word_key = '<M-Right>',
    accept_line_key = '<M-C-Right>',
    debounce_ms = 150,
    settings = {},
  }, opts or {})
  local cmd = M.options.cmd or M.find_cmd()
  if not cmd then
    vim.notify('lsp-copilot: `lsp-copilot` not found (or the project\'s own not allowed to run); '
      .. 'pass setup({ cmd = { "/path/to/lsp-copilot", "serve" } })',
      vim.log.levels.ERROR)
    return
  end
  M.options.cmd = cmd
  M.state = { state = M.options.settings.enable == false and 'disabled' or 'starting', message = '' }
  local config = {
    name = M.name,
    cmd = cmd,
    filetypes = M.options.filetypes or M.default_filetypes,
    root_markers = M.options.root_markers or { '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' },
    init_options = server_settings(),
    settings = server_settings(),
    on_init = on_init,
    on_attach = on_attach,
  }
  if vim.lsp.config and vim.lsp.enable then -- 0.11+
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
  else -- 0.10
    vim.api.nvim_create_autocmd('FileType', {
      group = vim.api.nvim_create_augroup('lsp_copilot.start', { clear = true }),
      pattern = config.filetypes,
      callback = function(ev)
        local root = vim.fs.root(ev.buf, config.root_markers) or vim.fn.getcwd()
        vim.lsp.start(vim.tbl_extend('force', config, { root_dir = root }), { bufnr = ev.buf })
      end,
    })
  end
  track_progress()

  if M.options.accept_key then
    vim.keymap.set('i', M.options.accept_key, function()
      if not M.accept() then
        return vim.keycode(M.options.accept_key)
      end
      return ''
    end, { expr = true, replace_keycodes = false, desc = 'lsp-copilot: accept the suggestion' })
  end
  if M.options.dismiss_key then
    vim.keymap.set('i', M.options.dismiss_key, function()
      ghost.dismiss()
      local client = M.client(0)
      if client then
        feedback.dismissed(client)
      end
      if M.native() then
        vim.lsp.inline_completion.enable(false, { bufnr = 0 })
        vim.lsp.inline_completion.enable(true, { bufnr = 0 })
      end
    end, { desc = 'lsp-copilot: dismiss the suggestion' })
  end

  local keys = {
    { 'suggest_key', M.suggest, 'ask for suggestions now' },
    { 'next_key', function() M.select(1) end, 'the next suggestion' },
    { 'prev_key', function() M.select(-1) end, 'the previous suggestion' },
    { 'accept_word_key', function() M.accept_part('word') end, 'accept the next word' },
    { 'accept_line_key', function() M.accept_part('line') end, 'accept the next line' },
  }
  for _, key in ipairs(keys) do
    if M.options[key[1]] then
      vim.keymap.set('i', M.options[key[1]], key[2], { desc = 'lsp-copilot: ' .. key[3] })
    end
  end
  for name, fn in pairs({
    LspCopilotSuggest = M.suggest,
    LspCopilotNext = function() M.select(1) end,
    LspCopilotPrev = function() M.select(-1) end,
    LspCopilotAcceptWord = function() M.accept_part('word') end,
    LspCopilotAcceptLine = function() M.accept_part('line') end,
  }) do
    vim.api.nvim_create_user_command(name, function()
      fn()
    end, { desc = 'lsp-copilot: ' .. name })
  end

  vim.api.nvim_create_user_command('LspCopilotStats', show_stats, { desc = 'lsp-copilot: show server stats' })
  vim.api.nvim_create_user_command('LspCopilotToggle', function()
    M.toggle()
  end, { desc = 'lsp-copilot: enable or disable completions' })
  vim.api.nvim_create_user_command('LspCopilotRestartEngine', function()
    local client = M.client()
    if not client then
      vim.notify('lsp-copilot is not running', vim.log.levels.WARN)
      return
    end
    M.request(client, 'workspace/executeCommand', { command = 'lspCopilot.restartEngine', arguments = {} },
      function(err, result)
        vim.notify('lsp-copilot: ' .. (err and vim.inspect(err) or (result and result.message or 'restarting')))
      end)
  end, { desc = 'lsp-copilot: restart the engine (after it stayed down)' })
end

return M
