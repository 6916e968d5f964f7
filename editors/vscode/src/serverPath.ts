// Where `lsp-copilot` is: the serverPath setting, else a virtual environment in a
// workspace folder, else PATH.
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

export function resolveServerCommand(
  configured: string | undefined,
  workspaceFolders: readonly string[],
  envPath: string | undefined,
  exists: Exists = isExecutable,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const exe = platform === 'win32' ? 'lsp-copilot.exe' : 'lsp-copilot';
  const binDir = platform === 'win32' ? 'Scripts' : 'bin';
  if (configured) {
    return configured;
  }
  for (const folder of workspaceFolders) {
    for (const venv of VENV_DIRS) {
      const candidate = path.join(folder, venv, binDir, exe);
      if (exists(candidate)) {
        return candidate;
      }
    }
  }
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (dir && exists(path.join(dir, exe))) {
      return path.join(dir, exe);
    }
  }
  return undefined;
}
