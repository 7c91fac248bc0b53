// The examples the README points at run as written, from the installed package.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { GUESTS } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));

for (const example of ['openai-agents-guarded.mjs', 'ai-guarded.mjs']) {
  test(`the example ${example} runs and its guards hold`, () => {
    const out = execFileSync(process.execPath, [join(here, 'examples', example), resolve(GUESTS)], { cwd: here, encoding: 'utf8', timeout: 120_000 });
    assert.ok(!out.includes("shell 'rm -rf /'"), out);
    assert.match(out, /denied by policy/);
    assert.match(out, /write_file '\/tmp\/hookbox-example-[^/]+\/etc\/motd'/);
    assert.ok(out.includes('AWS_SECRET_ACCESS_KEY=[REDACTED]') && !out.includes('wJalrXUtnFEMI'), out);
    assert.match(out, /final answer: done/);
  });
}
