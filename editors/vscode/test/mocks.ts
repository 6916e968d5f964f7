// A mocked `vscode` module and a fake `vscode-languageclient/node`, installed into Node's
// module loader so that the compiled extension can be loaded outside VS Code.
import Module = require('module');

export interface FakeItem {
  text: string;
  tooltip: string | object | undefined;
  command: string | object | undefined;
  shown: boolean;
  show(): void;
  dispose(): void;
}

export class FakeClient {
  static instances: FakeClient[] = [];
  started = false;
  proposed = false;
  features: Array<{ initialize(): void }> = [];
  notifications: Array<{ method: string; params: unknown }> = [];
  requestHandlers = new Map<string, (params: any) => unknown>();
  notificationHandlers = new Map<string, (params: any) => void>();
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    FakeClient.instances.push(this);
  }
  registerProposedFeatures(): void {
    this.proposed = true;
  }
  registerFeature(feature: { initialize(): void }): void {
    this.features.push(feature);
  }
  async start(): Promise<void> {
    this.started = true;
    for (const feature of this.features) {
      feature.initialize();
    }
  }
  async stop(): Promise<void> {
    this.started = false;
  }
  isRunning(): boolean {
    return this.started;
  }
  onRequest(method: string, handler: (params: any) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }
  onNotification(method: string, handler: (params: any) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }
  async sendNotification(method: string, params?: unknown): Promise<void> {
    this.notifications.push({ method, params });
  }
  stats: Record<string, unknown> = { engine_state: 'ready', engine_error: null, latency_ms: { p50: 120, p90: 200, p99: 300 }, requests: 1 };
  async sendRequest<R>(method: string): Promise<R> {
    if (method === 'lspCopilot/stats') {
      return this.stats as R;
    }
    throw new Error(`unexpected request ${method}`);
  }
}

export class FakeConfig {
  /** `workspace`: values a workspace's settings.json sets, over the user's `values`. */
  constructor(readonly values: Record<string, unknown>, readonly workspace: Record<string, unknown> = {}) {}
  get<T>(key: string): T | undefined {
    return (key in this.workspace ? this.workspace[key] : this.values[key]) as T | undefined;
  }
  /** As VS Code: where the value was set, if at all. */
  inspect(key: string): { globalValue?: unknown; workspaceValue?: unknown } | undefined {
    return {
      ...(key in this.values ? { globalValue: this.values[key] } : {}),
      ...(key in this.workspace ? { workspaceValue: this.workspace[key] } : {}),
    };
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values[key] = value;
    const event = { affectsConfiguration: (section: string) => section === 'lspCopilot' || section === `lspCopilot.${key}` };
    for (const listener of vscodeMock.listeners.config) {
      await listener(event);
    }
  }
}

/** VS Code's Memento (globalState, workspaceState), in memory. */
export class FakeMemento {
  readonly data = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.data.set(key, value);
  }
  keys(): string[] {
    return [...this.data.keys()];
  }
}

export const vscodeMock = {
  config: new FakeConfig({}),
  isTrusted: true,
  /** What showWarningMessage answers (the button's title), first in, first out. */
  answers: [] as Array<string | undefined>,
  /** The modal questions asked: message, options and buttons. */
  asked: [] as Array<{ text: string; options: any; items: string[] }>,
  commands: new Map<string, (...args: any[]) => unknown>(),
  executed: [] as string[],
  items: [] as FakeItem[],
  messages: [] as Array<{ level: string; text: string }>,
  opened: [] as Array<{ language: string; content: string }>,
  listeners: { config: [] as Array<(event: any) => unknown>, close: [] as Array<() => void> },
  workspaceFolders: [] as Array<{ uri: { fsPath: string } }>,
  reset(values: Record<string, unknown>, workspace: Record<string, unknown> = {}): void {
    this.config = new FakeConfig(values, workspace);
    this.isTrusted = true;
    this.answers.length = 0;
    this.asked.length = 0;
    this.commands.clear();
    this.executed.length = 0;
    this.items.length = 0;
    this.messages.length = 0;
    this.opened.length = 0;
    this.listeners.config.length = 0;
    this.listeners.close.length = 0;
    FakeClient.instances.length = 0;
  },
};

const disposable = { dispose: () => undefined };

// Base classes vscode-languageclient's converters extend when they load (the protocol tests
// run its real code converter).
class Base {}

const vscode = {
  CompletionItem: class extends Base {},
  CodeLens: class extends Base {},
  DocumentLink: class extends Base {},
  CodeAction: class extends Base {},
  Diagnostic: class extends Base {},
  CallHierarchyItem: class extends Base {},
  TypeHierarchyItem: class extends Base {},
  SymbolInformation: class extends Base {},
  InlayHint: class extends Base {},
  StatusBarAlignment: { Left: 1, Right: 2 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  window: {
    createOutputChannel: (name: string) => ({ name, shown: false, show() { this.shown = true; }, appendLine: () => undefined, dispose: () => undefined }),
    createStatusBarItem: (): FakeItem => {
      const item: FakeItem = { text: '', tooltip: undefined, command: undefined, shown: false, show() { this.shown = true; }, dispose: () => undefined };
      vscodeMock.items.push(item);
      return item;
    },
    showErrorMessage: async (text: string) => { vscodeMock.messages.push({ level: 'error', text }); return undefined; },
    showWarningMessage: async (text: string, ...rest: any[]) => {
      if (typeof rest[0] === 'object' && rest[0]?.modal) {
        vscodeMock.asked.push({ text, options: rest[0], items: rest.slice(1) });
        return vscodeMock.answers.shift();
      }
      vscodeMock.messages.push({ level: 'warning', text });
      return undefined;
    },
    showInformationMessage: async (text: string) => { vscodeMock.messages.push({ level: 'info', text }); return undefined; },
    showTextDocument: async () => undefined,
  },
  commands: {
    registerCommand: (name: string, fn: (...args: any[]) => unknown) => {
      vscodeMock.commands.set(name, fn);
      return disposable;
    },
    executeCommand: async (name: string, ...args: any[]) => {
      vscodeMock.executed.push(name);
      return vscodeMock.commands.get(name)?.(...args);
    },
  },
  workspace: {
    get workspaceFolders() {
      return vscodeMock.workspaceFolders;
    },
    get isTrusted() {
      return vscodeMock.isTrusted;
    },
    onDidGrantWorkspaceTrust: () => disposable,
    getConfiguration: () => vscodeMock.config,
    onDidChangeConfiguration: (listener: (event: any) => unknown) => {
      vscodeMock.listeners.config.push(listener);
      return disposable;
    },
    onDidCloseTextDocument: (listener: () => void) => {
      vscodeMock.listeners.close.push(listener);
      return disposable;
    },
    openTextDocument: async (doc: { language: string; content: string }) => {
      vscodeMock.opened.push(doc);
      return doc;
    },
  },
};

const languageClient = {
  LanguageClient: FakeClient,
  TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 },
};

const loader = Module as unknown as { _load(request: string, parent: unknown, isMain: boolean): unknown };
const originalLoad = loader._load;
loader._load = function (request: string, parent: unknown, isMain: boolean): unknown {
  if (request === 'vscode') {
    return vscode;
  }
  if (request === 'vscode-languageclient/node') {
    return languageClient;
  }
  return originalLoad.call(this, request, parent, isMain);
};
