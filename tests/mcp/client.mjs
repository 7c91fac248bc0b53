// Drives `hookbox mcp` with the official TypeScript MCP SDK (npm
// `@modelcontextprotocol/client`, v2) as an MCP client would: client.py's
// scenarios `eras`, `old_server` and `ask` on the other SDK,
// `node client.mjs SCENARIO ARG -- COMMAND...`. Prints one JSON object: what
// the client saw, in the shapes client.py prints. The SDK comes from the
// node_modules tests/mcp/setup.sh installs (ESM resolves no NODE_PATH):
// HOOKBOX_MCP_NODE_MODULES, by default target/mcp/node_modules.

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const modules = process.env.HOOKBOX_MCP_NODE_MODULES ?? fileURLToPath(new URL('../../target/mcp/node_modules', import.meta.url));
const require = createRequire(`${modules}/`);
const { Client, ProtocolError, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');

/** A tool result as the client sees it. */
function shown(result) {
    return {
        is_error: Boolean(result.isError),
        text: result.content.filter(c => c.text != null).map(c => c.text).join('\n'),
        structured: result.structuredContent ?? null,
    };
}

async function call(client, name, args) {
    try {
        return shown(await client.callTool({ name, arguments: args }));
    } catch (e) {
        if (!ProtocolError.isInstance(e)) throw e;
        return { error: e.message, code: e.code };
    }
}

/** A server command line, or the URL of one serving streamable HTTP. */
function transport(command) {
    if (command.length === 1 && command[0].startsWith('http')) {
        return new StreamableHTTPClientTransport(new URL(command[0]));
    }
    return new StdioClientTransport({ command: command[0], args: command.slice(1) });
}

/** The SDK's `Client` in `mode`: "auto" probes `server/discover` (on stdio,
 * on a sibling process started for the probe alone) and falls back to
 * `initialize`; "legacy", the SDK's default, only initializes; a version
 * pins it: 2026-07-28 to `server/discover` with no fallback, an earlier one
 * to an initialize offering that version alone. */
function client(mode, options = {}) {
    const era = mode === 'auto' || mode === 'legacy' ? { versionNegotiation: { mode } }
        : mode >= '2026-07-28' ? { versionNegotiation: { mode: { pin: mode } } }
        : { versionNegotiation: { mode: 'legacy' }, supportedProtocolVersions: [mode] };
    return new Client({ name: 'hookbox-tests', version: '0' }, { ...era, ...options });
}

/** `scenario(client)` with `client` connected through `command`. */
async function session(client, command, scenario) {
    await client.connect(transport(command));
    try {
        return await scenario(client);
    } finally {
        await client.close();
    }
}

/** `mode` against a server of both eras (mcp-server-time): an allowed call,
 * and a denied one, which the proxy answers itself. */
const eras = (mode, command) => session(client(mode), command, async c => ({
    protocol_version: c.getNegotiatedProtocolVersion(),
    tools: (await c.listTools()).tools.map(t => t.name).sort(),
    denied: await call(c, 'get_current_time', { timezone: 'UTC' }),
    allowed: await call(c, 'convert_time', { source_timezone: 'UTC', time: '12:00', target_timezone: 'Asia/Tokyo' }),
}));

/** `mode` in front of a server with the tools `echo` and `remove` from
 * another era: tests/mcp/rmcp-server, which takes only the initialize
 * handshake and exits on any other first request, or
 * tests/mcp/new_server.mjs, which takes 2026-07-28 alone. */
const old_server = (mode, command) => session(client(mode), command, async c => ({
    protocol_version: c.getNegotiatedProtocolVersion(),
    server: c.getServerVersion()?.name ?? null,
    tools: (await c.listTools()).tools.map(t => t.name).sort(),
    denied: await call(c, 'remove', { path: '/etc/passwd' }),
    allowed: await call(c, 'echo', { text: 'hi' }),
    again: await call(c, 'echo', { text: 'still here' }),
}));

/** 2026-07-28, calling a tool that asks the user (tests/mcp/ask_server.py):
 * the SDK answers the `input_required` result's elicitation through this
 * handler, with `code`, and retries the call. */
async function ask(code, command) {
    const c = client('2026-07-28', { capabilities: { elicitation: { form: {} } } });
    c.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { code } }));
    return session(c, command, async c => ({ deploy: await call(c, 'deploy', { target: 'prod' }) }));
}

const SCENARIOS = { eras, old_server, ask };

const [scenario, arg, sep, ...command] = process.argv.slice(2);
if (sep !== '--' || !(scenario in SCENARIOS)) throw new Error('usage: client.mjs SCENARIO ARG -- COMMAND...');
console.log(JSON.stringify(await SCENARIOS[scenario](arg, command)));
