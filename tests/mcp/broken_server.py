"""An MCP server that breaks in the middle of a call: `broken_server.py
crash` exits, `broken_server.py garbage` writes a line that is not JSON-RPC,
`broken_server.py silent` never answers it.
It answers `initialize` and `tools/list` like any server first."""

import json
import sys

mode = sys.argv[1]
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "broken", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": "die", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        if mode == "crash":
            sys.exit(3)
        if mode == "silent":
            continue
        print('{"jsonrpc":"2.0","id":' + json.dumps(id_) + ',"result":{"content":[{"type":"text","text":"half', flush=True)
        print("Traceback (most recent call last): oops", flush=True)
        continue
    elif id_ is None:
        continue
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}), flush=True)
