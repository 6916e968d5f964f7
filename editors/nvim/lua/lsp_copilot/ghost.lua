-- Ghost text for Neovim 0.10 and 0.11 (no vim.lsp.inline_completion): request
-- textDocument/inlineCompletion as the user types (debounced) and show the first item as
-- extmarks: inline virtual text at the cursor, further lines as virtual lines.
local feedback = require('lsp_copilot.feedback')

local M = {}

M.ns = vim.api.nvim_create_namespace('lsp_copilot.ghost')

---@class lsp_copilot.Ghost
---@field bufnr integer
---@field row integer 0-based
---@field col integer 0-based byte column
---@field text string
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

---@param bufnr integer
---@param row integer
---@param col integer
---@param text string
---@param client_id integer
local function show(bufnr, row, col, text, client_id)
  M.clear()
  local lines = vim.split(text, '\n', { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { lines[i], 'Comment' } })
  end
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, col, {
    virt_text = { { lines[1], 'Comment' } },
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = 'combine',
  })
  current = { bufnr = bufnr, row = row, col = col, text = text, client_id = client_id }
end

---@param client vim.lsp.Client
---@param bufnr integer
function M.request(client, bufnr)
  if vim.api.nvim_get_current_buf() ~= bufnr or not vim.api.nvim_get_mode().mode:match('^i') then
    return
  end
  request_seq = request_seq + 1
  local seq = request_seq
  local cursor = vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  ---@cast params table
  params.context = { triggerKind = 2 } -- Automatic
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
    local items = result and (result.items or result) or {}
    local item = items[1]
    local text = item and (type(item.insertText) == 'string' and item.insertText or item.insertText.value)
    if not text or text == '' then
      M.clear()
      feedback.dismissed(client)
      return
    end
    show(bufnr, row, col, text, client.id)
    feedback.shown(client, {
      uri = vim.uri_from_bufnr(bufnr),
      position = params.position,
      text = text,
      id = feedback.id(item),
    })
  end, bufnr)
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
  vim.api.nvim_buf_set_text(g.bufnr, g.row, g.col, g.row, g.col, lines)
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
