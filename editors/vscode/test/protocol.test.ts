// Protocol tests: the real `lsp-copilot serve` over stdio, driven the way the extension drives
// it: the same initializationOptions, the same progress/showMessage/stats wiring (attach,
// waitForEngine), the extension's inline-completion middleware and feedback notifications.
import { FakeClient, vscodeMock } from './mocks'; // must come first: installs the mocks
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createProtocolConnection, ProtocolConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-languageserver-protocol/node';
import * as extension from '../src/extension';
import { Feedback } from '../src/feedback';
import { createConverter } from 'vscode-languageclient/lib/common/codeConverter';
import { Rpc, Stats } from '../src/protocol';
import { pathServer, workspaceServer } from '../src/serverPath';
import { settingsPayload } from '../src/settings';
import { Item, ProgressValue, Status } from '../src/status';
import { attach, fetchStats, ShowMessageParams, waitForEngine } from '../src/wiring';

const ROOT = path.resolve(__dirname, '../../../..');
// The server as the extension finds it: LSP_COPILOT_SERVER stands for the serverPath
// setting, then a .venv of the repository this folder is in (the workspace: running the tests
// is the yes the extension would ask for), then PATH.
const FOUND = process.env.LSP_COPILOT_SERVER || workspaceServer([ROOT]) || pathServer(process.env.PATH);
if (FOUND === undefined) {
  throw new Error('lsp-copilot not found: put it on PATH, in ../../.venv, or set LSP_COPILOT_SERVER');
}
const SERVER: string = FOUND;
const READY_TIMEOUT_MS = Number(process.env.LSP_COPILOT_READY_TIMEOUT_MS ?? 300_000);
const LOG_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'lsp-copilot-vscode-'));

interface Session {
  conn: ProtocolConnection;
  rpc: Rpc;
  proc: ChildProcess;
  status: Status;
  item: Item;
  messages: ShowMessageParams[];
  progress: string[];
  log: string;
  init: any;
}

function rpcOf(conn: ProtocolConnection): Rpc {
  return {
    onRequest: (method, handler) => conn.onRequest(method, handler),
    onNotification: (method, handler) => conn.onNotification(method, handler),
    sendRequest: <R>(method: string, params?: unknown) =>
      (params === undefined ? conn.sendRequest(method) : conn.sendRequest(method, params)) as Promise<R>,
    sendNotification: (method, params) => conn.sendNotification(method, params),
  };
}

async function startServer(name: string, values: Record<string, unknown>): Promise<Session> {
  const log = path.join(LOG_DIR, `${name}.log`);
  const proc = spawn(SERVER, ['serve'], { stdio: ['pipe', 'pipe', fs.openSync(log, 'w')] });
  const conn = createProtocolConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const rpc = rpcOf(conn);
  const item: Item = { text: '', tooltip: undefined, command: undefined, show: () => undefined };
  const progress: string[] = [];
  const status = new (class extends Status {
    override onProgress(value: ProgressValue): void {
      progress.push(value.kind);
      super.onProgress(value);
    }
  })(item);
  const messages: ShowMessageParams[] = [];
  attach(rpc, status, { showMessage: (m) => messages.push(m) });
  conn.onRequest('client/registerCapability', () => null);
  conn.listen();
  const config = { get: <T>(key: string) => values[key] as T | undefined };
  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    workspaceFolders: null,
    initializationOptions: settingsPayload(config),
    capabilities: {
      window: { workDoneProgress: true, showMessage: {} },
      general: { positionEncodings: ['utf-16'] },
      textDocument: {
        synchronization: { dynamicRegistration: true, didSave: true },
        completion: { completionItem: { snippetSupport: true } },
        inlineCompletion: { dynamicRegistration: true },
      },
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
    },
  });
  await conn.sendNotification('initialized', {});
  return { conn, rpc, proc, status, item, messages, progress, log, init };
}

async function stopServer(s: Session): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => s.proc.once('exit', (code) => resolve(code)));
  try {
    await Promise.race([s.conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 30_000).unref())]);
    await s.conn.sendNotification('exit');
  } catch {
    // the server is gone already
  }
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 30_000);
  const code = await exited;
  clearTimeout(timer);
  s.conn.dispose();
  return code;
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const SOURCE = 'def add(a, b):\n    return ';
const URI = 'file:///tmp/lsp-copilot-vscode-test/add.py';

describe('against the real server and engine', { timeout: READY_TIMEOUT_MS + 120_000 }, () => {
  let s: Session;
  before(async () => {
    vscodeMock.reset({ serverPath: SERVER, enable: true });
    // Four suggestions (a small model's samples often repeat its first answer), and time for
    // them on a busy machine.
    s = await startServer('engine', { maxTokensSingleLine: 48, maxSuggestions: 4, requestTimeoutMs: 120_000, serverPath: SERVER });
  });
  after(async () => {
    if (s) {
      assert.equal(await stopServer(s), 0, `server exit code (log: ${s.log})`);
    }
  });

  test('advertises inline completion and loads the engine with progress', async () => {
    assert.ok(s.init.capabilities.inlineCompletionProvider, 'inlineCompletionProvider');
    const stats: Stats = await waitForEngine(s.rpc, s.status, READY_TIMEOUT_MS, 500);
    assert.equal(stats.engine_state, 'ready', `engine_error: ${stats.engine_error} (log: ${s.log})`);
    assert.deepEqual([s.progress[0], s.progress.at(-1)], ['begin', 'end']);
    assert.equal(s.status.state, 'ready');
    assert.deepEqual(s.messages.filter((m) => m.type === 1), []);
  });

  test('ghost text through the extension middleware, then accepted', async () => {
    await s.conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri: URI, languageId: 'python', version: 1, text: SOURCE },
    });
    // The extension's own middleware, around a `next` that is the real request.
    const sent: string[] = [];
    const feedback = new Feedback((method, params) => {
      sent.push(method);
      void s.conn.sendNotification(method, params);
    });
    const client = extension.createClient(SERVER, ['serve'], {} as any, s.status, feedback) as unknown as FakeClient;
    assert.ok(client instanceof FakeClient);
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    const position = { line: 1, character: 11 };
    const next = async () => {
      const result: any = await s.conn.sendRequest('textDocument/inlineCompletion', {
        textDocument: { uri: URI },
        position,
        context: { triggerKind: 2 },
      });
      return (Array.isArray(result) ? result : result.items).map((i: any) => ({ insertText: i.insertText, range: i.range }));
    };
    const items = await provide({ uri: { toString: () => URI } }, position, {}, { isCancellationRequested: false }, next);
    assert.equal(items.length, 1, 'one suggestion');
    const [item] = items;
    assert.equal(typeof item.insertText, 'string');
    assert.ok(item.insertText.length > 0, 'a non-empty suggestion');
    assert.deepEqual(item.range, { start: position, end: position });
    assert.ok(s.status.lastLatencyMs !== undefined);
    assert.match(s.item.text, /\d+ ms/);

    // VS Code inserts the text at the range, then runs the item's command.
    const after = SOURCE + item.insertText;
    await s.conn.sendNotification('textDocument/didChange', {
      textDocument: { uri: URI, version: 2 },
      contentChanges: [{ range: item.range, text: item.insertText }],
    });
    assert.equal(item.command.command, extension.COMMANDS.accepted);
    feedback.accepted(item.command.arguments[0]); // what that command does
    assert.deepEqual(sent, ['lspCopilot/didShow', 'lspCopilot/didAccept']);
    assert.equal(after, SOURCE + item.insertText);

    // The server took the edit and the notifications: it still answers, on the new text.
    const lines = after.split('\n');
    const end = { line: lines.length - 1, character: lines.at(-1)!.length };
    const completion: any = await s.conn.sendRequest('textDocument/completion', { textDocument: { uri: URI }, position: end });
    assert.ok(completion === null || Array.isArray(completion) || Array.isArray(completion.items));
    const stats: Stats = await fetchStats(s.rpc);
    assert.ok(stats.requests >= 2, `requests = ${stats.requests}`);
    // The server counted the feedback: the params have the shape it reads.
    assert.ok((stats.shown as number) >= 1 && (stats.accepted as number) >= 1, `shown ${stats.shown}, accepted ${stats.accepted}`);
  });

  // VS Code's own request path: the extension's middleware around vscode-languageclient's
  // real code converter (VS Code's context in, LSP params out) and the real server.
  const converter = createConverter();
  const viaClient = (document: any, position: any) => async (_d: unknown, _p: unknown, sent: any) => {
    const params = converter.asInlineCompletionParams(document, position, sent);
    const result: any = await s.conn.sendRequest('textDocument/inlineCompletion', params);
    // (as the converter does: the item's command, whose arguments carry the server's id)
    return (Array.isArray(result) ? result : result.items).map((i: any) => ({ insertText: i.insertText, range: i.range, command: i.command }));
  };
  const middleware = () => {
    const feedback = new Feedback((method, params) => void s.conn.sendNotification(method, params));
    const client = extension.createClient(SERVER, ['serve'], {} as any, s.status, feedback) as unknown as FakeClient;
    return client.clientOptions.middleware.provideInlineCompletionItems;
  };

  test('Alt+\\ (an explicit request) gets several suggestions; typing gets one', async () => {
    // Lists with two common answers: the model's samples differ from its first answer at
    // one of them at least (which one depends on the model and the machine).
    const spots = [
      { name: 'colors.py', text: 'PRIMARY_COLORS = ["red", \n', position: { line: 0, character: 25 } },
      { name: 'fruit.py', text: 'def basket():\n    """Fruit for the week."""\n    return ["apple", \n', position: { line: 2, character: 21 } },
      { name: 'days.py', text: 'WEEKEND = ["saturday", \n', position: { line: 0, character: 23 } },
    ];
    const provide = middleware();
    const token = { isCancellationRequested: false };
    let items: any[] = [];
    let spot = spots[0];
    for (spot of spots) {
      const uri = `file:///tmp/lsp-copilot-vscode-test/${spot.name}`;
      await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: spot.text } });
      const document = { uri: { toString: () => uri } };
      const before = await fetchStats(s.rpc);
      const invoke = { triggerKind: 0 }; // vscode.InlineCompletionTriggerKind.Invoke
      items = await provide(document, spot.position, invoke, token, viaClient(document, spot.position));
      const middle = await fetchStats(s.rpc);
      assert.equal((middle.explicit_requests as number) - (before.explicit_requests as number), 1, 'counted as explicit');
      const automatic = { triggerKind: 1 }; // vscode.InlineCompletionTriggerKind.Automatic
      const one = await provide(document, spot.position, automatic, token, viaClient(document, spot.position));
      const after = await fetchStats(s.rpc);
      assert.ok(one.length <= 1, `typing gets at most one: ${JSON.stringify(one)}`);
      assert.equal(after.explicit_requests, middle.explicit_requests, 'an automatic request is not explicit');
      if (items.length >= 2) {
        break;
      }
    }
    assert.ok(items.length >= 2 && items.length <= 4, `several suggestions at ${spot.name}: ${JSON.stringify(items)}`);
    assert.equal(new Set(items.map((i: any) => i.insertText.trimEnd())).size, items.length, 'distinct');
  });

  test('accept next word (Ctrl+Right): the rest of the same suggestion follows', async () => {
    const uri = 'file:///tmp/lsp-copilot-vscode-test/price.py';
    const text = 'def total_price(items, tax):\n    subtotal = sum(item.price for item in items)\n    return ';
    await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
    const document = { uri: { toString: () => uri } };
    const position = { line: 2, character: 11 };
    const provide = middleware();
    const token = { isCancellationRequested: false };
    const automatic = { triggerKind: 1 };
    const [item] = await provide(document, position, { triggerKind: 0 }, token, viaClient(document, position));
    assert.ok(item && typeof item.insertText === 'string' && item.range, 'a plain-text item with a range at the cursor');
    // What VS Code's acceptNextWord inserts: up to the end of the next word.
    const word = /^\s*[\w]+|^\s*\W/.exec(item.insertText)![0];
    assert.ok(word.length < item.insertText.length, `more than one word: ${item.insertText}`);
    await s.conn.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: item.range, text: word }],
    });
    const before = await fetchStats(s.rpc);
    // VS Code then asks again at the new position (automatically) and keeps what extends it.
    const next = { line: 2, character: 11 + word.length };
    const rest = await provide(document, next, automatic, token, viaClient(document, next));
    const after = await fetchStats(s.rpc);
    assert.deepEqual(rest.map((i: any) => i.insertText), [item.insertText.slice(word.length)]);
    assert.equal(after.engine_requests, before.engine_requests, 'answered from the suggestion on screen');
  });

  test('an item that writes the bracket VS Code auto-closed covers it: one `)` after accepting', async () => {
    const uri = 'file:///tmp/lsp-copilot-vscode-test/read.py';
    const text = 'def read(path):\n    with open()\n        return f.read()\n';
    await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
    const document = { uri: { toString: () => uri } };
    const position = { line: 1, character: 14 }; // between `open(` and the `)` VS Code put there
    const provide = middleware();
    const token = { isCancellationRequested: false };
    let items: any[] = [];
    const deadline = Date.now() + 120_000; // (the typing model may still be loading)
    while (items.length === 0 && Date.now() < deadline) {
      items = await provide(document, position, { triggerKind: 1 }, token, viaClient(document, position));
      if (items.length === 0) {
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    const [item] = items;
    assert.ok(item && typeof item.insertText === 'string', 'a suggestion between the brackets');
    const first = item.insertText.split('\n')[0];
    // The shipped typing model writes the `)` and goes on (`path) as f:`).
    assert.ok(first.includes(')'), `the suggestion writes the closing bracket: ${first}`);
    assert.deepEqual(item.range, { start: position, end: { line: 1, character: 15 } }, 'the range covers the `)`');
    // What VS Code does on Tab: the range replaced by the text.
    const line = text.split('\n')[1];
    const accepted = line.slice(0, item.range.start.character) + first + line.slice(item.range.end.character);
    assert.equal(accepted, '    with open(' + first);
    assert.equal(accepted.split('(').length, accepted.split(')').length, `one ')' per '(': ${accepted}`);
  });

  // What VS Code's acceptNextWord (Ctrl+Right) inserts from `text`: up to the end of the
  // next word (its default word definition), or to the end of leading blanks, or one
  // other character (src/vs/editor/contrib/inlineCompletions, acceptNextWord).
  const WORD = /(-?\d*\.\d\w*)|([^`~!@#$%^&*()\-=+[{\]}\\|;:'",.<>/?\s]+)/;
  const nextWord = (text: string): string => {
    const m1 = WORD.exec(text);
    let until = m1 ? (m1.index === 0 ? m1[0].length : m1.index) : text.length;
    const m2 = /\s+/.exec(text);
    if (m2 && m2.index + m2[0].length < until) {
      until = m2.index + m2[0].length;
    }
    return text.slice(0, Math.max(1, until));
  };
  const counters = (x: Stats) => ({
    accepted: x.accepted as number,
    partial: x.partial_accepts as number,
    chars: x.accepted_chars as number,
    outcomes: x.outcomes as Record<string, number> & { recent: { id: string; outcome: string }[] },
  });
  // The counters one scripted accept moves, the same in every client (editors/nvim and
  // editors/emacs check the same): a whole accept or a word, its characters, its item.
  const checkAccept = (what: string, before: Stats, after: Stats, kind: 'accepted' | 'partly_accepted', chars: number, id: string) => {
    const b = counters(before);
    const a = counters(after);
    const whole = kind === 'accepted';
    assert.deepEqual([a.accepted - b.accepted, a.partial - b.partial, a.chars - b.chars, a.outcomes[kind] - b.outcomes[kind]],
      [whole ? 1 : 0, whole ? 0 : 1, chars, 1], `${what}: counters`);
    const last = a.outcomes.recent.at(-1);
    assert.deepEqual([last?.id, last?.outcome], [id, kind], `${what}: the item credited`);
  };

  test('counted as in every client: a whole accept, a word of the first item, a word of a cycled alternative', async () => {
    const provide = middleware();
    const token = { isCancellationRequested: false };
    const invoke = { triggerKind: 0 };
    const automatic = { triggerKind: 1 };
    let version = 1;
    const open = async (name: string, text: string) => {
      const uri = `file:///tmp/lsp-copilot-vscode-test/counted-${name}`;
      await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
      version = 1;
      return { uri: { toString: () => uri } };
    };
    const insert = async (document: any, at: { line: number; character: number }, text: string) => {
      version += 1;
      await s.conn.sendNotification('textDocument/didChange', {
        textDocument: { uri: document.uri.toString(), version },
        contentChanges: [{ range: { start: at, end: at }, text }],
      });
    };
    const idOf = (item: any): string => item.command.arguments[0].id;

    // 1. A whole accept (Tab): VS Code inserts the item, then runs its command.
    let document = await open('whole.py', 'def add(a, b):\n    return ');
    let position = { line: 1, character: 11 };
    const [whole] = await provide(document, position, invoke, token, viaClient(document, position));
    assert.ok(whole, 'a suggestion to accept');
    let before = await fetchStats(s.rpc);
    await insert(document, position, whole.insertText);
    await s.conn.sendNotification('lspCopilot/didAccept', whole.command.arguments[0]);
    checkAccept('a whole accept', before, await fetchStats(s.rpc), 'accepted', whole.insertText.length, idOf(whole));

    // 2. A word of the first item (Ctrl+Right): VS Code reports nothing; the edit tells.
    // (Where the first item has more than one word: which spot gives one depends on the
    // model and the machine.)
    const returns = [
      { name: 'price.py', text: 'def total_price(items, tax):\n    subtotal = sum(item.price for item in items)\n    return ' },
      { name: 'names.py', text: 'def full_name(first, last):\n    """First and last name."""\n    return ' },
      { name: 'area.py', text: 'import math\n\ndef area(radius):\n    return ' },
    ];
    let first: any;
    let word = '';
    for (const spot of returns) {
      document = await open(spot.name, spot.text);
      const lines = spot.text.split('\n');
      position = { line: lines.length - 1, character: lines.at(-1)!.length };
      [first] = await provide(document, position, invoke, token, viaClient(document, position));
      word = first ? nextWord(first.insertText) : '';
      if (word.length >= 2 && word.length < first.insertText.length) {
        break;
      }
    }
    assert.ok(word.length >= 2 && word.length < first.insertText.length, `a word of two characters or more: ${first?.insertText}`);
    before = await fetchStats(s.rpc);
    await insert(document, position, word);
    checkAccept('a word of the first item', before, await fetchStats(s.rpc), 'partly_accepted', word.length, idOf(first));

    // 3. A word of a cycled alternative (Alt+], then Ctrl+Right until a word of two
    // characters or more goes in: a one-character part is a keystroke to the server).
    const spots = [
      { name: 'colors.py', text: 'PRIMARY_COLORS = ["red", ', position: { line: 0, character: 25 } },
      { name: 'days.py', text: 'WEEKEND = ["saturday", ', position: { line: 0, character: 23 } },
      { name: 'fruit.py', text: 'FRUITS = ["apple", ', position: { line: 0, character: 19 } },
    ];
    let items: any[] = [];
    for (const spot of spots) {
      document = await open(spot.name, spot.text);
      position = spot.position;
      items = await provide(document, position, invoke, token, viaClient(document, position));
      if (items.length >= 2 && !items[0].insertText.startsWith(items[1].insertText.split(/\s/)[0])) {
        break;
      }
    }
    assert.ok(items.length >= 2, `several suggestions: ${JSON.stringify(items.map((i) => i.insertText))}`);
    const second = items[1];
    let rest: string = second.insertText;
    let at = { ...position };
    let part = '';
    before = await fetchStats(s.rpc);
    for (let press = 0; press < 3 && part.length < 2; press++) {
      part = nextWord(rest);
      await insert(document, at, part);
      at = { line: at.line, character: at.character + part.length };
      rest = rest.slice(part.length);
      if (part.length < 2) {
        before = await fetchStats(s.rpc); // typed through: not an accept
        await provide(document, at, automatic, token, viaClient(document, at)); // VS Code asks again
      }
    }
    assert.ok(part.length >= 2 && rest.length > 0, `a word of the second item: ${second.insertText}`);
    checkAccept('a word of the cycled second item', before, await fetchStats(s.rpc), 'partly_accepted', part.length, idOf(second));
    // VS Code asks again: the rest of the second item, not of the first, is on offer.
    const more = await provide(document, at, automatic, token, viaClient(document, at));
    assert.deepEqual(more.map((i: any) => i.insertText), [rest], 'the rest of the item cycled to');
  });

  test('textDocument/completion gives an item with a textEdit', async () => {
    const uri = 'file:///tmp/lsp-copilot-vscode-test/sum.py';
    const text = 'def add(a, b):\n    return a + b\n\n\ndef total(values):\n    return ';
    await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
    const position = { line: 5, character: 11 };
    const result: any = await s.conn.sendRequest('textDocument/completion', { textDocument: { uri }, position });
    const items = Array.isArray(result) ? result : result.items;
    assert.equal(items.length, 1);
    assert.ok(items[0].textEdit.newText.length > 0);
    assert.deepEqual(items[0].textEdit.range.end, position);
  });
});

describe('without an engine', { timeout: 120_000 }, () => {
  // A bad model fails at once, so the engine paths are covered without loading one (a
  // shutdown or SIGTERM while an engine loads waits for the load to finish: see README).
  test('disabled: idle and empty; Toggle starts the engine; a bad model shows why', async () => {
    const s = await startServer('disabled', { enable: false, model: '/nonexistent/lsp-copilot-model' });
    try {
      const stats = await fetchStats(s.rpc);
      assert.equal(stats.engine_state, 'idle');
      assert.deepEqual(s.progress, []);
      await s.conn.sendNotification('textDocument/didOpen', { textDocument: { uri: URI, languageId: 'python', version: 1, text: SOURCE } });
      const result: any = await s.conn.sendRequest('textDocument/inlineCompletion', { textDocument: { uri: URI }, position: { line: 1, character: 11 }, context: { triggerKind: 1 } });
      assert.deepEqual(Array.isArray(result) ? result : result.items, []);
      // What the Toggle command sends.
      const values: Record<string, unknown> = { enable: true, model: '/nonexistent/lsp-copilot-model' };
      await s.conn.sendNotification('workspace/didChangeConfiguration', { settings: settingsPayload({ get: <T>(k: string) => values[k] as T }) });
      await until('an error message', () => s.messages.some((m) => m.type === 1), 60_000);
      assert.deepEqual([s.progress[0], s.progress.at(-1)], ['begin', 'end']);
      assert.equal(s.status.state, 'error');
      assert.match(s.status.error, /nonexistent\/lsp-copilot-model/);
      assert.equal(s.item.command, 'lspCopilot.showError');
      const after = await waitForEngine(s.rpc, s.status, 10_000);
      assert.equal(after.engine_state, 'failed');
      assert.equal(s.status.state, 'error');
    } finally {
      assert.equal(await stopServer(s), 0, 'clean exit');
    }
  });
});
