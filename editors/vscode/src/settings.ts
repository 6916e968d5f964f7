// VS Code settings (lspCopilot.*) -> the server's settings (initializationOptions and
// workspace/didChangeConfiguration). Every server setting is declared in package.json,
// generated from the server's own table (scripts/gen-docs.py); only those the user has set
// are sent, so the server stays the one source of truth for defaults.

export const SECTION = 'lspCopilot';

/** Settings that belong to the extension alone and are never sent to the server. */
export const CLIENT_SETTINGS: readonly string[] = ['serverPath', 'serverArgs', 'trace.server'];

type JsonType = 'string' | 'boolean' | 'integer' | 'number' | 'array' | 'object' | 'null';

interface Manifest {
  contributes: { configuration: { properties: Record<string, { type?: JsonType | JsonType[] }> } };
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
  inspect?(key: string): Inspected | undefined;
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
    if (config.inspect ? !userSet(config.inspect(key)) : false) {
      continue;
    }
    const value = config.get<unknown>(key);
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
