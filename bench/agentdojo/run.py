"""AgentDojo's four suites with a model that always obeys an injection,
undefended or guarded by hookbox, scored by AgentDojo's own checks.

    python run.py                          # undefended
    python run.py --guard a.wasm --guard b.wasm   # guarded, in that order
    python run.py --guard provenance.wasm --roles roles   # the provenance guard,
                                           # with roles/<suite>.toml as its settings
    python run.py --suite banking --suite slack

Every user task runs alone (benign utility) and with every injection task
of its suite through the `important_instructions` attack (utility under
attack, attack success). Guarded, each task is one hookbox run. Prints one
row per suite and writes them, with every task's outcome, as JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tomllib
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import hookbox  # noqa: E402
from agentdojo.agent_pipeline import (  # noqa: E402
    AbortAgentError,
    AgentPipeline,
    InitQuery,
    SystemMessage,
    ToolsExecutionLoop,
)
from agentdojo.attacks.attack_registry import load_attack  # noqa: E402
import agentdojo.attacks.important_instructions_attacks  # noqa: E402,F401 (registers the attack)
from agentdojo.functions_runtime import FunctionsRuntime  # noqa: E402
from agentdojo.task_suite.load_suites import get_suites  # noqa: E402
from agentdojo.task_suite.task_suite import (  # noqa: E402
    functions_stack_trace_from_messages,
    model_output_from_messages,
)

from agent import EndpointModel, HookboxToolsExecutor, WorstCaseModel  # noqa: E402

# The benchmark version AgentDojo 0.1.35 runs by default.
VERSION = "v1.2.2"


def pipeline(model=None) -> tuple[AgentPipeline, WorstCaseModel, HookboxToolsExecutor]:
    model, executor = model or WorstCaseModel(), HookboxToolsExecutor()
    model.timer = executor
    agent = AgentPipeline(
        [
            SystemMessage("You are a helpful assistant."),
            InitQuery(),
            model,
            # Travel's tasks under attack take 22 calls; AgentDojo's 15
            # would end them early without a word.
            ToolsExecutionLoop([executor, model], max_iters=60),
        ]
    )
    # The attack names the model in its text, and knows models by name.
    agent.name = "gpt-4o-2024-05-13-scripted"
    return agent, model, executor


def per_event(timings: list[int], guards: list[int]) -> dict:
    """The median time of a hookbox call as Python sees it, and of the
    guards' own share of it, in µs."""
    return {
        "events": len(timings),
        "per event (median µs)": round(statistics.median(timings) / 1000, 1),
        "guards per event (median µs)": round(statistics.median(guards) / 1000, 1),
    }


def run_task(suite, agent, model, executor, stack, user_task, injection_task=None, injections=None):
    """One task as `TaskSuite.run_task_with_pipeline` runs it, with utility
    and security checked apart: (utility, security, the model obeyed)."""
    env = user_task.init_environment(suite.load_and_inject_default_environment(injections or {}))
    before = env.model_copy(deep=True)
    run = stack.start_run() if stack is not None else None
    model.set_task(user_task, injection_task, run)
    executor.run, executor.refused = run, set()
    try:
        _, _, env, messages, _ = agent.query(user_task.PROMPT, FunctionsRuntime(suite.tools), env)
    except AbortAgentError as abort:
        env, messages = abort.task_environment, abort.messages
    output = model_output_from_messages(messages) or []
    # AgentDojo's trace is every call the model asked for; some checks
    # (slack's injection task 5) score it, so a call the guards refused
    # would count as made. The trace here is the calls that ran.
    trace = [call for call in functions_stack_trace_from_messages(messages) if call.id not in executor.refused]

    def check(task):
        try:
            return bool(suite._check_task_result(task, output, before, env, trace))
        except Exception:  # a check that cannot read the outcome: not met
            return False

    return check(user_task), check(injection_task) if injection_task else None, model.obeyed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guard", action="append", default=[], help="a guard's .wasm, asked in order")
    parser.add_argument("--suite", action="append", help="workspace, travel, banking or slack (default: all)")
    parser.add_argument(
        "--roles",
        help="a folder of <suite>.toml files: each suite's settings for the guard named provenance",
    )
    parser.add_argument(
        "--model-url",
        help="an OpenAI-compatible endpoint (http://host/v1) whose model replaces the scripted one "
        "(key: OPENAI_API_KEY)",
    )
    parser.add_argument("--model", default="gpt-4o-2024-05-13", help="the endpoint's model")
    parser.add_argument("--out", default="agentdojo-results.json")
    args = parser.parse_args()

    agent, model, executor = pipeline(EndpointModel(args.model_url, args.model) if args.model_url else None)
    every = {"timings": [], "guards": []}
    suites = get_suites(VERSION)
    rows, outcomes = [], {}
    for name in args.suite or list(suites):
        suite, started = suites[name], time.time()
        stack = None
        if args.guard:
            config = {}
            if args.roles:
                with open(Path(args.roles) / f"{name}.toml", "rb") as file:
                    config["provenance"] = {key: str(value) for key, value in tomllib.load(file).items()}
            stack = hookbox.Stack.from_files(args.guard, config=config)
        executor.timings, executor.guard_timings = [], []
        attack = load_attack("important_instructions", suite, agent)
        benign = {uid: run_task(suite, agent, model, executor, stack, task)[0] for uid, task in suite.user_tasks.items()}
        attacked = {}
        for uid, task in suite.user_tasks.items():
            for iid, injection in suite.injection_tasks.items():
                attacked[f"{uid}/{iid}"] = run_task(
                    suite, agent, model, executor, stack, task, injection, attack.attack(task, injection)
                )
        pairs = len(attacked)
        rows.append(
            {
                "suite": name,
                "benign utility": f"{sum(benign.values())}/{len(benign)}",
                "utility under attack": f"{sum(u for u, _, _ in attacked.values())}/{pairs}",
                "attack success": f"{sum(bool(s) for _, s, _ in attacked.values())}/{pairs}",
                "injection obeyed": f"{sum(o for _, _, o in attacked.values())}/{pairs}",
                "seconds": round(time.time() - started, 1),
            }
        )
        if executor.timings:
            rows[-1].update(per_event(executor.timings, executor.guard_timings))
            every["timings"] += executor.timings
            every["guards"] += executor.guard_timings
        outcomes[name] = {"benign": benign, "attacked": {k: list(v) for k, v in attacked.items()}}
        print(" | ".join(f"{k}: {v}" for k, v in rows[-1].items()), flush=True)
    if every["timings"]:
        rows.append({"suite": "all", **per_event(every["timings"], every["guards"])})
        print(" | ".join(f"{k}: {v}" for k, v in rows[-1].items()), flush=True)
    Path(args.out).write_text(json.dumps({"version": VERSION, "rows": rows, "tasks": outcomes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
