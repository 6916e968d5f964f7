-- Whether a server found in the project (a .venv above the cwd) may run. A cloned repository
-- can ship its own `.venv/bin/lsp-copilot`: it runs only after the user said yes to that very
-- file. Answers are kept with the file's fingerprint in a file under stdpath('data') (never
-- in the project), so that a file replaced since (a `git pull`) is asked about again.
local M = {}

--- Where answers are kept: { [path] = { fingerprint = string, allow = boolean } }.
function M.default_file()
  return vim.fs.joinpath(vim.fn.stdpath('data'), 'lsp_copilot', 'trusted_servers.json')
end

--- What the file holds: its size and SHA-256 (a console-script launcher is small).
---@param path string
---@return string?
function M.fingerprint(path)
  local fd = io.open(path, 'rb')
  if not fd then
    return nil
  end
  local data = fd:read('*a')
  fd:close()
  -- Vimscript strings stop at NUL: escape it (the size still tells files apart).
  return ('%d:%s'):format(#data, vim.fn.sha256((data:gsub('%z', '\\0'))))
end

---@param file string
---@return table<string, { fingerprint: string, allow: boolean }>
local function read(file)
  local fd = io.open(file, 'r')
  if not fd then
    return {}
  end
  local ok, decoded = pcall(vim.json.decode, fd:read('*a'))
  fd:close()
  return ok and type(decoded) == 'table' and decoded or {}
end

---@param file string
---@param answers table
local function write(file, answers)
  vim.fn.mkdir(vim.fs.dirname(file), 'p')
  local fd = assert(io.open(file, 'w'))
  fd:write(vim.json.encode(answers))
  fd:close()
end

--- The default question: a dialog; no answer where there is no UI (headless, tests).
---@param path string
---@return boolean? true: run it, false: never (until it changes), nil: not now
function M.confirm(path)
  if #vim.api.nvim_list_uis() == 0 then
    return nil
  end
  local choice = vim.fn.confirm(
    ('lsp-copilot: run the server this project contains?\n%s\n'
      .. 'It comes with the project: a cloned repository can put any program there.'):format(path),
    '&Run it\n&Never\n&Not now', 3, 'Warning')
  if choice == 1 then
    return true
  elseif choice == 2 then
    return false
  end
  return nil
end

--- Whether `path` may run: a kept answer for the file as it is now, else `ask`'s.
---@param path string
---@param ask? fun(path: string): boolean? nil: do not ask (only a kept yes counts)
---@param file? string where answers are kept (default M.default_file())
---@return boolean
function M.allowed(path, ask, file)
  file = file or M.default_file()
  local print = M.fingerprint(path)
  if not print then
    return false
  end
  local answers = read(file)
  local kept = answers[path]
  if kept and kept.fingerprint == print then
    return kept.allow == true
  end
  if not ask then
    return false
  end
  local answer = ask(path)
  if answer ~= nil then
    answers[path] = { fingerprint = print, allow = answer }
    write(file, answers)
  end
  return answer == true
end

--- lsp-copilot in an absolute PATH entry (a relative one would name the project).
---@return string
local function on_path()
  if vim.fn.has('win32') == 1 then
    return vim.fn.exepath('lsp-copilot')
  end
  for dir in vim.gsplit(vim.env.PATH or '', ':', { plain = true }) do
    local exe = dir .. '/lsp-copilot'
    if dir:sub(1, 1) == '/' and vim.fn.executable(exe) == 1 then
      return exe
    end
  end
  return ''
end

--- The server command: lsp-copilot on PATH, else the one in a virtual environment above the
--- cwd if it may run (M.allowed: a cloned repository may have put it there).
---@param ask? fun(path: string): boolean? nil: only an answer already kept counts
---@param file? string where answers are kept
---@return string[]?
function M.find_cmd(ask, file)
  local exe = on_path()
  if exe ~= '' then
    return { exe, 'serve' }
  end
  for _, venv in ipairs({ '.venv', 'venv', 'env' }) do
    local found = vim.fs.find(venv .. '/bin/lsp-copilot', { upward = true, path = vim.fn.getcwd() })[1]
    if found and vim.fn.executable(found) == 1 then
      return M.allowed(found, ask, file) and { found, 'serve' } or nil
    end
  end
  return nil
end

return M
