"""An agent loop with memd as the model's tools, over MCP.

The host starts ``memd mcp`` (stdio), gives the model memd's tools as
function tools, and runs the model's calls until it answers. The model
itself decides what to ``remember`` (one self-contained sentence per fact,
with ``supersedes`` when a fact replaces one it was shown) and when to
``recall``; MEMORY.md, memd's ``core_memory``, goes into the system prompt
at the start of the conversation. This is what an MCP client such as
Claude Code or Cursor does with ``memd mcp``, written out.

    LLM_BASE_URL=http://127.0.0.1:8080/v1 MEMD_DIR=~/agent-memory \\
        python examples/agent_loop_mcp.py

Environment: ``MEMD_BIN`` (default ``memd`` on PATH), ``MEMD_DIR`` (the
memory), ``LLM_BASE_URL``, ``LLM_MODEL``, ``LLM_API_KEY``. It needs a
model that calls tools, and the ``mcp`` package (``pip install mcp``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SYSTEM = """You are a helpful assistant with a long-term memory (the memd tools).
Remember lasting facts about the user as they come up, and recall before
answering a question about them. What you always remember:
{core}"""

# Tool calls one user message may lead to before the host stops the model.
MAX_STEPS = 8


def as_function(tool) -> dict:
    """An MCP tool as an OpenAI-style function tool (read as the protocol's
    JSON, so that the SDK's 1.x and 2.x field names both work)."""
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {
        "type": "function",
        "function": {"name": wire["name"], "description": wire.get("description", ""), "parameters": wire["inputSchema"]},
    }


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def turn(memd: ClientSession, llm: httpx.AsyncClient, model: str, tools: list, messages: list) -> str:
    """Run the model on `messages` (extended in place) until it answers."""
    for _ in range(MAX_STEPS):
        reply = await llm.post(
            "/chat/completions", json={"model": model, "messages": messages, "tools": tools, "temperature": 0}
        )
        reply.raise_for_status()
        message = reply.json()["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return message.get("content") or ""
        for call in calls:
            args = json.loads(call["function"]["arguments"] or "{}")
            result = await memd.call_tool(call["function"]["name"], args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text_of(result)})
    return "(stopped: too many tool calls)"


async def main() -> None:
    server = StdioServerParameters(command=os.environ.get("MEMD_BIN", "memd"), args=["mcp"], env=dict(os.environ))
    key = os.environ.get("LLM_API_KEY")
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write) as memd,
        httpx.AsyncClient(
            base_url=os.environ.get("LLM_BASE_URL", "http://127.0.0.1:8080/v1"),
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=300,
        ) as llm,
    ):
        await memd.initialize()
        tools = [as_function(t) for t in (await memd.list_tools()).tools]
        core = text_of(await memd.call_tool("core_memory", {}))
        messages = [{"role": "system", "content": SYSTEM.format(core=core.strip() or "(nothing yet)")}]
        model = os.environ.get("LLM_MODEL", "local")
        for line in sys.stdin:
            if line.strip():
                messages.append({"role": "user", "content": line.strip()})
                print(await turn(memd, llm, model, tools, messages), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
