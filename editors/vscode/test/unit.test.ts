// Unit tests: pure modules, and the extension's activate() against a mocked `vscode`.
import { FakeClient, FakeMemento, vscodeMock } from './mocks'; // must come first: installs the mocks
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import { Feedback } from '../src/feedback';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { DID_ACCEPT, DID_REJECT, DID_SHOW, FeedbackParams, lspTriggerKind, Stats } from '../src/protocol';
import { Answer, APPROVED_KEY, chooseServer, Memory, pathServer, REFUSED_KEY, workspaceServer } from '../src/serverPath';
import { CLIENT_SETTINGS, MACHINE_SETTINGS, SERVER_SETTINGS, serverSettings, settingsPayload } from '../src/settings';
import { Item, Status } from '../src/status';
import * as extension from '../src/extension';

function item(): Item & { shown: boolean } {
  return { text: '', tooltip: undefined, command: undefined, shown: false, show() { this.shown = true; } };
}

function stats(partial: Partial<Stats>): Stats {
  return { engine_state: 'ready', engine_error: null, latency_ms: { p50: null, p90: null, p99: null }, requests: 0, ...partial };
}

describe('settings', () => {
  test('only set, well-typed server settings are sent', () => {
    const config = { get: <T>(key: string) => ({ enable: false, model: '', temperature: 0.2, maxPromptTokens: null, serverPath: '/x', device: 3 } as Record<string, unknown>)[key] as T };
    assert.deepEqual(serverSettings(config), { enable: false, temperature: 0.2 });
    assert.deepEqual(settingsPayload(config), { lspCopilot: { enable: false, temperature: 0.2 } });
  });
});

describe('settings from package.json', () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));
  const properties: Record<string, any> = manifest.contributes.configuration.properties;
  test('every declared setting but the extension\'s own goes to the server', () => {
    const declared = Object.keys(properties).map((k) => k.slice('lspCopilot.'.length));
    assert.deepEqual(Object.keys(SERVER_SETTINGS).sort(), declared.filter((k) => !CLIENT_SETTINGS.includes(k)).sort());
    // The server's table has more than sixty; among them those a user reaches for first.
    assert.ok(Object.keys(SERVER_SETTINGS).length > 60);
    for (const name of ['maxSuggestions', 'disabledLanguages', 'deadlineMs', 'engineBackend', 'contextBudgets']) {
      assert.ok(name in SERVER_SETTINGS, name);
    }
  });
  test('only what the user set is sent, whatever its JSON type', () => {
    const values: Record<string, unknown> = {
      maxSuggestions: 2, disabledLanguages: ['markdown'], contextBudgets: { explicit: 4096 },
      gpuMemoryUtilization: null, maxTokensSingleLine: 1.5, serverPath: '/x', logLevel: '',
    };
    const config = {
      // VS Code returns the declared default for what the user did not set.
      get: <T>(key: string) => (key in values ? values[key] : properties[`lspCopilot.${key}`]?.default) as T,
      inspect: (key: string) => (key in values ? { workspaceValue: values[key] } : {}),
    };
    assert.deepEqual(serverSettings(config), {
      maxSuggestions: 2, disabledLanguages: ['markdown'], contextBudgets: { explicit: 4096 }, logLevel: '',
    });
  });
});

describe('per-language switch', () => {
  test('lspCopilot.enable may be set per language in VS Code', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));
    assert.equal(manifest.contributes.configuration.properties['lspCopilot.enable'].scope, 'language-overridable');
  });
  test('languages turned off in their [language] scope join disabledLanguages', () => {
    const set = (values: Record<string, unknown>) => ({
      get: <T>(key: string) => values[key] as T,
      inspect: (key: string) => (key in values ? { globalValue: values[key] } : {}),
    });
    assert.deepEqual(settingsPayload(set({ disabledLanguages: ['markdown'] }), ['plaintext', 'markdown']).lspCopilot,
      { disabledLanguages: ['markdown', 'plaintext'] });
    assert.deepEqual(settingsPayload(set({}), ['json']).lspCopilot, { disabledLanguages: ['json'] });
    assert.deepEqual(settingsPayload(set({ temperature: 0.2 })).lspCopilot, { temperature: 0.2 });
  });
});

describe('trigger kinds', () => {
  test('VS Code\'s Invoke (0) and Automatic (1) become LSP 3.18\'s Invoked (1) and Automatic (2)', () => {
    assert.equal(lspTriggerKind(0), 1);
    assert.equal(lspTriggerKind(1), 2);
  });
});

describe('server path', () => {
  const exists = (files: string[]) => (file: string) => files.includes(file);
  test('a virtual environment in a workspace folder, or PATH (absolute entries only)', () => {
    assert.equal(workspaceServer(['/a', '/ws'], exists(['/ws/venv/bin/lsp-copilot', '/usr/bin/lsp-copilot']), 'linux'), '/ws/venv/bin/lsp-copilot');
    assert.equal(workspaceServer(['/ws'], exists([]), 'linux'), undefined);
    const envPath = ['.venv/bin', '/bin', '/usr/local/bin'].join(path.delimiter);
    assert.equal(pathServer(envPath, exists(['.venv/bin/lsp-copilot', '/usr/local/bin/lsp-copilot']), 'linux'), '/usr/local/bin/lsp-copilot');
    assert.equal(pathServer(envPath, exists([]), 'linux'), undefined);
  });

  /** chooseServer with a workspace server /ws/.venv/bin/lsp-copilot and /usr/bin's on PATH. */
  function choice(answers: Answer[], memories: { approved: Memory; refused: Memory }, more: Partial<Parameters<typeof chooseServer>[0]> = {}) {
    const asked: Array<[string, string | undefined]> = [];
    const run = chooseServer({
      workspaceFolders: ['/ws'],
      envPath: '/usr/bin',
      trusted: true,
      ask: async (file, onPath) => {
        asked.push([file, onPath]);
        return answers.shift();
      },
      exists: exists(['/ws/.venv/bin/lsp-copilot', '/usr/bin/lsp-copilot']),
      fingerprintOf: () => 'v1',
      platform: 'linux',
      ...memories,
      ...more,
    });
    return { run, asked };
  }
  const LOCAL = '/ws/.venv/bin/lsp-copilot';
  const ON_PATH = '/usr/bin/lsp-copilot';

  test('the serverPath setting wins, unasked', async () => {
    const { run, asked } = choice([], { approved: new FakeMemento(), refused: new FakeMemento() }, { configured: '/opt/lsp-copilot' });
    assert.equal(await run, '/opt/lsp-copilot');
    assert.deepEqual(asked, []);
  });
  test("a workspace server is not run without a yes: refused, PATH's runs, and the no is kept", async () => {
    const memories = { approved: new FakeMemento(), refused: new FakeMemento() };
    const first = choice(['path'], memories);
    assert.equal(await first.run, ON_PATH);
    assert.deepEqual(first.asked, [[LOCAL, ON_PATH]]);
    assert.equal(memories.approved.get(APPROVED_KEY), undefined);
    const again = choice([], memories);
    assert.equal(await again.run, ON_PATH);
    assert.deepEqual(again.asked, [], 'a no is not asked again in this workspace');
  });
  test('a dismissed question runs PATH\'s and is asked again next time', async () => {
    const memories = { approved: new FakeMemento(), refused: new FakeMemento() };
    assert.equal(await choice([undefined], memories).run, ON_PATH);
    const again = choice([undefined], memories);
    assert.equal(await again.run, ON_PATH);
    assert.equal(again.asked.length, 1);
  });
  test('a yes is remembered globally, for this file as it is', async () => {
    const approved = new FakeMemento();
    const first = choice(['run'], { approved, refused: new FakeMemento() });
    assert.equal(await first.run, LOCAL);
    assert.equal(first.asked.length, 1);
    assert.deepEqual(approved.get(APPROVED_KEY), { [LOCAL]: 'v1' });
    // Another workspace window (its own workspaceState), the same file: not asked.
    const again = choice([], { approved, refused: new FakeMemento() });
    assert.equal(await again.run, LOCAL);
    assert.deepEqual(again.asked, []);
    // The file changed (a pull replaced it): asked again.
    const changed = choice(['path'], { approved, refused: new FakeMemento() }, { fingerprintOf: () => 'v2' });
    assert.equal(await changed.run, ON_PATH);
    assert.equal(changed.asked.length, 1);
  });
  test('an untrusted workspace never runs its own server, nor asks', async () => {
    const approved = new FakeMemento();
    await approved.update(APPROVED_KEY, { [LOCAL]: 'v1' });
    const { run, asked } = choice(['run'], { approved, refused: new FakeMemento() }, { trusted: false });
    assert.equal(await run, ON_PATH);
    assert.deepEqual(asked, []);
  });
  test('with none on PATH, a no leaves no server', async () => {
    const { run, asked } = choice(['path'], { approved: new FakeMemento(), refused: new FakeMemento() }, { envPath: '' });
    assert.equal(await run, undefined);
    assert.deepEqual(asked, [[LOCAL, undefined]]);
  });
});

describe('settings a repository must not choose', () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));
  const properties: Record<string, any> = manifest.contributes.configuration.properties;
  // Each runs a program, loads a model (a model folder may run code), sends code or the API
  // key somewhere, or reads or writes a file at a path it names.
  const RUN_OR_SEND = [
    'serverPath', 'serverArgs', 'model', 'routes', 'speculativeModel', 'experiment',
    'engineBackend', 'remoteUrl', 'remoteApiKeyEnv', 'remoteCaBundle', 'remoteTokenizer',
    'cacheDir', 'logFile', 'acceptanceFile', 'logSourceText',
  ];
  // Reviewed: they mention a file, folder, header or command, but name none to use.
  const REVIEWED = [
    'weights', 'deadlineMs', 'remoteRoutingHeader', 'engineMaxRestarts', 'secretFilePatterns',
    'excludedFolders', 'logLevel', 'acceptanceMaxRows',
  ];
  test('every setting that runs or sends is machine-scoped (user settings only)', () => {
    const wrong = RUN_OR_SEND.filter((name) => properties[`lspCopilot.${name}`]?.scope !== 'machine');
    assert.deepEqual(wrong, []);
  });
  test('a setting that names a path, URL or variable is machine-scoped or reviewed', () => {
    const words = /\b(path|folder|file|url|hub id|environment variable|bundle|header|executable|command)\b/i;
    const unreviewed = Object.entries(properties)
      .filter(([key, schema]) => words.test(schema.markdownDescription ?? schema.description ?? '') && schema.scope !== 'machine'
        && !REVIEWED.includes(key.slice('lspCopilot.'.length)))
      .map(([key]) => key);
    assert.deepEqual(unreviewed, []);
  });
  test('restricted in untrusted workspaces too; the extension reads them as machine settings', () => {
    const untrusted = manifest.capabilities?.untrustedWorkspaces;
    assert.equal(untrusted?.supported, 'limited');
    for (const name of RUN_OR_SEND) {
      assert.ok(untrusted.restrictedConfigurations.includes(`lspCopilot.${name}`), name);
      assert.ok(MACHINE_SETTINGS.has(name), name);
    }
  });
  test("a workspace's value of a machine setting is never sent to the server", () => {
    const user: Record<string, unknown> = { temperature: 0.1, remoteUrl: 'https://mine.example' };
    const workspace: Record<string, unknown> = {
      temperature: 0.3, remoteUrl: 'https://theirs.example', remoteApiKeyEnv: 'GITHUB_TOKEN', engineBackend: 'remote',
      logFile: '/tmp/x.log', model: '/ws/model',
    };
    const config = {
      get: <T>(key: string) => (key in workspace ? workspace[key] : user[key]) as T,
      inspect: (key: string) => ({
        ...(key in user ? { globalValue: user[key] } : {}), ...(key in workspace ? { workspaceValue: workspace[key] } : {}),
      }),
    };
    assert.deepEqual(serverSettings(config), { temperature: 0.3, remoteUrl: 'https://mine.example' });
  });
});

describe('status bar', () => {
  test('loading shows progress, ready shows latency, failure is clickable', () => {
    const it = item();
    const status = new Status(it);
    assert.ok(it.shown);
    status.onProgress({ kind: 'begin', title: 'lsp-copilot', message: 'starting engine' });
    assert.match(it.text, /loading|starting engine/);
    status.onProgress({ kind: 'report', message: 'loading weights' });
    assert.match(it.text, /loading weights/);
    assert.equal(status.state, 'loading');
    status.onStats(stats({ engine_state: 'ready', latency_ms: { p50: 80, p90: 90, p99: 99 } }));
    status.onLatency(123.4);
    assert.equal(status.state, 'ready');
    assert.match(it.text, /123 ms/);
    assert.match(String(it.tooltip), /p50 80 ms/);
    status.onStats(stats({ engine_state: 'failed', engine_error: 'no such model' }));
    assert.equal(status.state, 'error');
    assert.equal(it.command, 'lspCopilot.showError');
    assert.match(String(it.tooltip), /no such model/);
  });
  test('idle stats do not hide a disabled state', () => {
    const status = new Status(item());
    status.onDisabled();
    status.onStats(stats({ engine_state: 'idle' }));
    assert.equal(status.state, 'disabled');
  });
});

describe('feedback', () => {
  const at = (text: string, character = 4): FeedbackParams => ({ uri: 'file:///a.py', position: { line: 1, character }, text });
  test('shown, then accepted', () => {
    const sent: string[] = [];
    const fb = new Feedback((method) => sent.push(method));
    fb.shown(at('a + b'));
    fb.shown(at('a + b')); // the same suggestion again is shown once
    fb.accepted(at('a + b'));
    assert.deepEqual(sent, [DID_SHOW, DID_ACCEPT]);
  });
  test('replaced or dismissed without accepting is rejected', () => {
    const sent: Array<[string, string]> = [];
    const fb = new Feedback((method, params) => sent.push([method, params.text]));
    fb.shown(at('x'));
    fb.shown(at('y', 5));
    fb.dismissed();
    fb.dismissed();
    assert.deepEqual(sent, [[DID_SHOW, 'x'], [DID_REJECT, 'x'], [DID_SHOW, 'y'], [DID_REJECT, 'y']]);
  });
});

describe('activate() with a mocked vscode', () => {
  beforeEach(() => {
    vscodeMock.reset({ serverPath: '/opt/bin/lsp-copilot', serverArgs: ['serve'], enable: true, temperature: 0.1 });
  });

  test('spawns the server with the settings and the proposed features', async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    assert.ok(client, 'a LanguageClient was created');
    assert.deepEqual(client.serverOptions.command, '/opt/bin/lsp-copilot');
    assert.deepEqual(client.serverOptions.args, ['serve']);
    assert.deepEqual(client.clientOptions.initializationOptions, { lspCopilot: { enable: true, temperature: 0.1 } });
    assert.ok(client.proposed, 'registerProposedFeatures() was called');
    assert.ok(client.started);
    for (const name of ['lspCopilot.enable', 'lspCopilot.disable', 'lspCopilot.toggle', 'lspCopilot.showStats', 'lspCopilot.showLog', 'lspCopilot.suggest']) {
      assert.ok(vscodeMock.commands.has(name), name);
    }
    await extension.deactivate();
  });

  test('progress and errors reach the status bar; stats open as JSON', async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    const [bar] = vscodeMock.items;
    client.requestHandlers.get('window/workDoneProgress/create')!({ token: 't1' });
    client.notificationHandlers.get('$/progress')!({ token: 't1', value: { kind: 'begin', title: 'lsp-copilot', message: 'loading model' } });
    assert.match(bar.text, /loading model/);
    client.stats = { ...client.stats, engine_state: 'failed', engine_error: 'model not found' };
    client.notificationHandlers.get('$/progress')!({ token: 't1', value: { kind: 'end', message: 'failed' } });
    client.notificationHandlers.get('window/showMessage')!({ type: 1, message: 'lsp-copilot: the engine could not start: model not found' });
    assert.equal(bar.command, 'lspCopilot.showError');
    assert.deepEqual(vscodeMock.messages.at(-1), { level: 'error', text: 'lsp-copilot: the engine could not start: model not found' });
    await vscodeMock.commands.get('lspCopilot.showStats')!();
    assert.equal(JSON.parse(vscodeMock.opened[0].content).engine_error, 'model not found');
    await extension.deactivate();
  });

  test('inline items are reported shown, and accepted through their command', async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    const document = { uri: { toString: () => 'file:///w/a.py' } };
    const position = { line: 1, character: 11 };
    const token = { isCancellationRequested: false };
    const items = [{ insertText: 'a + b' }];
    const result = await provide(document, position, {}, token, async () => items);
    assert.equal(result, items);
    const expected = { uri: 'file:///w/a.py', position: { line: 1, character: 11 }, text: 'a + b' };
    assert.deepEqual(client.notifications, [{ method: 'lspCopilot/didShow', params: expected }]);
    const command = (items[0] as any).command;
    await vscodeMock.commands.get(command.command)!(...command.arguments);
    assert.deepEqual(client.notifications.at(-1), { method: 'lspCopilot/didAccept', params: expected });
    await provide(document, { line: 2, character: 0 }, {}, token, async () => ({ items: [] }));
    assert.equal(client.notifications.length, 2, 'an accepted suggestion is not rejected later');
    await extension.deactivate();
  });

  test("feedback names the server's id of the suggestion", async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    const document = { uri: { toString: () => 'file:///w/a.py' } };
    const token = { isCancellationRequested: false };
    const args = { uri: 'file:///w/a.py', position: { line: 1, character: 11 }, text: 'a + b', id: 'ab-1' };
    const items = [{ insertText: 'a + b', command: { title: '', command: 'lspCopilot.didAccept', arguments: [args] } }];
    await provide(document, { line: 1, character: 11 }, {}, token, async () => items);
    assert.deepEqual(client.notifications, [{ method: 'lspCopilot/didShow', params: args }]);
    const command = (items[0] as any).command;
    await vscodeMock.commands.get(command.command)!(...command.arguments);
    assert.deepEqual(client.notifications.at(-1), { method: 'lspCopilot/didAccept', params: args });
    await extension.deactivate();
  });

  test('suggest asks VS Code for an explicit request; the middleware sends it as Invoked', async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    await vscodeMock.commands.get('lspCopilot.suggest')!();
    assert.deepEqual(vscodeMock.executed, ['editor.action.inlineSuggest.trigger']);
    const provide = client.clientOptions.middleware.provideInlineCompletionItems;
    const document = { uri: { toString: () => 'file:///w/a.py' } };
    const kinds: number[] = [];
    const next = async (_d: unknown, _p: unknown, context: { triggerKind: number }) => {
      kinds.push(context.triggerKind);
      return [{ insertText: 'a + b' }, { insertText: 'b + a' }];
    };
    const token = { isCancellationRequested: false };
    const items = await provide(document, { line: 1, character: 11 }, { triggerKind: 0 }, token, next);
    await provide(document, { line: 1, character: 11 }, { triggerKind: 1 }, token, next);
    assert.deepEqual(kinds, [1, 2]);
    // Every item accepts through the extension's command, with its own text.
    assert.deepEqual(items.map((i: any) => i.command.arguments[0].text), ['a + b', 'b + a']);
    await extension.deactivate();
  });

  test('no server found: the status bar says so and nothing is spawned', async () => {
    vscodeMock.reset({ serverPath: '', enable: true });
    const savedPath = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await extension.activate({ subscriptions: [] } as any);
    } finally {
      process.env.PATH = savedPath;
    }
    assert.equal(FakeClient.instances.length, 0);
    assert.equal(vscodeMock.items[0].command, 'lspCopilot.showError');
    assert.match(String(vscodeMock.items[0].tooltip), /lspCopilot\.serverPath/);
    await extension.deactivate();
  });

  test('a workspace .venv server runs only after a yes, which is remembered; serverPath from a workspace is ignored', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lsp-copilot-trust-'));
    const ws = path.join(root, 'ws');
    const bin = path.join(root, 'bin');
    const local = path.join(ws, '.venv', 'bin', 'lsp-copilot');
    const onPath = path.join(bin, 'lsp-copilot');
    for (const file of [local, onPath]) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, '#!/bin/sh\n', { mode: 0o755 });
    }
    const savedPath = process.env.PATH;
    process.env.PATH = bin;
    const context = { subscriptions: [], globalState: new FakeMemento(), workspaceState: new FakeMemento() };
    const launched = async (answer?: string): Promise<string | undefined> => {
      // The workspace's settings.json names a server of its own: VS Code drops it (machine
      // scope), and the extension reads only the user's value anyway.
      vscodeMock.reset({ enable: true }, { serverPath: local, serverArgs: ['serve', '--evil'] });
      vscodeMock.answers.push(answer);
      await extension.activate(context as any);
      await extension.deactivate();
      return FakeClient.instances[0]?.serverOptions.command;
    };
    try {
      vscodeMock.workspaceFolders = [{ uri: { fsPath: ws } }];
      assert.equal(await launched('Use the one on PATH'), onPath);
      assert.equal(vscodeMock.asked.length, 1, 'asked before running the workspace server');
      assert.match(vscodeMock.asked[0].text, /lsp-copilot/);
      assert.ok(vscodeMock.asked[0].options.modal);
      assert.deepEqual(FakeClient.instances[0].serverOptions.args, ['serve']);
      assert.ok(context.workspaceState.get(REFUSED_KEY));
      context.workspaceState.data.clear(); // another workspace window, the same folder
      assert.equal(await launched('Run it'), local);
      assert.equal(vscodeMock.asked.length, 1);
      assert.equal(await launched(undefined), local, 'a yes is remembered');
      assert.equal(vscodeMock.asked.length, 0);
      fs.appendFileSync(local, 'echo changed\n');
      assert.equal(await launched(undefined), onPath, 'a changed file is asked about again');
      assert.equal(vscodeMock.asked.length, 1);
    } finally {
      process.env.PATH = savedPath;
      vscodeMock.workspaceFolders = [];
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test('toggle sends enable through didChangeConfiguration', async () => {
    await extension.activate({ subscriptions: [] } as any);
    const [client] = FakeClient.instances;
    await vscodeMock.commands.get('lspCopilot.toggle')!();
    assert.deepEqual(client.notifications.at(-1), {
      method: 'workspace/didChangeConfiguration',
      params: { settings: { lspCopilot: { enable: false, temperature: 0.1 } } },
    });
    assert.match(vscodeMock.items[0].text, /circle-slash/);
    await extension.deactivate();
  });
});
