"""A scripted model for OpenCode (`opencode run`) to talk to: an
OpenAI-compatible `/v1/chat/completions` server that streams, for each
request, the next step of a script. A step is a tool call
(`{"tool": NAME, "args": {...}}`) or a text answer (`{"text": ...}`).
`model.py SCRIPT.json LOG.jsonl`: prints the port it listens on, then logs
each request's messages (one JSON line per request) to LOG.jsonl.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script = json.load(open(sys.argv[1]))
log = open(sys.argv[2], "a", buffering=1)
lock = threading.Lock()
step = 0


def chunk(delta, finish=None):
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global step
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with lock:
            # Titles and summaries are asked for without tools: answer them
            # with text and leave the script where it is.
            if not request.get("tools"):
                now = {"text": "title"}
            else:
                now = script[min(step, len(script) - 1)]
                step += 1
                log.write(json.dumps(request["messages"]) + "\n")
        if "tool" in now:
            call = {"index": 0, "id": f"call_{step}", "type": "function",
                    "function": {"name": now["tool"], "arguments": json.dumps(now["args"])}}
            chunks = [chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls")]
        else:
            chunks = [chunk({"role": "assistant", "content": now["text"]}), chunk({}, "stop")]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for c in chunks:
            self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
