"""redact-secrets against three independent secret scanners, on the
labelled cases of corpus.txt and a benign body of registry packages'
sources (bench/secrets/README.md). Prints the table BENCHMARKS.md carries
and exits 1 when redact-secrets misses a target:

- recall: every secret case any of the scanners flags, redact-secrets
  redacts;
- false positives: on the benign body it changes no more lines than
  detect-secrets flags.

Run through bench/secrets/run.sh, which installs the scanners (pinned)
and the benign body (pinned by sha256) first.
"""

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict

# A result larger than this goes to redact-secrets in pieces (at line
# ends), as a tool's output would be cut before a model reads it: the
# host's answer limit is 1 MiB.
CHUNK = 256 * 1024


def cases(path):
    """The corpus' cases: (class, file name, why or None, text)."""
    out = []
    with open(path, encoding="utf-8") as f:
        current = None
        for line in f:
            if line.startswith("=== "):
                head, _, why = line[4:].rstrip("\n").partition(" | ")
                cls, name = head.split(" ", 1)
                current = [cls, name, why or None, ""]
                out.append(current)
            elif current is not None:
                current[3] += line
            elif not line.startswith("#"):
                raise SystemExit(f"{path}: text before the first case: {line!r}")
    return [tuple(c) for c in out]


def write_cases(corpus, into):
    """Each case as its own file, under its own directory so that its name
    (and so its format, for the scanners that read it) is kept."""
    shutil.rmtree(into, ignore_errors=True)
    paths = []
    for i, (_, name, _, text) in enumerate(corpus):
        d = os.path.join(into, f"{i:04}")
        os.makedirs(d)
        p = os.path.join(d, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(p)
    return paths


def text_files(root):
    """The benign body: every UTF-8 text file under root up to 1 MiB."""
    out = []
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(base, name)
            if os.path.islink(p):
                continue
            with open(p, "rb") as f:
                data = f.read()
            if len(data) > 1 << 20 or b"\0" in data:
                continue
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(p)
    return out


# Each scanner: its findings in `paths` (all under `root`) as a set of
# (path, line from 1).


def detect_secrets(tools, root, paths):
    # Every plugin, its default filters, as `detect-secrets scan` runs
    # them on a directory that is not a git repository (from within it: it
    # finds nothing under a path outside the working directory).
    run = subprocess.run(
        [os.path.join(tools, "venv/bin/detect-secrets"), "scan", "--all-files", "."],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    found = set()
    for name, secrets in json.loads(run.stdout)["results"].items():
        path = os.path.normpath(os.path.join(root, name))
        for s in secrets:
            found.add((path, s["line_number"]))
    return found


def credsweeper(tools, root, paths):
    out = os.path.join(tools, "credsweeper.json")
    # Default rules and ML threshold; --pedantic so that files without an
    # extension (.netrc, id_rsa) are read, --depth for encoded and
    # structured data (credsweeper's own "deep scan").
    subprocess.run(
        [
            os.path.join(tools, "venv/bin/credsweeper"),
            "--path",
            root,
            "--pedantic",
            "--depth",
            "3",
            "--save-json",
            out,
            "--no-stdout",
            "--log",
            "silence",
        ],
        check=True,
        capture_output=True,
    )
    found = set()
    with open(out, encoding="utf-8") as f:
        for c in json.load(f):
            for line in c["line_data_list"]:
                found.add((os.path.normpath(line["path"]), max(line["line_num"], 1)))
    return found


def secretlint(tools, root, paths):
    # The recommended preset, on every file (dot files too).
    run = subprocess.run(
        [
            os.path.join(tools, "node_modules/.bin/secretlint"),
            "--format",
            "json",
            "--secretlintrc",
            os.path.join(tools, ".secretlintrc.json"),
            "--no-maskSecrets",
            os.path.join(root, "**/*"),
            os.path.join(root, "**/.*"),
        ],
        capture_output=True,
        text=True,
        cwd=tools,
    )
    if run.returncode not in (0, 1):
        raise SystemExit(f"secretlint failed: {run.stderr}")
    found = set()
    for result in json.loads(run.stdout):
        for m in result["messages"]:
            found.add((os.path.normpath(result["filePath"]), m["loc"]["start"]["line"]))
    return found


def chunks(text):
    """`text` in pieces of at most CHUNK bytes, cut at line ends."""
    lines = text.splitlines(keepends=True)
    piece, size = [], 0
    for line in lines:
        n = len(line.encode("utf-8"))
        if piece and size + n > CHUNK:
            yield "".join(piece)
            piece, size = [], 0
        piece.append(line)
        size += n
    if piece:
        yield "".join(piece)


def redact_secrets(hookbox, plugin, work):
    """redact-secrets as hookbox runs it: each file (in pieces) a
    tool-result event replayed through the component by the CLI; a line is
    flagged when its rewrite changes it."""

    def scan(tools, root, paths):
        events = os.path.join(work, "events.jsonl")
        pieces = []
        with open(events, "w", encoding="utf-8") as f:
            for p in paths:
                with open(p, encoding="utf-8") as src:
                    text = src.read()
                first = 1
                for piece in chunks(text):
                    event = {"event": "tool-result", "tool_name": "read", "result": piece}
                    f.write(json.dumps(event) + "\n")
                    pieces.append((p, first, piece))
                    first += piece.count("\n")
        run = subprocess.run(
            [
                hookbox,
                "replay",
                "--plugin",
                plugin,
                "--config",
                "redact-secrets.emails=false",
                events,
            ],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            raise SystemExit(f"hookbox replay failed: {run.stderr}")
        flows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
        if len(flows) != len(pieces):
            raise SystemExit(f"hookbox replay answered {len(flows)} of {len(pieces)} events")
        found = set()
        for (path, first, piece), flow in zip(pieces, flows):
            if flow["flow"] == "continue":
                continue
            if flow["flow"] != "rewrite-result":
                raise SystemExit(f"{path}: redact-secrets answered {flow}")
            before = piece.splitlines()
            after = flow["result"].splitlines()
            matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
            for op, i1, i2, j1, j2 in matcher.get_opcodes():
                if op == "equal":
                    continue
                if i2 - i1 == j2 - j1:
                    # Line for line: each line changed is a finding.
                    found.update(
                        (path, first + i1 + k)
                        for k in range(i2 - i1)
                        if before[i1 + k] != after[j1 + k]
                    )
                else:
                    # A block of lines that became fewer (a private key as
                    # one label) is one finding, on its first line, as the
                    # other scanners report a key.
                    found.add((path, first + i1))
        return found

    return scan


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", required=True, help="where run.sh installed the scanners")
    parser.add_argument("--benign", required=True, help="the unpacked benign body")
    parser.add_argument("--hookbox", required=True)
    parser.add_argument("--plugin", required=True, help="redact-secrets.wasm")
    parser.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "corpus.txt"))
    parser.add_argument("--only", help="comma-separated scanners to run")
    parser.add_argument("--misses", action="store_true", help="print each case a tool missed")
    args = parser.parse_args()

    work = os.path.join(args.tools, "work")
    os.makedirs(work, exist_ok=True)
    corpus = cases(args.corpus)
    case_root = os.path.join(work, "cases")
    case_paths = [os.path.normpath(p) for p in write_cases(corpus, case_root)]
    benign_paths = [os.path.normpath(p) for p in text_files(args.benign)]
    benign_bytes = sum(os.path.getsize(p) for p in benign_paths)
    benign_lines = 0
    for p in benign_paths:
        with open(p, encoding="utf-8") as f:
            benign_lines += len(f.read().splitlines())

    scanners = {
        "redact-secrets": redact_secrets(args.hookbox, args.plugin, work),
        "detect-secrets": detect_secrets,
        "credsweeper": credsweeper,
        "secretlint": secretlint,
    }
    if args.only:
        scanners = {k: v for k, v in scanners.items() if k in args.only.split(",")}

    flagged_cases = {}
    benign_found = {}
    seconds = {}
    for name, scan in scanners.items():
        found = scan(args.tools, case_root, case_paths)
        files = {p for p, _ in found}
        flagged_cases[name] = {i for i, p in enumerate(case_paths) if p in files}
        start = time.perf_counter()
        benign_found[name] = scan(args.tools, os.path.normpath(args.benign), benign_paths)
        seconds[name] = time.perf_counter() - start
        print(f"{name}: {len(flagged_cases[name])} cases, {len(benign_found[name])} benign lines, {seconds[name]:.1f} s", file=sys.stderr)

    secret = [i for i, c in enumerate(corpus) if not c[0].startswith("not/")]
    negative = [i for i, c in enumerate(corpus) if c[0].startswith("not/")]
    names = list(scanners)
    others = [n for n in names if n != "redact-secrets"]
    union = {i for n in others for i in flagged_cases[n]}

    groups = defaultdict(list)
    for i in secret:
        groups[corpus[i][0].split("/")[0]].append(i)

    def frac(hit, total):
        return f"{hit}/{total}" if total else "–"

    mib = benign_bytes / 2**20
    print(f"Secret cases: {len(secret)} in {len(groups)} classes; not secrets: {len(negative)}; "
          f"benign body: {len(benign_paths)} files, {benign_lines} lines, {mib:.1f} MiB.\n")
    print("| class | cases | " + " | ".join(names) + (" | union of the others |" if others else " |"))
    print("|---|---|" + "---|" * (len(names) + (1 if others else 0)))
    for g in sorted(groups):
        row = [frac(len(set(groups[g]) & flagged_cases[n]), len(groups[g])) for n in names]
        if others:
            row.append(frac(len(set(groups[g]) & union), len(groups[g])))
        print(f"| {g} | {len(groups[g])} | " + " | ".join(row) + " |")
    row = [f"**{frac(len(set(secret) & flagged_cases[n]), len(secret))}**" for n in names]
    if others:
        row.append(f"**{frac(len(set(secret) & union), len(secret))}**")
    print("| **all secrets** | " + str(len(secret)) + " | " + " | ".join(row) + " |")
    row = [frac(len(set(negative) & flagged_cases[n]), len(negative)) for n in names]
    print("| not secrets, flagged | " + str(len(negative)) + " | " + " | ".join(row) + (" | |" if others else " |"))
    row = [f"{len(benign_found[n])} ({100 * len(benign_found[n]) / benign_lines:.3f} %)" for n in names]
    print("| benign lines flagged | " + str(benign_lines) + " | " + " | ".join(row) + (" | |" if others else " |"))
    row = [f"{seconds[n] / mib:.2f} s" for n in names]
    print("| time per MiB | | " + " | ".join(row) + (" | |" if others else " |"))

    if args.misses:
        for n in names:
            for path, line in sorted(benign_found[n]):
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines()
                text = lines[line - 1] if line <= len(lines) else ""
                print(f"{n} flags benign {os.path.relpath(path, args.benign)}:{line}: {text.strip()[:160]!r}", file=sys.stderr)
            for i in secret:
                if i not in flagged_cases[n]:
                    print(f"{n} misses {corpus[i][0]} {corpus[i][1]}: {corpus[i][3].strip()[:160]!r}", file=sys.stderr)
            for i in negative:
                if i in flagged_cases[n]:
                    print(f"{n} flags {corpus[i][0]} {corpus[i][1]}: {corpus[i][3].strip()[:160]!r}", file=sys.stderr)

    failed = []
    if "redact-secrets" in names and others:
        missed = sorted((set(secret) & union) - flagged_cases["redact-secrets"])
        for i in missed:
            failed.append(f"misses a case another scanner flags: {corpus[i][0]} {corpus[i][1]}")
        wrong = sorted(set(negative) & flagged_cases["redact-secrets"])
        for i in wrong:
            failed.append(f"changes a case that holds no secret: {corpus[i][0]} {corpus[i][1]}")
        if "detect-secrets" in names and len(benign_found["redact-secrets"]) > len(benign_found["detect-secrets"]):
            failed.append("changes more benign lines than detect-secrets flags")
    for f in failed:
        print(f"redact-secrets {f}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
