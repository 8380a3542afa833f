"""The OpenAI Agents SDK tools over a real daemon: each invoked as the SDK
invokes it (``on_invoke_tool`` with a ``ToolContext``, no model), and their
schemas held to memd's MCP tools of the same names."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import FunctionTool
from agents.tool_context import ToolContext

from memd import AsyncClient, Client
from memd.agents import memory_tools

from .conftest import Daemon, init, memd_bin, memd_env

NAMES = ["remember", "recall", "forget", "erase", "core_memory"]


@pytest.fixture
async def tools(flavored: Daemon) -> AsyncIterator[dict[str, FunctionTool]]:
    """The tools, over an ``AsyncClient`` or (in a worker thread) a ``Client``."""
    if flavored.flavor == "async":
        async with AsyncClient(flavored.url) as client:
            yield {t.name: t for t in memory_tools(client)}
    else:
        with Client(flavored.url) as blocking:
            yield {t.name: t for t in memory_tools(blocking)}


@pytest.fixture
def memd(flavored: Daemon) -> Iterator[Client]:
    with Client(flavored.url) as c:
        yield c


async def invoke(tool: FunctionTool, **arguments: Any) -> str:
    """Call a tool as the SDK does after a model asked for it."""
    raw = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=raw)
    return str(await tool.on_invoke_tool(context, raw))


async def test_remember_recall_forget(tools: dict[str, FunctionTool], memd: Client) -> None:
    said = await invoke(tools["remember"], text="The user's sister is called Ines", session="chat-1")
    [fact_id] = re.findall(r"^remembered as (\S+)$", said, re.MULTILINE)
    [fact] = memd.candidates("sister is called Ines")
    assert (fact.kind, fact.id) == ("fact", fact_id)
    found = await invoke(tools["recall"], query="what is the sister's name")
    day = fact_id.split("#")[0]
    assert found.splitlines()[0] == f"- [{fact_id}] The user's sister is called Ines ({day})"
    gone = await invoke(tools["forget"], id=fact_id)
    assert gone == f"forgot fact {fact_id}: The user's sister is called Ines"
    assert memd.candidates("sister is called Ines") == []
    assert "Ines" not in await invoke(tools["recall"], query="sister", min_score=0)


async def test_erase_takes_the_text_out_as_memds_mcp_tool_does(tools: dict[str, FunctionTool], memd: Client) -> None:
    said = await invoke(tools["remember"], text="The alarm code is OSPREY-2291")
    [fact_id] = re.findall(r"^remembered as (\S+)$", said, re.MULTILINE)
    gone = await invoke(tools["erase"], id=fact_id)
    assert gone == f"erased {fact_id}: its text is out of every file (entries: 0, facts: 1)"
    assert "OSPREY" not in await invoke(tools["recall"], query="alarm code", min_score=0)
    again = await invoke(tools["remember"], text="The alarm code is OSPREY-2291")
    assert again.startswith("not remembered as ") and "the user erased this text" in again, again
    assert memd.candidates("OSPREY") == []


def test_without_the_sdk_the_import_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, "memd.agents")
    monkeypatch.setitem(sys.modules, "agents", None)
    with pytest.raises(ImportError, match=r"pip install 'memd-client\[agents\]'"):
        importlib.import_module("memd.agents")
    monkeypatch.delitem(sys.modules, "memd.langgraph", raising=False)
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)
    with pytest.raises(ImportError, match=r"pip install 'memd-client\[langgraph\]'"):
        importlib.import_module("memd.langgraph")


async def test_remember_a_batch_and_similar_entries(tools: dict[str, FunctionTool], memd: Client) -> None:
    await invoke(tools["remember"], text="The user plays chess online every evening")
    memd.consolidate(force=True)
    [entry] = [e for e in memd.entries() if "chess" in e.text]
    said = await invoke(
        tools["remember"],
        texts=["The user plays chess online each evening", "The user is 41 years old"],
        category="bio",
    )
    lines = said.splitlines()
    assert len([line for line in lines if line.startswith("remembered as ")]) == 2
    assert f"similar entry {entry.id}: {entry.text}" in lines
    assert lines[2].startswith("if this fact replaces one of these, remember it again with supersedes")
    assert memd.search("how old is the user", category="bio").hits[0].text == "The user is 41 years old"


async def test_supersedes(tools: dict[str, FunctionTool], memd: Client) -> None:
    await invoke(tools["remember"], text="The user works at a bakery")
    memd.consolidate(force=True)
    [entry] = [e for e in memd.entries() if "bakery" in e.text]
    await invoke(tools["remember"], text="The user now works at a library", supersedes=[entry.id])
    memd.consolidate(force=True)
    text = memd.get_entry(entry.id).text
    assert text.startswith("The user now works at a library (since "), text
    assert "; previously: The user works at a bakery, since " in text


async def test_core_memory(tools: dict[str, FunctionTool], memd: Client) -> None:
    await invoke(tools["remember"], text="The user takes their coffee black")
    memd.consolidate(force=True)
    [entry] = [e for e in memd.entries() if "coffee" in e.text]
    core = await invoke(tools["core_memory"])
    assert core == memd.core(compact=True)
    assert f"- The user takes their coffee black · {entry.updated} [{entry.id}]" in core.splitlines()
    assert "<!--" not in core
    unseen = await invoke(tools["recall"], query="coffee", exclude_core=True, min_score=0)
    assert entry.id not in unseen


async def test_failures_are_answers_the_model_reads(tools: dict[str, FunctionTool]) -> None:
    said = await invoke(tools["forget"], id="e-00000000")
    assert said.startswith("memd: no entry or archive fact has the id")
    said = await invoke(tools["recall"], query="x", k=0)
    assert said.startswith("memd: k is how many hits")
    assert await invoke(tools["recall"], query="zebra crossings in Lima", min_score=0.99) == "nothing found"


async def test_the_tools_are_memds_mcp_tools(tools: dict[str, FunctionTool], tmp_path: Any) -> None:
    assert list(tools) == NAMES
    mcp = mcp_tools(init(tmp_path / "memory"))
    for name, tool in tools.items():
        schema = tool.params_json_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["properties"]) == set(mcp[name]["inputSchema"].get("properties") or {}), name
        assert schema["required"] == list(schema["properties"])  # strict: every one, nullable
        assert tool.description.split(".")[0] == mcp[name]["description"].split(".")[0]
    assert tools["recall"].params_json_schema["properties"]["query"]["type"] == "string"
    assert tools["forget"].params_json_schema["properties"]["id"]["type"] == "string"


def mcp_tools(directory: Any) -> dict[str, dict[str, Any]]:
    """``tools/list`` of ``memd mcp``, in two lines of JSON-RPC."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    out = subprocess.run(
        [memd_bin(), "mcp"],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        env=memd_env(MEMD_DIR=str(directory)),
        timeout=60,
        check=True,
    ).stdout
    [listed] = [json.loads(line) for line in out.splitlines() if json.loads(line).get("id") == 2]
    return {t["name"]: t for t in listed["result"]["tools"]}
