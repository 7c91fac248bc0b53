// What the tests share: the guests (the example plugins and `puppet`, which
// misbehaves on command), copied by `cargo run -p xtask -- guests DIR` into
// $HOOKBOX_GUESTS (default target/node/guests).
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Stack } from 'hookbox';

const root = resolve(fileURLToPath(import.meta.url), '../../../..');
export const GUESTS = process.env.HOOKBOX_GUESTS ?? join(root, 'target/node/guests');
export const SECRET = 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

export function guest(name) {
  const path = join(GUESTS, `${name}.wasm`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`cargo run -p xtask -- guests ${GUESTS}\` first`);
  return path;
}

export function tempDir() {
  return mkdtempSync(join(tmpdir(), 'hookbox-node-'));
}

/** The example stack a user installs first, and a puppet; path-jail jailed to `jail`. */
export function examples(jail = tempDir()) {
  const files = ['deny-tools', 'path-jail', 'redact-secrets', 'inject-context', 'puppet'].map(guest);
  return { jail, stack: Stack.fromFiles(files, { config: { 'path-jail': { root: jail } } }) };
}
