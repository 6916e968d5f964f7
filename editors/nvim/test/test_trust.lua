-- Headless unit test (no server): a project's own .venv server runs only after a yes.
--   nvim --headless -n -u NONE -c 'luafile editors/nvim/test/test_trust.lua'
-- Exit code 0 on success.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ':h'))
local copilot = require('lsp_copilot')

local failures = 0
local function check(ok, what, detail)
  io.stdout:write((ok and 'ok: ' or 'FAIL: ') .. what .. (ok and '' or (' ' .. vim.inspect(detail))) .. '\n')
  if not ok then
    failures = failures + 1
  end
end

local function write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local fd = assert(io.open(path, 'w'))
  fd:write(text)
  fd:close()
  vim.uv.fs_chmod(path, 493) -- 0755
end

local root = vim.fn.resolve(vim.fn.tempname())
local project = root .. '/project'
local local_server = project .. '/.venv/bin/lsp-copilot'
local bin = root .. '/bin'
write(local_server, '#!/bin/sh\n')
write(project .. '/src/a.py', '')
vim.fn.mkdir(bin, 'p')
vim.cmd.cd(project .. '/src')
vim.env.PATH = bin

local asked = {}
local answers = {}
local trust_file = root .. '/data/trusted_servers.json'
local function use(answer_list, file)
  asked, answers = {}, answer_list
  copilot.options = {
    trust_file = file or trust_file,
    confirm_server = function(path)
      table.insert(asked, path)
      return table.remove(answers, 1)
    end,
  }
end

local ok, err = pcall(function()
  -- No: nothing runs (PATH has none), and the no is kept.
  use({ false })
  local cmd = copilot.find_cmd()
  check(cmd == nil, 'a project server is not run after a no', cmd)
  check(#asked == 1 and asked[1] == local_server, 'the question names the project server', asked)
  use({})
  check(copilot.find_cmd() == nil and #asked == 0, 'a no is kept', asked)

  -- Not now (no answer): not run, asked again next time.
  use({ nil, nil }, root .. '/data/other.json')
  check(copilot.find_cmd() == nil and copilot.find_cmd() == nil and #asked == 2, 'no answer: asked again', asked)

  -- Without asking (:checkhealth), only a kept yes counts.
  use({}, root .. '/data/third.json')
  check(copilot.find_cmd(false) == nil and #asked == 0, 'find_cmd(false) neither asks nor runs', asked)

  -- Yes: it runs, and the yes is kept (under the data folder, not in the project).
  use({ true }, root .. '/data/yes.json')
  cmd = copilot.find_cmd()
  check(vim.deep_equal(cmd, { local_server, 'serve' }) and #asked == 1, 'a yes runs the project server', { cmd, asked })
  use({}, root .. '/data/yes.json')
  cmd = copilot.find_cmd()
  check(vim.deep_equal(cmd, { local_server, 'serve' }) and #asked == 0, 'a yes is remembered', { cmd, asked })
  check(vim.deep_equal(copilot.find_cmd(false), { local_server, 'serve' }), 'a kept yes counts without asking')

  -- The file changed since (a pull replaced it): asked again.
  write(local_server, '#!/bin/sh\necho changed\n')
  use({ nil }, root .. '/data/yes.json')
  check(copilot.find_cmd() == nil and #asked == 1, 'a changed server is asked about again', asked)

  -- A relative PATH entry does not name the project's server for it.
  vim.cmd.cd(project)
  vim.env.PATH = '.venv/bin:' .. bin
  use({ nil }, root .. '/data/relative.json')
  check(copilot.find_cmd() == nil and #asked == 1, 'a relative PATH entry is skipped', asked)

  -- One on PATH: it runs, nothing asked (as before).
  write(bin .. '/lsp-copilot', '#!/bin/sh\n')
  use({ true }, root .. '/data/path.json')
  cmd = copilot.find_cmd()
  check(vim.deep_equal(cmd, { bin .. '/lsp-copilot', 'serve' }) and #asked == 0, 'PATH first, unasked', { cmd, asked })

  -- The default question has no answer without a UI (headless): nothing runs.
  vim.env.PATH = bin .. '-none'
  copilot.options = { trust_file = root .. '/data/default.json' }
  check(copilot.find_cmd() == nil, 'headless, the default question runs nothing')
end)
check(ok, 'no error', err)
vim.fn.delete(root, 'rf')
vim.cmd(failures == 0 and 'qall!' or 'cquit! 1')
