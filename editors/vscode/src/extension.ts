// lsp-copilot for VS Code: spawns `lsp-copilot serve`, shows its inline completions, reports
// shown/accepted/rejected suggestions, and keeps a status bar item in step with the engine.
import * as vscode from 'vscode';
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  StaticFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import { Feedback } from './feedback';
import { FeedbackParams, lspTriggerKind } from './protocol';
import { Answer, chooseServer, workspaceServer } from './serverPath';
import { machineValue, SECTION, settingsPayload } from './settings';
import { SHOW_ERROR_COMMAND, SHOW_STATS_COMMAND, Status } from './status';
import { attach, fetchStats, MessageType, ShowMessageParams } from './wiring';

export const COMMANDS = {
  enable: 'lspCopilot.enable',
  disable: 'lspCopilot.disable',
  toggle: 'lspCopilot.toggle',
  showStats: SHOW_STATS_COMMAND,
  showLog: 'lspCopilot.showLog',
  showError: SHOW_ERROR_COMMAND,
  restart: 'lspCopilot.restart',
  accepted: 'lspCopilot.accepted',
  suggest: 'lspCopilot.suggest',
} as const;

/** VS Code's own commands for inline suggestions: ask now (explicit request), and cycle. */
export const INLINE_SUGGEST = {
  trigger: 'editor.action.inlineSuggest.trigger',
  next: 'editor.action.inlineSuggest.showNext',
  previous: 'editor.action.inlineSuggest.showPrevious',
} as const;

let client: LanguageClient | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

/** Languages whose `[language]` settings turn `lspCopilot.enable` off. */
function languagesOff(): string[] {
  const ids = config().inspect('enable')?.languageIds ?? [];
  return ids.filter((languageId) => vscode.workspace.getConfiguration(SECTION, { languageId }).get<boolean>('enable') === false);
}

function payload(): ReturnType<typeof settingsPayload> {
  return settingsPayload(config(), languagesOff());
}

export const RUN_IT = 'Run it';
export const USE_PATH = 'Use the one on PATH';
export const DO_NOT_RUN = 'Do not run it';

/** The modal question before a server found in the workspace runs for the first time. */
async function askWorkspaceServer(file: string, onPath: string | undefined): Promise<Answer> {
  const choice = await vscode.window.showWarningMessage(
    `lsp-copilot: run the server this workspace contains, ${file}?`,
    {
      modal: true,
      detail:
        'It comes with the workspace, not from your settings: a cloned repository can put any program there. ' +
        `The answer is kept until the file changes. ${onPath ? `Otherwise: ${onPath}.` : 'There is none on PATH.'} ` +
        'lspCopilot.serverPath (user settings) names a server without asking.',
    },
    RUN_IT,
    onPath ? USE_PATH : DO_NOT_RUN,
  );
  return choice === RUN_IT ? 'run' : choice === undefined ? undefined : 'path';
}

function showMessage(params: ShowMessageParams): void {
  switch (params.type) {
    case MessageType.Error:
      void vscode.window.showErrorMessage(params.message);
      break;
    case MessageType.Warning:
      void vscode.window.showWarningMessage(params.message);
      break;
    default:
      void vscode.window.showInformationMessage(params.message);
  }
}

function insertTextOf(item: vscode.InlineCompletionItem): string {
  return typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
}

export function createClient(
  command: string,
  args: string[],
  output: vscode.OutputChannel,
  status: Status,
  feedback: Feedback,
): LanguageClient {
  const serverOptions: ServerOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    initializationOptions: payload(),
    outputChannel: output,
    middleware: {
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        const started = Date.now();
        // The explicit request (Alt+\, or cycling with Alt+] / Alt+[) must reach the server as
        // LSP's Invoked, the automatic one as Automatic: vscode-languageclient 9 would send
        // VS Code's numbers, which LSP 3.18 reads as Invoked (1) and invalid (0).
        const lspContext = { ...context, triggerKind: lspTriggerKind(context.triggerKind) };
        const result = await next(document, position, lspContext as unknown as typeof context, token);
        if (token.isCancellationRequested) {
          return result;
        }
        status.onLatency(Date.now() - started);
        const items = Array.isArray(result) ? result : (result?.items ?? []);
        if (items.length === 0) {
          feedback.dismissed();
          return result;
        }
        for (const [index, item] of items.entries()) {
          const id = item.command?.arguments?.[0]?.id;
          const params: FeedbackParams = {
            uri: document.uri.toString(),
            position: { line: position.line, character: position.character },
            text: insertTextOf(item),
            ...(typeof id === 'string' ? { id } : {}),
          };
          if (index === 0) {
            feedback.shown(params);
          }
          // Replaces the server's own command (workspace/executeCommand lspCopilot.didAccept):
          // the didAccept notification says the same, and is counted once.
          item.command = { title: 'lsp-copilot: accepted', command: COMMANDS.accepted, arguments: [params] };
        }
        return result;
      },
    },
  };
  const lc = new LanguageClient('lspCopilot', 'lsp-copilot', serverOptions, clientOptions);
  // Inline completion is a proposed feature in vscode-languageclient 9.
  lc.registerProposedFeatures();
  // Registered after the built-in features, so its handlers win: progress and error
  // messages go to the status bar as well as to the user.
  const statusFeature: StaticFeature = {
    fillClientCapabilities: () => undefined,
    getState: () => ({ kind: 'static' }),
    initialize: () => {
      attach(lc, status, { showMessage }, () => void fetchStats(lc, status).catch(() => undefined));
    },
    clear: () => undefined,
  };
  lc.registerFeature(statusFeature);
  return lc;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('lsp-copilot');
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  const status = new Status(item);
  const feedback = new Feedback((method, params) => void client?.sendNotification(method, params));
  context.subscriptions.push(output, item);

  const folders = (): string[] => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const start = async (): Promise<void> => {
    const command = await chooseServer({
      configured: machineValue<string>(config(), 'serverPath'),
      workspaceFolders: folders(),
      envPath: process.env.PATH,
      trusted: vscode.workspace.isTrusted,
      ask: askWorkspaceServer,
      approved: context.globalState,
      refused: context.workspaceState,
    });
    if (command === undefined) {
      status.onServerStopped('lsp-copilot not found: set lspCopilot.serverPath, or pip install lsp-copilot');
      return;
    }
    const args = machineValue<string[]>(config(), 'serverArgs') ?? ['serve'];
    client = createClient(command, args, output, status, feedback);
    if (config().get<boolean>('enable') === false) {
      status.onDisabled();
    }
    try {
      await client.start();
    } catch (error) {
      status.onServerStopped(`could not start ${command}: ${String(error)}`);
    }
  };

  const setEnabled = async (enabled: boolean): Promise<void> => {
    await config().update('enable', enabled, vscode.ConfigurationTarget.Global);
  };

  context.subscriptions.push(
    vscode.commands.registerCommand(COMMANDS.enable, () => setEnabled(true)),
    vscode.commands.registerCommand(COMMANDS.disable, () => setEnabled(false)),
    vscode.commands.registerCommand(COMMANDS.toggle, () => setEnabled(config().get<boolean>('enable') === false)),
    vscode.commands.registerCommand(COMMANDS.showLog, () => output.show(true)),
    // An explicit request: VS Code asks every provider with triggerKind Invoke, and shows
    // the several items the server answers (Alt+] / Alt+[ cycle through them).
    vscode.commands.registerCommand(COMMANDS.suggest, () => vscode.commands.executeCommand(INLINE_SUGGEST.trigger)),
    vscode.commands.registerCommand(COMMANDS.showStats, async () => {
      if (!client?.isRunning()) {
        void vscode.window.showWarningMessage('lsp-copilot: the server is not running');
        return;
      }
      const stats = await fetchStats(client, status);
      const doc = await vscode.workspace.openTextDocument({
        language: 'json',
        content: JSON.stringify(stats, null, 2),
      });
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand(COMMANDS.showError, async () => {
      const choice = await vscode.window.showErrorMessage(status.error || 'lsp-copilot failed', 'Show log', 'Restart');
      if (choice === 'Show log') {
        output.show(true);
      } else if (choice === 'Restart') {
        await vscode.commands.executeCommand(COMMANDS.restart);
      }
    }),
    vscode.commands.registerCommand(COMMANDS.restart, async () => {
      await client?.stop().catch(() => undefined);
      client = undefined;
      await start();
    }),
    vscode.commands.registerCommand(COMMANDS.accepted, (params: FeedbackParams) => feedback.accepted(params)),
    vscode.workspace.onDidCloseTextDocument(() => feedback.dismissed()),
    // Trusted now: the workspace's own server may be offered (asked about) on a restart.
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      if (!machineValue<string>(config(), 'serverPath') && workspaceServer(folders()) !== undefined) {
        await vscode.commands.executeCommand(COMMANDS.restart);
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration(SECTION)) {
        return;
      }
      if (event.affectsConfiguration(`${SECTION}.serverPath`) || event.affectsConfiguration(`${SECTION}.serverArgs`)) {
        await vscode.commands.executeCommand(COMMANDS.restart);
        return;
      }
      const enabled = config().get<boolean>('enable') !== false;
      if (enabled) {
        if (status.state === 'disabled') {
          status.onEnabled();
        }
      } else {
        status.onDisabled();
      }
      await client?.sendNotification('workspace/didChangeConfiguration', { settings: payload() });
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
