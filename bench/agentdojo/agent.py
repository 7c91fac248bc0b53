"""The two pipeline elements bench/agentdojo puts in AgentDojo's pipeline:
a scripted worst-case model and a tools executor that asks hookbox.

`WorstCaseModel` plays the user task's ground truth, one call a turn, and
as soon as a tool result the model reads holds the attack's marker, plays
the injection task's ground truth first and then the rest of the user's:
a model that always obeys an injection. No network, no key. Its answer is
asked of hookbox as a `completion-response` before the user reads it. The guard
never sees the marker; the model sees what the guard let it read.

`HookboxToolsExecutor` is AgentDojo's `ToolsExecutor` with every call asked
as a `tool-call` event (run as the guards rewrote it, or answered with their
reason instead) and every result as a `tool-result` event (what the model
reads is what they kept). A run the guards end raises `AbortAgentError`,
AgentDojo's own way for a defence to stop an agent.
"""
from __future__ import annotations

import os
import time
from ast import literal_eval
from collections.abc import Sequence

import hookbox
import yaml
from agentdojo.agent_pipeline import AbortAgentError, BasePipelineElement, ToolsExecutor
from agentdojo.agent_pipeline.tool_execution import is_string_list, tool_result_to_str
from agentdojo.functions_runtime import EmptyEnv, Env, FunctionCall, FunctionsRuntime
from agentdojo.types import (
    ChatAssistantMessage,
    ChatMessage,
    ChatToolResultMessage,
    get_text_content_as_str,
    text_content_block_from_string,
)
from pydantic_core import to_jsonable_python

# What `important_instructions` (the attack used) writes around its goal.
MARKER = "<INFORMATION>"


class WorstCaseModel(BasePipelineElement):
    """A model that solves the user task and obeys any injection it reads."""

    name = "gpt-4o-2024-05-13"

    def __init__(self) -> None:
        self.run: hookbox.Run | None = None
        # Times each hookbox call (the executor's, shared in `pipeline`).
        self.timer = None

    def set_task(self, user_task, injection_task=None, run: hookbox.Run | None = None) -> None:
        self.user_task, self.injection_task, self.run = user_task, injection_task, run
        self.plan: list[FunctionCall] | None = None

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = EmptyEnv(),
        messages: Sequence[ChatMessage] = [],
        extra_args: dict = {},
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict]:
        # AgentDojo retries a task whose output is None from its first
        # messages: start the plan again then.
        if self.plan is None or len(messages) <= 2:
            self.plan = list(self.user_task.ground_truth(env.model_copy(deep=True)))
            self.injected_plan = (
                list(self.injection_task.ground_truth(env.model_copy(deep=True)))
                if self.injection_task is not None
                else []
            )
            self.read, self.obeyed, self.calls = 0, False, 0
        if self.run is not None:
            # Each turn is a model call, the user's prompt the first.
            ask_turn(self.timer, query, self.calls + 1, messages, env)
        if self.injection_task is not None and not self.obeyed:
            if any(
                m["role"] == "tool" and MARKER in get_text_content_as_str(m["content"])
                for m in messages[self.read :]
            ):
                self.obeyed = True
                self.plan = self.injected_plan + self.plan
        self.read = len(messages)
        if self.plan:
            call = self.plan.pop(0)
            self.calls += 1
            # Copied: the executor converts arguments in place.
            calls = [FunctionCall(function=call.function, args=dict(call.args), id=f"call_{self.calls}")]
            answer = ""
        else:
            calls = None
            answer = self.user_task.GROUND_TRUTH_OUTPUT
            if self.obeyed and self.injection_task.GROUND_TRUTH_OUTPUT:
                answer += "\n" + self.injection_task.GROUND_TRUTH_OUTPUT
        if calls is None and self.run is not None:
            ask_answer(self.timer, query, answer, messages, env)
        message = ChatAssistantMessage(
            role="assistant", content=[text_content_block_from_string(answer)], tool_calls=calls
        )
        return query, runtime, env, [*messages, message], extra_args


class EndpointModel(BasePipelineElement):
    """A real model behind any OpenAI-compatible endpoint (AgentDojo's own
    `OpenAILLM`), each turn asked of hookbox as the scripted model's is.
    Whether it obeyed an injection is not known: `obeyed` stays False."""

    name = "gpt-4o-2024-05-13"

    def __init__(self, url: str, model: str) -> None:
        import openai
        from agentdojo.agent_pipeline import OpenAILLM

        client = openai.OpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
        self.llm = OpenAILLM(client, model)
        self.run: hookbox.Run | None = None
        self.timer = None
        self.obeyed = False

    def set_task(self, user_task, injection_task=None, run: hookbox.Run | None = None) -> None:
        self.run, self.turn = run, 0

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = EmptyEnv(),
        messages: Sequence[ChatMessage] = [],
        extra_args: dict = {},
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict]:
        if self.run is not None:
            self.turn += 1
            ask_turn(self.timer, query, self.turn, messages, env)
        query, runtime, env, answered, extra_args = self.llm.query(query, runtime, env, messages, extra_args)
        if self.run is not None and not answered[-1]["tool_calls"]:
            ask_answer(self.timer, query, get_text_content_as_str(answered[-1]["content"] or []), messages, env)
        return query, runtime, env, answered, extra_args


def ask_turn(timer, prompt: str, turn: int, messages, env) -> None:
    """Asks hookbox about a model call (a `completion-call`, the user's
    prompt the first); a stop raises AgentDojo's `AbortAgentError`."""
    try:
        timer.ask("completion_call", prompt, [], turn)
    except hookbox.Stopped as stop:
        raise AbortAgentError(f"hookbox ended the run: {stop}", list(messages), env) from stop


def ask_answer(timer, prompt: str, answer: str, messages, env) -> None:
    """Asks hookbox about the model's answer (a `completion-response`)
    before the user reads it; a stop raises AgentDojo's `AbortAgentError`."""
    try:
        decision = timer.ask("send", {"event": "completion-response", "prompt": prompt, "response": {"content": answer}})
        stopped = decision.flow == "terminate" and decision.reason
    except hookbox.Stopped as stop:
        stopped = str(stop)
    if stopped:
        raise AbortAgentError(f"hookbox ended the run: {stopped}", list(messages), env)


def as_text(value) -> str:
    """A result the guards replaced, in its JSON form, as AgentDojo writes
    results for the model (YAML); text stays text."""
    return value if isinstance(value, str) else yaml.safe_dump(value).strip()


class HookboxToolsExecutor(ToolsExecutor):
    """AgentDojo's tools executor, each call and result asked of hookbox."""

    def __init__(self) -> None:
        super().__init__()
        self.run: hookbox.Run | None = None
        # Nanoseconds of each hookbox call as Python sees it (the door, the
        # guards), and of the guards' own share (`Run.guards_ns`).
        self.timings: list[int] = []
        self.guard_timings: list[int] = []
        # The ids of the calls the guards refused this task: they never ran.
        self.refused: set[str] = set()

    def ask(self, method: str, *args, **kwargs):
        """`self.run.<method>(...)`, timed."""
        guards, start = self.run.guards_ns, time.perf_counter_ns()
        try:
            return getattr(self.run, method)(*args, **kwargs)
        finally:
            self.timings.append(time.perf_counter_ns() - start)
            self.guard_timings.append(self.run.guards_ns - guards)

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = EmptyEnv(),
        messages: Sequence[ChatMessage] = [],
        extra_args: dict = {},
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict]:
        if self.run is None or not messages or messages[-1]["role"] != "assistant":
            return super().query(query, runtime, env, messages, extra_args)
        calls = messages[-1]["tool_calls"] or []
        known = {tool.name for tool in runtime.functions.values()}
        results = []
        for call in calls:
            if call.function not in known:
                # AgentDojo's own answer to a call of no tool.
                _, _, _, answered, _ = super().query(
                    query, runtime, env, [{**messages[-1], "tool_calls": [call]}], extra_args
                )
                results.extend(answered[1:])
                continue
            for name, value in call.args.items():
                if isinstance(value, str) and is_string_list(value):
                    call.args[name] = literal_eval(value)
            try:
                verdict = self.ask("tool_call", call.function, dict(call.args), tool_call_id=call.id)
                if verdict.kind != "run":
                    self.refused.add(call.id)
                    results.append(self._answer(call, "", verdict.reason or "The call was refused."))
                    continue
                args = verdict.args_dict() if verdict.rewritten else call.args
                value, error = runtime.run_function(env, call.function, args)
                kept = self.ask(
                    "tool_result",
                    call.function,
                    dict(args),
                    to_jsonable_python(value),
                    tool_call_id=call.id,
                )
            except hookbox.Stopped as stop:
                raise AbortAgentError(f"hookbox ended the run: {stop}", [*messages, *results], env) from stop
            text = tool_result_to_str(value) if kept.kind != "replace" else as_text(kept.value)
            results.append(self._answer(call, text, error))
        return query, runtime, env, [*messages, *results], extra_args

    @staticmethod
    def _answer(call: FunctionCall, text: str, error: str | None) -> ChatToolResultMessage:
        return ChatToolResultMessage(
            role="tool",
            content=[text_content_block_from_string(text)],
            tool_call_id=call.id,
            tool_call=call,
            error=error,
        )
