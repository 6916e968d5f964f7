// VS Code settings (lspCopilot.*) -> the server's settings (initializationOptions and
// workspace/didChangeConfiguration). Every server setting is declared in package.json,
// generated from the server's own table (scripts/gen-docs.py); only those the user has set
// are sent, so the server stays the one source of truth for defaults.

export const SECTION = 'lspCopilot';

/** Settings that belong to the extension alone and are never sent to the server. */
export const CLIENT_SETTINGS: readonly string[] = ['serverPath', 'serverArgs', 'trace.server'];

type JsonType = 'string' | 'boolean' | 'integer' | 'number' | 'array' | 'object' | 'null';

interface Manifest {
  contributes: { configuration: { properties: Record<string, { type?: JsonType | JsonType[]; scope?: string }> } };
}

// package.json sits two folders above out/src/, in the repository and in the .vsix alike.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const manifest = require('../../package.json') as Manifest;

/** Server settings the extension exposes (all of them), with the JSON types each may take. */
export const SERVER_SETTINGS: Readonly<Record<string, readonly JsonType[]>> = Object.fromEntries(
  Object.entries(manifest.contributes.configuration.properties)
    .map(([key, schema]): [string, JsonType[]] => [key.slice(SECTION.length + 1), [schema.type ?? []].flat()])
    .filter(([key]) => !CLIENT_SETTINGS.includes(key)),
);

/** Settings read from the user's settings alone ("scope": "machine" in package.json): they
 * choose what runs, where code and the API key go, or which files are read and written. VS
 * Code already drops their values from a workspace's settings.json (workspace files are
 * parsed with the window, resource, language-overridable and machine-overridable scopes
 * only); the extension reads them from `inspect().globalValue` as well, so that no
 * workspace value reaches the server whatever VS Code does. */
export const MACHINE_SETTINGS: ReadonlySet<string> = new Set(
  Object.entries(manifest.contributes.configuration.properties)
    .filter(([, schema]) => schema.scope === 'machine')
    .map(([key]) => key.slice(SECTION.length + 1)),
);

export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
  globalLanguageValue?: unknown;
  workspaceLanguageValue?: unknown;
  workspaceFolderLanguageValue?: unknown;
}

export interface ConfigLike {
  get<T>(key: string): T | undefined;
  /** VS Code's WorkspaceConfiguration.inspect: where a value was set, if anywhere. */
  inspect?(key: string): (Inspected & { defaultValue?: unknown }) | undefined;
}

/** A machine setting's value: the user's, else the default; never a workspace's. */
export function machineValue<T>(config: ConfigLike, key: string): T | undefined {
  if (!config.inspect) {
    return config.get<T>(key);
  }
  const info = config.inspect(key);
  return (info?.globalValue ?? info?.defaultValue) as T | undefined;
}

export type ServerSettings = Record<string, unknown>;

function hasType(value: unknown, type: JsonType): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

function userSet(info: Inspected | undefined): boolean {
  return (
    info !== undefined &&
    [
      info.globalValue,
      info.workspaceValue,
      info.workspaceFolderValue,
      info.globalLanguageValue,
      info.workspaceLanguageValue,
      info.workspaceFolderLanguageValue,
    ].some((v) => v !== undefined)
  );
}

/** The server settings the user has set in `config` (null and wrongly typed ones are left
 * out). Without `inspect` (a plain object), a value counts as set unless empty or null. */
export function serverSettings(config: ConfigLike): ServerSettings {
  const out: ServerSettings = {};
  for (const [key, types] of Object.entries(SERVER_SETTINGS)) {
    const machine = MACHINE_SETTINGS.has(key);
    const info = config.inspect?.(key);
    if (config.inspect ? !userSet(machine ? { globalValue: info?.globalValue } : info) : false) {
      continue;
    }
    const value = machine ? machineValue<unknown>(config, key) : config.get<unknown>(key);
    if (value === null || value === undefined || (!config.inspect && value === '')) {
      continue;
    }
    if (types.some((type) => hasType(value, type))) {
      out[key] = value;
    }
  }
  return out;
}

/** initializationOptions / didChangeConfiguration settings, nested as the server accepts.
 * `languagesOff`: languages whose `[language]` scope sets `lspCopilot.enable` to false (VS
 * Code's native per-language switch); they join `disabledLanguages`. */
export function settingsPayload(
  config: ConfigLike,
  languagesOff: readonly string[] = [],
): { lspCopilot: ServerSettings } {
  const settings = serverSettings(config);
  if (languagesOff.length > 0) {
    const listed = Array.isArray(settings.disabledLanguages) ? (settings.disabledLanguages as string[]) : [];
    settings.disabledLanguages = [...new Set([...listed, ...languagesOff])];
  }
  return { lspCopilot: settings };
}
