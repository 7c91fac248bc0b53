"""A streamable HTTP MCP server that answers `initialize` and `tools/list`
like any other, then answers `tools/call` without end, in the shape its
mode names:

- `line`: an event stream whose one line never ends;
- `event`: an event stream of short `data:` lines, no event ever complete;
- `body`: a JSON body that never ends.

`hostile_http_server.py MODE PORT`. Whoever reads the answer must bound it.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT = sys.argv[1], int(sys.argv[2])
CHUNK = b"x" * (1 << 16)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_GET(self):
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if method == "tools/call":
            return self.without_end()
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "die", "inputSchema": {"type": "object"}}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("mcp-session-id", "hostile")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def without_end(self):
        self.send_response(200)
        stream = MODE in ("line", "event")
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        first = {"line": b"data: ", "event": b"", "body": b'{"jsonrpc":"2.0","id":1,"result":{"x":"'}[MODE]
        piece = b"data: xxxxxxxx\n" * 4096 if MODE == "event" else CHUNK
        try:
            self.chunk(first)
            while True:
                self.chunk(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
