// An MCP server on the official TypeScript SDK (npm
// `@modelcontextprotocol/server`, v2) that speaks the 2026-07-28 revision
// alone: `serveStdio` with `legacy: 'reject'`, so each request carries its
// protocol version, client info and capabilities in `_meta`, `server/discover`
// answers what `initialize` did, and an `initialize` (or any request without
// the envelope) is refused with the SDK's unsupported-protocol-version error
// (-32022) naming 2026-07-28. A 2025-11-25 client reaches it only through
// hookbox's bridge. Tools: `echo(text)` and `remove(path)`, which removes
// nothing. The SDK comes from the node_modules tests/mcp/setup.sh installs:
// `node new_server.mjs [NODE_MODULES]` (clients pass servers little of their
// environment), else HOOKBOX_MCP_NODE_MODULES, else target/mcp/node_modules.

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const modules = process.argv[2] ?? process.env.HOOKBOX_MCP_NODE_MODULES ?? fileURLToPath(new URL('../../target/mcp/node_modules', import.meta.url));
const require = createRequire(`${modules}/`);
const { McpServer, fromJsonSchema } = require('@modelcontextprotocol/server');
const { serveStdio } = require('@modelcontextprotocol/server/stdio');

/** An object schema with one required string property. */
function oneString(name) {
    return fromJsonSchema({ type: 'object', properties: { [name]: { type: 'string' } }, required: [name] });
}

serveStdio(() => {
    const server = new McpServer({ name: 'hookbox-2026-server', version: '0' }, { capabilities: { tools: {} } });
    server.registerTool('echo', { description: 'Echoes `text` back.', inputSchema: oneString('text') },
        async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
    server.registerTool('remove', { description: 'Says it removed `path` (it removes nothing).', inputSchema: oneString('path') },
        async ({ path }) => ({ content: [{ type: 'text', text: `removed ${path}` }] }));
    return server;
}, { legacy: 'reject' });
