"""The agent-loop examples (``examples/``), run against a real memd and a
scripted OpenAI-compatible chat endpoint on 127.0.0.1: what the model is
told and what memory holds after each turn.

The scripted model plays a user's two turns: it is told "my sister is
called Ana" and writes that fact (a ``REMEMBER:`` line, or a ``remember``
tool call over MCP); asked "what is my sister called?" it answers only if
what memd gave it says Ana, so the test fails if the fact was not written
or not found.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from memd import Client

from .conftest import init, memd_bin, memd_env, serving

REPO = Path(__file__).resolve().parents[3]
FACT = "The user's sister is called Ana"


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def llm() -> Iterator[tuple[str, list[dict], Callable]]:
    """A chat endpoint whose reply `answer(request)` decides; every request
    is kept. Yields (base URL, requests, a setter for `answer`)."""
    requests: list[dict] = []
    answer: list[Callable[[dict], dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            message = answer[0](body)
            data = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", requests, lambda f: answer.insert(0, f)
    finally:
        server.shutdown()


def test_the_http_agent_loop_writes_what_the_model_learned_and_gives_it_back_next_turn(tmp_path, llm):
    url, requests, answer_with = llm
    agent = load("agent_loop")

    def model(req: dict) -> dict:
        system, user = req["messages"][0]["content"], req["messages"][1]["content"]
        if "sister is called Ana" in user:
            return {"role": "assistant", "content": f"How nice!\nREMEMBER: {FACT}"}
        named = "Ana" if "sister is called Ana" in system else "I don't know"
        return {"role": "assistant", "content": f"Your sister: {named}."}

    answer_with(model)
    with serving(init(tmp_path / "memory")) as d, Client(d.url) as memory, httpx.Client(base_url=url) as chat:
        first = agent.turn(memory, chat, "m", "s1", "My sister is called Ana")
        assert first == "How nice!", "the REMEMBER line is not shown to the user"
        found = memory.search("sister", k=5, min_score=0).hits
        assert [h.text for h in found] == [FACT], found
        second = agent.turn(memory, chat, "m", "s1", "What is my sister called?")
    assert second == "Your sister: Ana.", requests[-1]["messages"][0]["content"]
    assert "What you always remember" in requests[-1]["messages"][0]["content"]


def test_the_mcp_agent_loop_lets_the_model_remember_and_recall_through_memds_tools(tmp_path, llm):
    url, requests, answer_with = llm
    memory = init(tmp_path / "memory")

    def call(name: str, args: dict) -> dict:
        fn = {"name": name, "arguments": json.dumps(args)}
        return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{len(requests)}", "type": "function", "function": fn}]}

    def model(req: dict) -> dict:
        last = req["messages"][-1]
        users = [m["content"] for m in req["messages"] if m["role"] == "user"]
        if last["role"] == "user" and "called Ana" in last["content"]:
            return call("remember", {"text": FACT, "session": "s1"})
        if last["role"] == "user":
            return call("recall", {"query": "sister's name", "min_score": 0})
        if len(users) == 1:
            return {"role": "assistant", "content": "Noted."}
        named = "Ana" if "sister is called Ana" in last["content"] else "I don't know"
        return {"role": "assistant", "content": f"Your sister: {named}."}

    answer_with(model)
    env = memd_env(MEMD_BIN=memd_bin(), MEMD_DIR=str(memory), LLM_BASE_URL=url)
    run = subprocess.run(
        [sys.executable, str(REPO / "examples/agent_loop_mcp.py")],
        input="My sister is called Ana\nWhat is my sister called?\n",
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["Noted.", "Your sister: Ana."], (run.stdout, run.stderr)
    tools = {t["function"]["name"] for t in requests[0]["tools"]}
    assert {"remember", "recall", "forget", "core_memory"} <= tools, tools
    archive = "".join(p.read_text() for p in (memory / "archive").glob("*.md"))
    assert FACT in archive
