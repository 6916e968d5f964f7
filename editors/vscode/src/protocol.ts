// The lsp-copilot server's custom protocol, as the extension uses it.

export const STATS = 'lspCopilot/stats';
export const DID_SHOW = 'lspCopilot/didShow';
export const DID_ACCEPT = 'lspCopilot/didAccept';
export const DID_REJECT = 'lspCopilot/didReject';

export type EngineState = 'loading' | 'ready' | 'failed' | 'idle' | 'stopped';

export interface Stats {
  engine_state: EngineState;
  engine_error: string | null;
  latency_ms: { p50: number | null; p90: number | null; p99: number | null };
  requests: number;
  [counter: string]: unknown;
}

export interface Position {
  line: number;
  character: number;
}

/** Params of didShow / didAccept / didReject (didAccept: `acceptedChars` when only part of
 * `text` was accepted). VS Code reports whole accepts only: the server reads a partial
 * accept (Ctrl+Right) from the edit itself, and the item cycled to from the text inserted. */
export interface FeedbackParams {
  uri: string;
  position: Position;
  text: string;
  /** The server's id of the suggestion (from the item's command); absent from old servers. */
  id?: string;
  acceptedChars?: number;
}

/** LSP 3.18's InlineCompletionTriggerKind. vscode-languageclient 9 sends VS Code's own
 * values instead (Invoke 0, Automatic 1): the middleware maps them with `lspTriggerKind`. */
export const TRIGGER_INVOKED = 1;
export const TRIGGER_AUTOMATIC = 2;

/** VS Code's InlineCompletionTriggerKind (Invoke 0, Automatic 1) -> LSP 3.18's. */
export function lspTriggerKind(vscodeKind: number): number {
  return vscodeKind === 0 ? TRIGGER_INVOKED : TRIGGER_AUTOMATIC;
}

/** What the extension needs from a JSON-RPC connection: a LanguageClient, or a bare
 * vscode-languageserver-protocol connection in the protocol tests. */
export interface Disposable {
  dispose(): void;
}

export interface Rpc {
  onRequest(method: string, handler: (params: any) => unknown): Disposable;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  sendNotification(method: string, params?: unknown): Promise<void>;
}
