"""Builds the labelled commands shell-guard is measured on, from three public
repositories nobody here wrote, fetched at the commits named in README.md:

- harmful.jsonl: GTFOBins' techniques (GPL-3.0) that start a shell through
  another program, serve a shell over the network or escalate privilege,
  and Atomic Red Team's Linux tests (MIT) of the techniques shell-guard's
  other rules are for (history and defences impaired, start-up files and
  cron written, setuid, sudo, data destroyed);
- benign.jsonl: every example of tldr-pages' common and linux pages
  (CC-BY-4.0).

Run from the repository root with the three checkouts' paths:
`python3 bench/shell/build.py GTFOBINS ATOMIC_RED_TEAM TLDR`. Needs PyYAML."""

import json
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent

# Programs that are themselves shells or interpreters: GTFOBins lists
# starting them (`bash`, `python`) as a shell, which an agent's own shell
# tool does on every call; under sudo they are in the `sudo` class.
SHELLS_AND_REPLS = re.compile(
    r"^(\S*/)?(sh|bash|zsh|dash|ksh|mksh|oksh|ash|fish|csh|tcsh|yash|rbash|elvish|nu|pwsh|posh|rc|es|"
    r"sash|xonsh|osh|busybox|"
    r"python[0-9.]*|perl|ruby|irb|node|nodejs|php|lua|tclsh|wish|expect|julia|R|Rscript|ghci|"
    r"scala|jshell|guile|sbcl|clisp|ocaml|erl|iex|gdb|jjs|rlwrap)( -[a-zA-Z]+)*$"
)

# Atomic Red Team's techniques whose Linux tests shell-guard's rules cover.
ATOMICS = {
    "T1070.003": "history",
    "T1690": "history",
    "T1685": "defences",
    "T1685.004": "defences",
    "T1686": "defences",
    "T1685.006": "destroy",
    "T1485": "destroy",
    "T1546.004": "start-up",
    "T1053.003": "start-up",
    "T1098.004": "start-up",
    "T1037.004": "start-up",
    "T1543.002": "start-up",
    "T1574.006": "start-up",
    "T1548.001": "privilege",
    "T1548.003": "privilege",
}


def one_line(code: str) -> str | None:
    """The command, when the technique is one command line (the others are
    interactive sessions: their later lines are typed into the program)."""
    code = re.sub(r"\\\n\s*", " ", code.strip())
    return None if "\n" in code else code


def gtfobins(root: Path):
    for page in sorted((root / "_gtfobins").iterdir()):
        data = next(yaml.safe_load_all(page.read_text())) or {}
        for function, techniques in (data.get("functions") or {}).items():
            for technique in techniques:
                contexts = technique.get("contexts") or {}
                code = one_line(technique["code"])
                if code is None:
                    continue
                if function == "shell" and "sudo" in contexts:
                    yield "sudo", page.name, "sudo " + code
                if "unprivileged" not in contexts:
                    continue
                if function == "shell" and not SHELLS_AND_REPLS.match(code):
                    yield "shell-escape", page.name, code
                elif function in ("reverse-shell", "bind-shell"):
                    yield "remote-shell", page.name, code
                elif function == "privilege-escalation":
                    yield "privilege", page.name, code


def atomics(root: Path):
    for technique, rule in ATOMICS.items():
        path = root / "atomics" / technique / f"{technique}.yaml"
        for test in yaml.safe_load(path.read_text())["atomic_tests"]:
            executor = test.get("executor") or {}
            if "linux" not in (test.get("supported_platforms") or []) or executor.get("name") not in ("sh", "bash"):
                continue
            command = executor["command"]
            for name, arg in (test.get("input_arguments") or {}).items():
                command = command.replace("#{" + name + "}", str(arg.get("default", "")))
            yield rule, f"{technique} {test['name']}", command.strip()


def placeholder(match: re.Match) -> str:
    """tldr's `{{path/to/file}}` is `path/to/file`; `{{[-r|--recursive]}}`,
    `file[.gz|.xz]` and `{{bash|zsh}}` take their first choice."""
    text = match.group(1)
    text = re.sub(r"\[([^\]|]*)\|[^\]]*\]", r"\1", text)
    # `{{bash|zsh|fish}}`: choices, the first taken.
    text = text.split("|")[0]
    return text.replace(" ...", "").replace("...", "")


# Keystrokes in an interactive program (vim's `<Esc>`, ssh's `<Enter><~><.>`)
# are examples of tldr's but not commands.
KEYSTROKES = re.compile(r"<(Enter|Esc|Ctrl|Alt|Shift|Space|Tab|Backspace|Del|Up|Down|Left|Right|Home|End|Page|Cmd|Super|Meta|~|\.)")


def tldr(root: Path):
    for platform in ("common", "linux"):
        for page in sorted((root / "pages" / platform).glob("*.md")):
            for line in page.read_text().splitlines():
                if line.startswith("`") and line.endswith("`") and len(line) > 2 and not KEYSTROKES.search(line):
                    # `\{\{` is a literal `{{`, not a placeholder.
                    text = line[1:-1].replace("\\{\\{", "\0").replace("\\}\\}", "\1")
                    command = re.sub(r"\{\{(.*?)\}\}", placeholder, text)
                    yield platform, page.stem, command.replace("\0", "{{").replace("\1", "}}")


def jsonl(name: str, rows) -> int:
    rows = sorted(set(rows))
    with open(HERE / name, "w") as out:
        for label, source, command in rows:
            out.write(json.dumps({"label": label, "source": source, "command": command}, ensure_ascii=False) + "\n")
    return len(rows)


def main() -> None:
    gtfo, art, tl = (Path(p) for p in sys.argv[1:4])
    print("harmful", jsonl("harmful.jsonl", [*gtfobins(gtfo), *atomics(art)]))
    print("benign", jsonl("benign.jsonl", tldr(tl)))


if __name__ == "__main__":
    main()
