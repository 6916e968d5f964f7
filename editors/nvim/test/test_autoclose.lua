-- Headless test against the real server and engine (Neovim 0.12):
--   nvim --headless -n -u NONE -c 'luafile editors/nvim/test/test_autoclose.lua'
-- A bracket the editor closed as it was typed (autopairs, electric-pair): with the cursor
-- between `open(` and its `)`, the suggestion writes the `)` and goes on (` as f:`); <Tab>
-- leaves one `)`, on the native path (the item's range covers it) and on the extmark path.
-- Exit code 0 on success.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local t = dofile(here .. '/support.lua')
vim.cmd('filetype on')
vim.o.swapfile = false

local dir = vim.fn.tempname()
vim.fn.mkdir(dir, 'p')

--- The user is between `open(` and the `)` the editor put there; the suggestion on screen
--- is accepted with <Tab>. Returns the suggestion and the line after.
local function accept_between(name, ns)
  local copilot = require('lsp_copilot')
  local path = dir .. '/' .. name
  vim.fn.writefile({ 'def read(path):', '    with open()', '        return f.read()' }, path)
  vim.cmd.edit(path)
  local bufnr = vim.api.nvim_get_current_buf()
  t.wait_for('the client to attach', 30000, function()
    return copilot.client(bufnr)
  end)
  t.wait_ready(copilot)
  t.type_keys('2G$i') -- insert before the `)`: as the pair was left after typing `(`
  local text = t.wait_for('ghost text', 120000, function()
    return t.ghost_text(bufnr, ns)
  end)
  t.log('%s: ghost text %q', name, text)
  t.type_keys('<Tab>')
  t.sleep(200)
  t.type_keys('<Esc>')
  local line = vim.api.nvim_buf_get_lines(bufnr, 1, 2, false)[1]
  vim.cmd('bwipeout!')
  return text, line
end

local function balanced(line)
  local depth = 0
  for ch in line:gmatch('[()]') do
    depth = depth + (ch == '(' and 1 or -1)
    if depth < 0 then
      return false
    end
  end
  return depth == 0
end

local function main()
  local copilot = require('lsp_copilot')
  -- The shipped routes: typing pauses go to the small typing model, which writes the `)`.
  copilot.setup({ cmd = { t.server, 'serve' }, settings = {
    acceptanceFile = dir .. '/acceptance.sqlite3', requestTimeoutMs = 240000 } })
  t.check(copilot.native(), 'Neovim 0.12 native inline completion in use')
  for _, path in ipairs({ 'native', 'extmark' }) do
    if path == 'extmark' then
      copilot.use_ghost('extmark')
    end
    local ns = path == 'native' and vim.api.nvim_get_namespaces()['nvim.lsp.inline_completion']
      or require('lsp_copilot.ghost').ns
    local text, line = accept_between('read_' .. path .. '.py', ns)
    local first = vim.split(text, '\n', { plain = true })[1]
    t.check(first:find(')', 1, true) ~= nil, path .. ': the suggestion writes the closing bracket', text)
    t.check(line == '    with open(' .. first, path .. ': <Tab> leaves the line as suggested, one `)`',
      { line = line, text = text })
    t.check(balanced(line), path .. ': brackets balanced after <Tab>', line)
  end
end

t.run(main)
