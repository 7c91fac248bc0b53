"""egress (with no settings) and the usual SSRF check of Python tools
(urllib.parse's host, then the ipaddress module's classes, and the name
`localhost`) on the payloads of payloads.tsv, each sent as a `fetch` tool
call's `url`. egress runs in `hookbox replay`: after `cargo demo` (which
builds target/demo/plugins/egress.wasm) and `cargo build -p hookbox-cli`,
`python3 bench/egress/compare.py`. The standard library only."""

import ipaddress
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse


def usual_check_refuses(url: str) -> bool:
    try:
        host = urlparse(url).hostname
    except ValueError:
        return True
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_reserved


def egress_refuses(urls: list[str]) -> list[bool]:
    root = Path(__file__).resolve().parents[2]
    events = "".join(
        json.dumps({"event": "tool-call", "tool_name": "fetch", "args": json.dumps({"url": u})}) + "\n"
        for u in urls
    )
    out = subprocess.run(
        [str(root / "target/debug/hookbox"), "replay", "--plugin", str(root / "target/demo/plugins/egress.wasm"), "--runs", "1", "-"],
        input=events, capture_output=True, text=True, check=True,
    ).stdout
    flows = [json.loads(line)["flow"] for line in out.splitlines() if line.startswith("{")]
    assert len(flows) == len(urls), (len(flows), len(urls), out[-500:])
    return [flow == "skip" for flow in flows]


def main() -> int:
    rows = [
        line.split("\t")
        for line in Path(__file__).with_name("payloads.tsv").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    total, refused, by_egress = Counter(), Counter(), Counter()
    missed = []
    for (label, section, url), egress in zip(rows, egress_refuses([r[2] for r in rows])):
        total[label] += 1
        by_egress[label] += egress
        if usual_check_refuses(url):
            refused[label] += 1
        elif label == "internal":
            missed.append(f"  {section}: {url}")
    print("| payloads | n | refused by egress | refused by the usual check |")
    print("|---|---|---|---|")
    for label in ("internal", "external", "redirect"):
        print(f"| aimed {label} | {total[label]} | {by_egress[label]} | {refused[label]} |")
    print("\nAimed inside, passed by the usual check:")
    print("\n".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
