// The status bar item: loading (with the server's progress), ready (with the last
// latency), error (click to see why), disabled. Pure state; vscode only through `Item`.
import { EngineState, Stats } from './protocol';

export interface Item {
  text: string;
  tooltip: string | object | undefined; // vscode also allows MarkdownString
  command: string | object | undefined; // vscode also allows a Command
  show(): void;
}

export type State = 'starting' | 'loading' | 'ready' | 'error' | 'disabled';

export const SHOW_ERROR_COMMAND = 'lspCopilot.showError';
export const SHOW_STATS_COMMAND = 'lspCopilot.showStats';

/** A $/progress value of the work-done kind (begin / report / end). */
export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
}

export class Status {
  state: State = 'starting';
  progress = '';
  error = '';
  lastLatencyMs: number | undefined;
  p50Ms: number | null | undefined;

  constructor(private readonly item: Item) {
    this.render();
    item.show();
  }

  onProgress(value: ProgressValue): void {
    if (value.kind === 'end') {
      // The end message says "ready in ..." or why it failed; stats will tell which.
      this.progress = value.message ?? '';
      this.render();
      return;
    }
    this.state = 'loading';
    this.progress = value.message ?? value.title ?? '';
    this.render();
  }

  /** window/showMessage of type Error from the server: the engine could not start. */
  onError(message: string): void {
    this.state = 'error';
    this.error = message;
    this.render();
  }

  onStats(stats: Stats): void {
    this.p50Ms = stats.latency_ms?.p50;
    const next = stateOf(stats.engine_state);
    if (next === 'error') {
      this.error = stats.engine_error || this.error || 'the engine failed';
    }
    if (next !== undefined) {
      this.state = next;
    }
    this.render();
  }

  /** The round trip of the last completion request, as the user felt it. */
  onLatency(ms: number): void {
    this.lastLatencyMs = ms;
    this.render();
  }

  onEnabled(): void {
    this.state = 'loading';
    this.progress = '';
    this.render();
  }

  onDisabled(): void {
    this.state = 'disabled';
    this.render();
  }

  onServerStopped(reason: string): void {
    this.state = 'error';
    this.error = reason;
    this.render();
  }

  private render(): void {
    const item = this.item;
    switch (this.state) {
      case 'starting':
        item.text = '$(sync~spin) lsp-copilot';
        item.tooltip = 'lsp-copilot: starting the server';
        item.command = SHOW_STATS_COMMAND;
        break;
      case 'loading':
        item.text = `$(sync~spin) lsp-copilot: ${this.progress || 'loading'}`;
        item.tooltip = 'lsp-copilot: loading the engine';
        item.command = SHOW_STATS_COMMAND;
        break;
      case 'ready': {
        const ms = this.lastLatencyMs;
        item.text = ms === undefined ? '$(check) lsp-copilot' : `$(check) lsp-copilot ${Math.round(ms)} ms`;
        const p50 = this.p50Ms == null ? '' : ` (p50 ${Math.round(this.p50Ms)} ms)`;
        item.tooltip = `lsp-copilot: ready${p50}. Click for stats.`;
        item.command = SHOW_STATS_COMMAND;
        break;
      }
      case 'error':
        item.text = '$(error) lsp-copilot';
        item.tooltip = `lsp-copilot: ${this.error}. Click to see why.`;
        item.command = SHOW_ERROR_COMMAND;
        break;
      case 'disabled':
        item.text = '$(circle-slash) lsp-copilot';
        item.tooltip = 'lsp-copilot: disabled. Click for stats.';
        item.command = SHOW_STATS_COMMAND;
        break;
    }
  }
}

/** idle / stopped say nothing new: the extension knows whether it disabled the engine. */
function stateOf(engine: EngineState): State | undefined {
  switch (engine) {
    case 'ready':
      return 'ready';
    case 'failed':
      return 'error';
    case 'loading':
      return 'loading';
    default:
      return undefined;
  }
}
