// How the extension listens to the server: work-done progress and error messages feed the
// status bar, and stats are polled until the engine settles. Written against `Rpc` so that
// the protocol tests run exactly this code against the real server.
import { Disposable, Rpc, STATS, Stats } from './protocol';
import { ProgressValue, Status } from './status';

export const PROGRESS_CREATE = 'window/workDoneProgress/create';
export const PROGRESS = '$/progress';
export const SHOW_MESSAGE = 'window/showMessage';

export enum MessageType {
  Error = 1,
  Warning = 2,
  Info = 3,
  Log = 4,
}

export interface ShowMessageParams {
  type: MessageType;
  message: string;
}

export interface Ui {
  showMessage(params: ShowMessageParams): void;
}

/** Take over progress creation and showMessage so the status bar sees them. */
export function attach(rpc: Rpc, status: Status, ui: Ui, onSettled?: () => void): Disposable[] {
  const tokens = new Set<string | number>();
  return [
    rpc.onRequest(PROGRESS_CREATE, (params: { token: string | number }) => {
      tokens.add(params.token);
      return null;
    }),
    rpc.onNotification(PROGRESS, (params: { token: string | number; value: ProgressValue }) => {
      if (!tokens.has(params.token)) {
        return;
      }
      status.onProgress(params.value);
      if (params.value.kind === 'end') {
        tokens.delete(params.token);
        onSettled?.();
      }
    }),
    rpc.onNotification(SHOW_MESSAGE, (params: ShowMessageParams) => {
      if (params.type === MessageType.Error) {
        status.onError(params.message);
      }
      ui.showMessage(params);
    }),
  ];
}

export async function fetchStats(rpc: Rpc, status?: Status): Promise<Stats> {
  // `{}`, not no params at all: the server answers a custom request without `params` with
  // InvalidParams (pygls requires the member; JSON-RPC allows leaving it out).
  const stats = await rpc.sendRequest<Stats>(STATS, {});
  status?.onStats(stats);
  return stats;
}

/** Poll stats until the engine is ready or has failed; resolves with the last stats. */
export async function waitForEngine(
  rpc: Rpc,
  status: Status | undefined,
  timeoutMs: number,
  intervalMs = 1000,
): Promise<Stats> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await fetchStats(rpc, status);
    if (stats.engine_state === 'ready' || stats.engine_state === 'failed') {
      return stats;
    }
    if (Date.now() > deadline) {
      throw new Error(`engine still ${stats.engine_state} after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
