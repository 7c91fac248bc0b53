"""The binding itself: runs, verdicts, fail-closed, reload, threads, asyncio,
Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import hookbox
import pytest
from conftest import guest

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_a_tool_call_is_run_rewritten_or_skipped_as_the_guards_say(stack, tmp_path):
    run = stack.start_run()
    denied = run.tool_call("shell", {"command": "rm -rf /"})
    assert (denied.kind, denied.by) == ("skip", "deny-tools")
    assert "denied" in denied.reason
    jailed = run.tool_call("write_file", {"path": "/etc/passwd", "text": "x"})
    assert (jailed.kind, jailed.by, jailed.rewritten) == ("run", "path-jail", True)
    assert jailed.args_dict() == {"path": f"{tmp_path}/etc/passwd", "text": "x"}
    inside = json.dumps({"path": f"{tmp_path}/a.txt"}, separators=(",", ":"))
    plain = run.tool_call("read_file", inside.replace(":", ":  "))
    assert (plain.kind, plain.rewritten, plain.args) == ("run", False, inside)


def test_arguments_that_are_not_a_json_object_are_refused_not_run(stack):
    verdict = stack.start_run().tool_call("read_file", "[1, 2]")
    assert (verdict.kind, verdict.by) == ("refuse", hookbox.HOST)
    assert "not a JSON object" in verdict.reason


def test_a_secret_in_a_result_is_replaced(stack):
    verdict = stack.start_run().tool_result("read_file", {"path": "a"}, f"config:\n{SECRET}\n")
    assert verdict.kind == "replace" and verdict.by == "redact-secrets"
    assert "wJalrXUtnFEMI" not in verdict.text and "[REDACTED]" in verdict.text
    assert stack.start_run().tool_result("read_file", {}, "nothing here").kind == "keep"


def test_a_secret_split_across_streamed_deltas_is_never_shown(stack):
    run = stack.start_run()
    shown = []
    for delta in ("Your config: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MD", "ENG/bPxRfiCYEXAMPLEKEY", " and that is all."):
        shown.append(run.send({"event": "text-delta", "delta": delta}).show)
    shown.append(run.text_done())
    text = "".join(shown)
    assert all("wJalr" not in part and "EXAMPLEKEY" not in part for part in shown), shown
    assert text.startswith("Your config: ") and text.endswith(" and that is all.") and "[REDACTED" in text


def test_a_request_patch_is_the_first_turns_only(stack):
    run = stack.start_run()
    first = run.completion_call("fix it", [{"role": "user", "content": "fix it"}], 1)
    assert first.kind == "patch" and first.by == "inject-context"
    assert first.system("Be brief.").startswith("Be brief.\n\n<document id=\"house-rules\">")
    assert run.completion_call("fix it", [], 2).kind == "continue"


def test_send_takes_dicts_typed_dicts_and_json_text(stack):
    run = stack.start_run()
    event = hookbox.events.ToolCall(event="tool-call", tool_name="puppet:flow:skip:nope", args={})
    for form in (event, json.dumps(event)):
        decision = run.send(form)
        assert (decision.flow, decision.reason, decision.plugin) == ("skip", "nope", "puppet")
        assert decision.to_dict() == {"flow": "skip", "reason": "nope", "plugin": "puppet"}
    with pytest.raises(hookbox.InvalidEvent, match="not an event"):
        run.send({"event": "nope"})
    with pytest.raises(ValueError):
        run.send({"event": "tool-call"})


@pytest.mark.parametrize(
    ("command", "cause"),
    [("panic", "trap"), ("loop", "deadline"), ("grow", "memory")],
)
def test_a_misbehaving_guest_fails_the_run_closed_and_every_later_step(stack, command, cause):
    run = stack.start_run()
    with pytest.raises(hookbox.FailedClosed) as failed:
        run.tool_call(f"puppet:{command}", {})
    assert (failed.value.plugin, failed.value.cause) == ("puppet", cause)
    assert '"puppet" failed closed' in str(failed.value)
    assert run.is_over
    for step in (lambda: run.tool_call("read_file", {}), lambda: run.send({"event": "tool-call", "tool_name": "x", "args": {}})):
        with pytest.raises(hookbox.FailedClosed) as again:
            step()
        assert (again.value.plugin, again.value.cause) == ("puppet", cause)
    # Another run is not touched.
    assert stack.start_run().tool_call("read_file", {}).kind == "run"


def test_a_terminate_raises_terminated_naming_the_plugin(stack):
    run = stack.start_run()
    with pytest.raises(hookbox.Terminated) as ended:
        run.tool_call("puppet:flow:terminate:enough", {})
    assert (ended.value.plugin, ended.value.reason, ended.value.event) == ("puppet", "enough", "tool-call")
    assert isinstance(ended.value, hookbox.Stopped)


def test_a_file_that_is_no_guard_is_a_load_error_naming_it(tmp_path):
    bad = tmp_path / "broken.wasm"
    bad.write_bytes(b"\0asm\x01\0\0\0")
    with pytest.raises(hookbox.LoadError, match="broken"):
        hookbox.Stack.from_files([bad])


def test_a_reload_mid_run_keeps_the_run_pinned(tmp_path):
    shutil.copy(guest("puppet"), tmp_path / "guard.wasm")
    manifest = tmp_path / "hookbox.toml"
    manifest.write_text('[[plugin]]\nfile = "guard.wasm"\n[plugin.config]\nversion = "v1"\n')
    stack = hookbox.Stack.from_directory(tmp_path, debounce_ms=50)
    pinned = stack.start_run()
    manifest.write_text('[[plugin]]\nfile = "guard.wasm"\n[plugin.config]\nversion = "v2"\n')
    deadline = time.monotonic() + 10
    while stack.generation < 2 and time.monotonic() < deadline:
        stack.reload()
        time.sleep(0.05)
    assert stack.generation == 2
    assert pinned.tool_call("puppet:version", {}).reason == "v1"
    assert stack.start_run().tool_call("puppet:version", {}).reason == "v2"
    assert pinned.generation == 1


def _count(run: hookbox.Run) -> str:
    return run.tool_call("puppet:count", {}).reason


def test_16_threads_drive_runs_at_once_and_share_no_guest_state(stack):
    seen: list[list[str]] = []
    lock = threading.Lock()

    def drive() -> None:
        run = stack.start_run()
        counts = [_count(run) for _ in range(5)]
        with lock:
            seen.append(counts)

    threads = [threading.Thread(target=drive) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = [f"global={n} scratch={n}" for n in range(1, 6)]
    assert seen == [expected] * 16


def test_16_asyncio_tasks_drive_runs_at_once_and_share_no_guest_state(stack):
    async def drive() -> list[str]:
        run = stack.start_run()
        return [(await run.atool_call("puppet:count", {})).reason for _ in range(5)]

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(drive() for _ in range(16)))

    expected = [f"global={n} scratch={n}" for n in range(1, 6)]
    assert asyncio.run(main()) == [expected] * 16


def test_the_event_loop_runs_while_a_guest_call_is_in_flight(stack):
    async def main() -> int:
        ticks = 0
        run = stack.start_run()
        call = asyncio.ensure_future(run.atool_call("puppet:loop", {}))
        while not call.done():
            ticks += 1
            await asyncio.sleep(0.005)
        with pytest.raises(hookbox.FailedClosed):
            call.result()
        return ticks

    assert asyncio.run(main()) > 3


def test_ctrl_c_during_a_guest_call_neither_hangs_nor_crashes(examples):
    script = textwrap.dedent(f"""
        import hookbox, sys
        stack = hookbox.Stack.from_files({examples!r})
        run = stack.start_run()
        print("calling", flush=True)
        try:
            while True:
                stack.start_run().tool_call("puppet:loop", {{}}) if False else None
                try:
                    run.tool_call("puppet:loop", {{}})
                except hookbox.FailedClosed:
                    run = stack.start_run()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "calling"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 3, out
    assert "interrupted" in out


def test_a_shadow_guard_is_reported_and_never_acted_on(tmp_path):
    shutil.copy(guest("puppet"), tmp_path / "trial.wasm")
    (tmp_path / "hookbox.toml").write_text('[[plugin]]\nfile = "trial.wasm"\nmode = "shadow"\n')
    stack = hookbox.Stack.from_directory(tmp_path, watch=False)
    assert stack.plugins[0]["mode"] == "shadow"
    run = stack.start_run()
    decision = run.send({"event": "tool-call", "tool_name": "puppet:flow:skip:would-block", "args": {}})
    assert decision.flow == "continue"
    assert decision.shadow == [{"plugin": "trial", "flow": {"flow": "skip", "reason": "would-block"}}]
    failed = run.send({"event": "tool-call", "tool_name": "puppet:panic", "args": {}})
    assert failed.flow == "continue" and failed.shadow[0]["fail_closed"]["cause"] == "trap"
    assert run.tool_call("puppet:panic", {}).kind == "run"


def test_closing_a_run_gives_its_instances_back(examples):
    stack = hookbox.Stack.from_files([examples[0]], max_instances=1)
    with stack.start_run() as run:
        assert run.tool_call("read_file", {}).kind == "run"
        with pytest.raises(hookbox.FailedClosed) as busy:
            stack.start_run().tool_call("read_file", {})
        assert busy.value.cause == "limit" and "max_instances" in str(busy.value)
    with pytest.raises(hookbox.FailedClosed, match="closed"):
        run.tool_call("read_file", {})
    assert run.is_over
    assert stack.start_run().tool_call("read_file", {}).kind == "run"


def test_config_for_a_plugin_that_is_not_there_is_a_load_error(examples):
    with pytest.raises(hookbox.LoadError, match="path_jail"):
        hookbox.Stack.from_files(examples, config={"path_jail": {"root": "/srv"}})


def test_a_process_can_hold_many_stacks(examples):
    # Each would reserve terabytes of address space with a runtime of its own.
    stacks = [hookbox.Stack.from_files(examples) for _ in range(20)]
    assert all(s.start_run().tool_call("read_file", {}).kind == "run" for s in stacks)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_cannot_carry_is_refused_not_checked_as_null(stack, value):
    with pytest.raises(hookbox.InvalidEvent, match="JSON can carry"):
        stack.start_run().tool_call("write_file", {"path": "a", "size": value})


def test_text_a_guard_could_not_read_is_invalid_not_a_unicode_error(stack):
    run = stack.start_run()
    name = "report-\udcff.txt"  # a file name that was not UTF-8, as os.fsdecode gives it
    for ask in (lambda: run.tool_call("read_file", {"path": name}),
                lambda: run.tool_call(name, {}),
                lambda: run.tool_result("read_file", {}, f"contents of {name}"),
                lambda: run.tool_result("read_file", {}, [{"file": name}]),
                lambda: run.completion_call(name, [], 1),
                lambda: run.send({"event": "tool-call", "tool_name": name, "args": {}})):
        with pytest.raises(hookbox.InvalidEvent):
            ask()
    assert not run.is_over


def test_guards_ns_is_the_guards_own_time_and_grows_with_each_answer(examples):
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-call"}})
    run = stack.start_run()
    assert run.guards_ns == 0
    run.tool_call("read_file", {"path": "a.txt"})
    first = run.guards_ns
    assert first > 0
    run.tool_result("read_file", {}, "not asked: the puppet hears tool calls only")
    assert run.guards_ns == first
    run.tool_call("list_files", {})
    assert run.guards_ns > first


@pytest.mark.parametrize("end", ["terminate", "fail-closed"])
def test_a_stop_is_raised_again_on_every_later_event_closed_or_not(examples, end):
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-call"}})
    run = stack.start_run()
    command = "flow:terminate:enough" if end == "terminate" else "panic"
    with pytest.raises(hookbox.Stopped) as first:
        run.tool_call(f"puppet:{command}", {})
    for closed in (False, True):
        if closed:
            run.close()
        for later in (lambda: run.tool_call("ls", {}), lambda: run.tool_result("ls", {}, "x"),
                      lambda: run.completion_call("p", [], 2)):
            with pytest.raises(hookbox.Stopped) as again:
                later()
            assert type(again.value) is type(first.value)
            assert again.value.plugin == first.value.plugin == "puppet"
            assert str(again.value).split(" (")[0] == str(first.value).split(" (")[0]


@pytest.mark.parametrize("framework", ["openai_agents", "langchain", "pydantic_ai"])
def test_a_plugin_the_guard_would_never_ask_is_refused_or_warned_about(examples, framework):
    import importlib

    stack = hookbox.Stack.from_files([examples[0], examples[-1]], config={"puppet": {"subscribe": "completion-response"}})
    assert stack.unheard(["completion-call", "tool-call", "tool-result"]) == ["puppet"]
    module = importlib.import_module(f"hookbox.{framework}")
    guard = {"openai_agents": "Guard", "langchain": "HookboxMiddleware", "pydantic_ai": "HookboxCapability"}[framework]
    with pytest.raises(hookbox.HookboxError, match="puppet"):
        getattr(module, guard)(stack)
    with pytest.warns(UserWarning, match="puppet"):
        getattr(module, guard)(stack, unheard="warn")
    # A stack whose every plugin is asked is taken as it is.
    getattr(module, guard)(hookbox.Stack.from_files([examples[0]]))
