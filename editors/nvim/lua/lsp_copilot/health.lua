-- :checkhealth lsp_copilot
local M = {}

function M.check()
  local health = vim.health
  local copilot = require('lsp_copilot')
  health.start('lsp-copilot')

  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.12') == 1 and vim.lsp.inline_completion then
    health.ok('Neovim ' .. version .. ': native inline completion (vim.lsp.inline_completion)')
  elseif vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. version .. ': ghost text from extmarks (no vim.lsp.inline_completion)')
  else
    health.error('Neovim ' .. version .. ' is too old', { 'lsp-copilot needs Neovim 0.10 or later' })
  end

  local cmd = copilot.options.cmd or copilot.find_cmd(false)
  if not cmd then
    health.error('`lsp-copilot` not found (a project\'s own .venv server runs only once you agree)', {
      'pip install it (or `make install` in its repository)',
      'or pass setup({ cmd = { "/path/to/lsp-copilot", "serve" } })',
    })
  elseif vim.fn.executable(cmd[1]) == 1 then
    health.ok('server: ' .. table.concat(cmd, ' '))
  else
    health.error('server command is not executable: ' .. cmd[1])
  end
  if next(copilot.options) == nil then
    health.warn('setup() has not been called', { 'require("lsp_copilot").setup({})' })
  end

  local client = copilot.client()
  if not client then
    health.info('no lsp-copilot client running (open a file of a configured filetype)')
    return
  end
  local stats, err = copilot.stats(5000)
  if not stats then
    health.error('lspCopilot/stats failed: ' .. vim.inspect(err))
    return
  end
  if stats.engine_state == 'ready' then
    local engine = stats.engine or {}
    health.ok(('engine ready: %s on %s'):format(engine.model or '?', engine.device or '?'))
  elseif stats.engine_state == 'loading' then
    health.warn('engine still loading')
  elseif stats.engine_state == 'failed' then
    health.error('engine failed: ' .. tostring(stats.engine_error))
  else
    health.info('engine ' .. tostring(stats.engine_state) .. ' (enable = false?)')
  end
end

return M
