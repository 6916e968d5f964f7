-- Ghost text for Neovim 0.10 and 0.11 (no vim.lsp.inline_completion): request
-- textDocument/inlineCompletion as the user types (debounced) and show the first item as
-- extmarks: inline virtual text at the cursor, further lines as virtual lines. An explicit
-- request (M.request with kind 1) may answer several items: M.select cycles through them.
local feedback = require('lsp_copilot.feedback')

local M = {}

M.ns = vim.api.nvim_create_namespace('lsp_copilot.ghost')

---@class lsp_copilot.Ghost
---@field bufnr integer
---@field row integer 0-based
---@field col integer 0-based byte column
---@field text string the item shown
---@field items string[] every item answered
---@field covers integer[] per item, the bytes right of the cursor it takes over (closers
--- the editor auto-inserted that the item writes again: its range ends past them)
---@field index integer which one is shown
---@field position { line: integer, character: integer } where they start (LSP)
---@field client_id integer

---@type lsp_copilot.Ghost?
local current
---@type uv.uv_timer_t?
local timer
local request_seq = 0
local augroup = vim.api.nvim_create_augroup('lsp_copilot.ghost', { clear = true })

---@param client vim.lsp.Client
---@param method string
---@param params table
---@param handler fun(err: any, result: any)
---@param bufnr integer
local function request(client, method, params, handler, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr) ---@diagnostic disable-line
end

function M.clear()
  if current and vim.api.nvim_buf_is_valid(current.bufnr) then
    vim.api.nvim_buf_clear_namespace(current.bufnr, M.ns, 0, -1)
  end
  current = nil
end

---@return lsp_copilot.Ghost?
function M.current()
  return current
end

---@param g lsp_copilot.Ghost
local function show(g)
  M.clear()
  local bufnr, row, col, text = g.bufnr, g.row, g.col, g.text
  local lines = vim.split(text, '\n', { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { lines[i], 'Comment' } })
  end
  local virt_text = { { lines[1], 'Comment' } }
  if #g.items > 1 then -- as Neovim's own inline completion shows it: (2/3)
    table.insert(#virt_lines > 0 and virt_lines[#virt_lines] or virt_text,
      { (' (%d/%d)'):format(g.index, #g.items), 'Comment' })
  end
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, col, {
    virt_text = virt_text,
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = 'combine',
  })
  current = g
end

---@param g lsp_copilot.Ghost
local function shown(g)
  local client = vim.lsp.get_client_by_id(g.client_id)
  if client then
    feedback.shown(client, { uri = vim.uri_from_bufnr(g.bufnr), position = g.position, text = g.text,
      id = g.ids and g.ids[g.index] })
  end
end

---@param client vim.lsp.Client
---@param bufnr integer
---@param kind? integer triggerKind: 2 Automatic (default), 1 Invoked (the user asked)
---@param select? integer the item to show first (default 1)
function M.request(client, bufnr, kind, select)
  if vim.api.nvim_get_current_buf() ~= bufnr or not vim.api.nvim_get_mode().mode:match('^i') then
    return
  end
  if kind == 1 and timer then
    timer:stop() -- the user asked: an automatic request after it would replace its answer
  end
  request_seq = request_seq + 1
  local seq = request_seq
  local cursor = vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  ---@cast params table
  params.context = { triggerKind = kind or 2 }
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local started = vim.uv.hrtime()
  request(client, 'textDocument/inlineCompletion', params, function(err, result)
    require('lsp_copilot').state.latency_ms = (vim.uv.hrtime() - started) / 1e6
    if err or seq ~= request_seq or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return -- the user typed on: a newer request is on its way
    end
    local texts, ids, covers = {}, {}, {}
    for _, item in ipairs(result and (result.items or result) or {}) do
      local text = type(item.insertText) == 'string' and item.insertText or item.insertText.value
      if text and text ~= '' then
        table.insert(texts, text)
        ids[#texts] = feedback.id(item) -- (nil for a server without ids)
        -- (what a range covers is closers and quotes: one byte per LSP character)
        local range = item.range
        covers[#texts] = range and range['end'].line == params.position.line
          and math.max(0, range['end'].character - params.position.character) or 0
      end
    end
    if #texts == 0 then
      M.clear()
      feedback.dismissed(client)
      return
    end
    local index = ((select or 1) - 1) % #texts + 1 -- (wrapping: -1 + 1 is the last)
    local g = { bufnr = bufnr, row = row, col = col, text = texts[index], items = texts, index = index,
      ids = ids, covers = covers, position = params.position, client_id = client.id }
    show(g)
    shown(g)
  end, bufnr)
end

--- Show the suggestion `count` items away (wrapping); with only one on screen (an
--- automatic answer), ask for alternatives explicitly and show the next one. False when
--- there is nothing to cycle.
---@param count integer
---@return boolean
function M.select(count)
  local g = current
  if not g or g.bufnr ~= vim.api.nvim_get_current_buf() then
    return false
  end
  if #g.items < 2 then
    local client = vim.lsp.get_client_by_id(g.client_id)
    if client then
      M.request(client, g.bufnr, 1, 1 + count)
    end
    return true
  end
  local index = (g.index - 1 + count) % #g.items + 1
  show(vim.tbl_extend('force', g, { index = index, text = g.items[index] }))
  shown(current --[[@as lsp_copilot.Ghost]])
  return true
end

--- The next word (leading blanks, then a word or one other character) or the next line
--- (up to its end; a line break first: that break and the line after it) of `text`.
---@param text string
---@param what 'word'|'line'
---@return string
function M.next_part(text, what)
  if what == 'word' then
    return text:match('^%s*[%w_]+') or text:match('^%s*[^%w_%s]') or text
  end
  local line = text:match('^[^\n]+')
  return line or text:match('^\n[^\n]*') or text
end

--- LSP characters (the client's position encoding) in `part`.
---@param part string
---@param encoding string
---@return integer
function M.units(part, encoding)
  if encoding == 'utf-8' then
    return #part
  end
  if vim.fn.has('nvim-0.11') == 0 then
    local utf32, utf16 = vim.str_utfindex(part, #part) ---@diagnostic disable-line: param-type-mismatch
    return encoding == 'utf-32' and utf32 or utf16
  end
  return vim.str_utfindex(part, encoding == 'utf-32' and 'utf-32' or 'utf-16', #part, false)
end

--- Insert the next word or line of the ghost text and tell the server (didAccept with
--- acceptedChars); the rest comes back as you go on (the server types it through).
---@param what 'word'|'line'
---@return boolean
function M.accept_part(what)
  local g = current
  if not g or g.bufnr ~= vim.api.nvim_get_current_buf() then
    return false
  end
  local part = M.next_part(g.text, what)
  M.clear()
  local lines = vim.split(part, '\n', { plain = true })
  vim.api.nvim_buf_set_text(g.bufnr, g.row, g.col, g.row, g.col, lines)
  local last = #lines == 1 and g.col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { g.row + #lines, last })
  local client = vim.lsp.get_client_by_id(g.client_id)
  if client then
    local params = { uri = vim.uri_from_bufnr(g.bufnr), position = g.position, text = g.text,
      id = g.ids and g.ids[g.index] }
    if #part < #g.text then
      params.acceptedChars = M.units(part, client.offset_encoding)
    end
    feedback.accepted(client, params)
  end
  return true
end

--- Insert the ghost text at its place; false when there is none.
---@return boolean
function M.accept()
  local g = current
  if not g or g.bufnr ~= vim.api.nvim_get_current_buf() then
    return false
  end
  M.clear()
  local lines = vim.split(g.text, '\n', { plain = true })
  local covered = g.covers and g.covers[g.index] or 0
  vim.api.nvim_buf_set_text(g.bufnr, g.row, g.col, g.row, g.col + covered, lines)
  local last = #lines == 1 and g.col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { g.row + #lines, last })
  local client = vim.lsp.get_client_by_id(g.client_id)
  if client then
    feedback.accepted(client)
  end
  return true
end

function M.dismiss()
  local g = current
  M.clear()
  local client = g and vim.lsp.get_client_by_id(g.client_id)
  if client then
    feedback.dismissed(client)
  end
end

---@param client vim.lsp.Client
---@param bufnr integer
---@param debounce_ms integer
function M.attach(client, bufnr, debounce_ms)
  vim.api.nvim_clear_autocmds({ group = augroup, buffer = bufnr })
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'InsertEnter' }, {
    group = augroup,
    buffer = bufnr,
    callback = function()
      M.clear()
      if timer then
        timer:stop()
      end
      timer = timer or assert(vim.uv.new_timer())
      timer:start(debounce_ms, 0, vim.schedule_wrap(function()
        if not require('lsp_copilot').is_stopped(client) then
          M.request(client, bufnr)
        end
      end))
    end,
  })
  vim.api.nvim_create_autocmd('CursorMovedI', {
    group = augroup,
    buffer = bufnr,
    callback = function()
      local g = current
      if g then
        local cursor = vim.api.nvim_win_get_cursor(0)
        if cursor[1] - 1 ~= g.row or cursor[2] ~= g.col then
          M.dismiss()
        end
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = augroup,
    buffer = bufnr,
    callback = M.dismiss,
  })
end

function M.detach_all()
  M.clear()
  vim.api.nvim_clear_autocmds({ group = augroup })
end

return M
