// Which `lsp-copilot` runs: the serverPath setting (user settings only), else a virtual
// environment in a workspace folder once the user agreed to run that very file, else PATH.
// A cloned repository can ship its own `.venv/bin/lsp-copilot`: it never runs unasked.
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

export type Exists = (file: string) => boolean;

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const VENV_DIRS = ['.venv', 'venv', 'env'];

function exeName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'lsp-copilot.exe' : 'lsp-copilot';
}

/** `lsp-copilot` in a virtual environment of a workspace folder, if any. */
export function workspaceServer(
  workspaceFolders: readonly string[],
  exists: Exists = isExecutable,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const binDir = platform === 'win32' ? 'Scripts' : 'bin';
  for (const folder of workspaceFolders) {
    for (const venv of VENV_DIRS) {
      const candidate = path.join(folder, venv, binDir, exeName(platform));
      if (exists(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** `lsp-copilot` on PATH. Relative entries are skipped: they would name the workspace. */
export function pathServer(
  envPath: string | undefined,
  exists: Exists = isExecutable,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (dir && path.isAbsolute(dir) && exists(path.join(dir, exeName(platform)))) {
      return path.join(dir, exeName(platform));
    }
  }
  return undefined;
}

/** The user's answer about a workspace server: run it, use PATH's, or no answer (dismissed). */
export type Answer = 'run' | 'path' | undefined;

/** Asks whether to run `file` (a workspace server); `fallback` is PATH's, if any. */
export type Ask = (file: string, fallback: string | undefined) => Thenable<Answer>;

/** VS Code's Memento, as much of it as this needs. */
export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

/** Where answers are kept: per file, with the file's fingerprint, so that a server replaced
 * since (a `git pull`) is asked about again. Approvals live in the user's global state (a
 * repository cannot bring its own), refusals in the workspace's. */
export const APPROVED_KEY = 'lspCopilot.approvedServers';
export const REFUSED_KEY = 'lspCopilot.refusedServers';

/** What the file holds: its size and SHA-256 (a console-script launcher is small). */
export function fingerprint(file: string): string | undefined {
  try {
    const data = fs.readFileSync(file);
    return `${data.length}:${crypto.createHash('sha256').update(data).digest('hex')}`;
  } catch {
    return undefined;
  }
}

export interface Choice {
  configured?: string;
  workspaceFolders: readonly string[];
  envPath?: string;
  /** vscode.workspace.isTrusted: an untrusted workspace's server never runs, unasked. */
  trusted: boolean;
  ask: Ask;
  approved: Memory;
  refused: Memory;
  exists?: Exists;
  fingerprintOf?: (file: string) => string | undefined;
  platform?: NodeJS.Platform;
}

async function remember(memory: Memory, key: string, file: string, print: string): Promise<void> {
  await memory.update(key, { ...(memory.get<Record<string, string>>(key) ?? {}), [file]: print });
}

/** The server to spawn, or undefined when there is none (or only a refused one). */
export async function chooseServer(c: Choice): Promise<string | undefined> {
  if (c.configured) {
    return c.configured;
  }
  const exists = c.exists ?? isExecutable;
  const onPath = pathServer(c.envPath, exists, c.platform);
  const local = workspaceServer(c.workspaceFolders, exists, c.platform);
  // The same file on PATH: the user put the environment there (activated it) themselves.
  if (local === undefined || !c.trusted || local === onPath) {
    return onPath;
  }
  const print = (c.fingerprintOf ?? fingerprint)(local);
  if (print === undefined) {
    return onPath;
  }
  if (c.approved.get<Record<string, string>>(APPROVED_KEY)?.[local] === print) {
    return local;
  }
  if (c.refused.get<Record<string, string>>(REFUSED_KEY)?.[local] === print) {
    return onPath;
  }
  const answer = await c.ask(local, onPath);
  if (answer === 'run') {
    await remember(c.approved, APPROVED_KEY, local, print);
    return local;
  }
  if (answer === 'path') {
    await remember(c.refused, REFUSED_KEY, local, print);
  }
  return onPath;
}
