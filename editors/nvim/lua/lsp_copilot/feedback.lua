-- lspCopilot/didShow, didAccept and didReject: a suggestion put on screen is shown; Tab
-- accepts it; one replaced by another, or dropped (leaving insert mode), is rejected.
local M = {}

---@class lsp_copilot.Feedback
---@field uri string
---@field position { line: integer, character: integer }
---@field text string
---@field id? string the server's id of the suggestion (from the item's command)

---@type table<integer, lsp_copilot.Feedback> pending suggestion per client id
local pending = {}

---@param a lsp_copilot.Feedback
---@param b lsp_copilot.Feedback
local function same(a, b)
  return a.uri == b.uri and a.text == b.text and a.position.line == b.position.line
    and a.position.character == b.position.character
end

---@param client vim.lsp.Client
---@param method string
---@param params lsp_copilot.Feedback
local function notify(client, method, params)
  if vim.fn.has('nvim-0.11') == 1 then
    client:notify(method, params)
  else
    client.notify(method, params) ---@diagnostic disable-line: missing-parameter
  end
end

---@param client vim.lsp.Client
---@param params lsp_copilot.Feedback
function M.shown(client, params)
  local old = pending[client.id]
  if old and same(old, params) then
    return
  end
  if old then
    notify(client, 'lspCopilot/didReject', old)
  end
  pending[client.id] = params
  notify(client, 'lspCopilot/didShow', params)
end

---@param client vim.lsp.Client
---@param params? lsp_copilot.Feedback the accepted suggestion (default: the pending one)
function M.accepted(client, params)
  params = params or pending[client.id]
  pending[client.id] = nil
  if params then
    notify(client, 'lspCopilot/didAccept', params)
  end
end

---@param client vim.lsp.Client
function M.dismissed(client)
  local old = pending[client.id]
  if old then
    pending[client.id] = nil
    notify(client, 'lspCopilot/didReject', old)
  end
end

--- The id the server gave an inline item (in its command's arguments), or nil.
---@param item table an InlineCompletionItem as received
---@return string?
function M.id(item)
  local args = item and item.command and item.command.arguments
  local first = type(args) == 'table' and args[1] or nil
  return type(first) == 'table' and type(first.id) == 'string' and first.id or nil
end

--- The feedback params an item carries (its command's arguments: uri, position, text,
--- id), for an LSP InlineCompletionItem or a vim.lsp.inline_completion.Item; nil if none.
---@param item table
---@return lsp_copilot.Feedback?
function M.params(item)
  local args = item and item.command and item.command.arguments
  local first = type(args) == 'table' and args[1] or nil
  if type(first) ~= 'table' or type(first.uri) ~= 'string' or type(first.text) ~= 'string'
    or type(first.position) ~= 'table' then
    return nil
  end
  return { uri = first.uri, position = first.position, text = first.text,
    id = type(first.id) == 'string' and first.id or nil }
end

---@param client_id integer
---@return lsp_copilot.Feedback?
function M.pending(client_id)
  return pending[client_id]
end

return M
