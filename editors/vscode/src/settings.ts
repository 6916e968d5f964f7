// VS Code settings (lspCopilot.*) -> the server's settings (initializationOptions and
// workspace/didChangeConfiguration). Only server settings the user has set are sent, so
// the server's own defaults stay the single source of truth.

export const SECTION = 'lspCopilot';

/** Server settings the extension exposes, with the JSON type each must have. */
export const SERVER_SETTINGS: Readonly<Record<string, 'boolean' | 'string' | 'number'>> = {
  enable: 'boolean',
  model: 'string',
  device: 'string',
  maxPromptTokens: 'number',
  maxTokensSingleLine: 'number',
  maxTokensMultiLine: 'number',
  temperature: 'number',
  cpuKvCacheGib: 'number',
  gpuMemoryUtilization: 'number',
  maxModelLen: 'number',
  speculativeMethod: 'string',
};

/** Settings that belong to the extension alone and are never sent to the server. */
export const CLIENT_SETTINGS = ['serverPath', 'serverArgs', 'trace.server'] as const;

export interface ConfigLike {
  get<T>(key: string): T | undefined;
}

export type ServerSettings = Record<string, boolean | string | number>;

/** The server settings present in `config` (null / unset / wrongly typed ones are left out). */
export function serverSettings(config: ConfigLike): ServerSettings {
  const out: ServerSettings = {};
  for (const [key, type] of Object.entries(SERVER_SETTINGS)) {
    const value = config.get<unknown>(key);
    if (value === null || value === undefined || value === '') {
      continue;
    }
    if (typeof value === type) {
      out[key] = value as boolean | string | number;
    }
  }
  return out;
}

/** initializationOptions / didChangeConfiguration settings, nested as the server accepts. */
export function settingsPayload(config: ConfigLike): { lspCopilot: ServerSettings } {
  return { lspCopilot: serverSettings(config) };
}
