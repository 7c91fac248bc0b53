// The package's TypeScript types compile, strict, against the frameworks'
// own types (types-check.ts, never run).
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

test('the types compile under tsc --strict', () => {
  const tsc = join(here, 'node_modules/typescript/bin/tsc');
  const flags = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
  flags.push('--lib', 'es2022,esnext.disposable,dom', '--types', 'node', '--skipLibCheck');
  try {
    execFileSync(process.execPath, [tsc, ...flags, join(here, 'types-check.ts')], { cwd: here, stdio: 'pipe' });
  } catch (error) {
    throw new Error(`tsc found type errors:\n${error.stdout}${error.stderr}`);
  }
});
