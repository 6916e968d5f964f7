-- What the headless tests against the real server share: a log with elapsed seconds,
-- checks counted as failures, waits that yield to Neovim's loop (never a blocking sleep),
-- typed keys, the ghost text on screen, and the run that quits with the result.
local M = { failures = 0 }

local started = vim.uv.hrtime()
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local root = vim.fn.fnamemodify(here, ':h:h:h')
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ':h'))

M.server = os.getenv('LSP_COPILOT_SERVER') or (root .. '/.venv/bin/lsp-copilot')
M.ready_timeout = tonumber(os.getenv('LSP_COPILOT_READY_TIMEOUT_MS') or '') or 300000

function M.log(fmt, ...)
  io.stdout:write(('[%6.1fs] '):format((vim.uv.hrtime() - started) / 1e9) .. fmt:format(...) .. '\n')
  io.stdout:flush()
end

function M.check(ok, what, detail)
  if ok then
    M.log('ok: %s', what)
  else
    M.failures = M.failures + 1
    M.log('FAIL: %s %s', what, detail and vim.inspect(detail) or '')
  end
  return ok
end

function M.sleep(ms)
  local this = coroutine.running()
  vim.defer_fn(function()
    assert(coroutine.resume(this))
  end, ms)
  coroutine.yield()
end

function M.wait_for(what, timeout_ms, fn)
  local deadline = vim.uv.now() + timeout_ms
  while true do
    local value = fn()
    if value then
      return value
    end
    if vim.uv.now() > deadline then
      error('timed out waiting for ' .. what)
    end
    M.sleep(100)
  end
end

function M.type_keys(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), 'mt', false)
  M.sleep(50)
end

--- The ghost text on screen, from the extmarks of namespace `ns` (virt_text + virt_lines).
function M.ghost_text(bufnr, ns)
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
  local mark = marks[1]
  if not mark then
    return nil
  end
  local details = mark[4]
  local lines = { table.concat(vim.tbl_map(function(c) return c[1] end, details.virt_text or {})) }
  for _, vl in ipairs(details.virt_lines or {}) do
    table.insert(lines, table.concat(vim.tbl_map(function(c) return c[1] end, vl)))
  end
  local text = table.concat(lines, '\n')
  return text ~= '' and text or nil
end

--- Wait for the engine of the server `copilot` started (error if it failed).
function M.wait_ready(copilot)
  return M.wait_for('engine ready', M.ready_timeout, function()
    local s = copilot.stats(5000)
    if s and s.engine_state == 'failed' then
      error('engine failed: ' .. tostring(s.engine_error))
    end
    return s and s.engine_state == 'ready' and s
  end)
end

--- Run `main` in a coroutine (the waits yield), stop the servers cleanly, quit with the
--- result: exit code 0 when every check passed.
function M.run(main)
  coroutine.wrap(function()
    local ok, err = xpcall(main, debug.traceback)
    if not ok then
      M.failures = M.failures + 1
      M.log('ERROR: %s', err)
    end
    M.log('%s (%d failure%s)', M.failures == 0 and 'PASS' or 'FAIL', M.failures, M.failures == 1 and '' or 's')
    for _, c in ipairs(vim.lsp.get_clients()) do
      c:stop()
    end
    vim.wait(30000, function()
      return #vim.lsp.get_clients() == 0
    end)
    vim.cmd((M.failures == 0 and 'qall!' or 'cquit! 1'))
  end)()
end

return M
