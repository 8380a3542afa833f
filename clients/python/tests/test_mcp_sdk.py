"""memd's MCP server (``memd mcp``, stdio) through the official ``mcp``
Python SDK: the handshake, the tools and their annotations, a call of each
tool, the ``use_memory`` prompt and the ``MEMORY.md`` resource, and the
tools' structured output (an ``outputSchema`` per tool, and each result's
``structuredContent`` fitting it).

The SDK's models are read as JSON (``wire``), with the protocol's own
field names, so the tests hold for the SDK's 1.x and 2.x alike.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from .conftest import init, memd_bin, memd_env

TOOLS = [
    "remember",
    "recall",
    "forget",
    "erase",
    "core_memory",
    "list_entries",
    "get_entry",
    "edit_entry",
    "review_items",
    "review",
    "consolidate",
]

HINTS = {  # (readOnlyHint, destructiveHint, idempotentHint), as src/mcp/tools.rs sets them
    "remember": (False, False, False),
    "recall": (True, False, True),
    "forget": (False, True, True),
    "erase": (False, True, True),
    "core_memory": (True, False, True),
    "list_entries": (True, False, True),
    "get_entry": (True, False, True),
    "edit_entry": (False, True, True),
    "review_items": (True, False, True),
    "review": (False, True, False),
    "consolidate": (False, True, False),
}


def wire(model: Any) -> Any:
    """An SDK object as the protocol's JSON."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


@contextlib.asynccontextmanager
async def connect(memory: Path) -> AsyncIterator[ClientSession]:
    """An initialized session with ``memd mcp`` over ``memory``."""
    server = StdioServerParameters(command=memd_bin(), args=["mcp"], env=memd_env(MEMD_DIR=str(memory)))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    return init(tmp_path / "memory")


async def listed_tools(memory: Path) -> list[dict[str, Any]]:
    """``tools/list``, as JSON."""
    async with connect(memory) as session:
        return [wire(t) for t in (await session.list_tools()).tools]


class Called:
    """Tool calls and their results, as JSON."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.results: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = wire(await self.session.call_tool(name, arguments))
        self.results.append((name, result))
        return result

    async def consolidated(self, text: str) -> None:
        """Remember ``text`` and consolidate it into an entry."""
        await self.text("remember", text=text)
        await self.text("consolidate", force=True)

    async def text(self, name: str, **arguments: Any) -> str:
        result = await self(name, **arguments)
        assert result.get("isError") is not True, result
        [content] = result["content"]
        assert content["type"] == "text"
        return str(content["text"])


async def every_tool(called: Called) -> str:
    """Call each tool once, on real data; the id of the entry edited."""
    said = await called.text("remember", texts=["The user rows on the Thames", "The user is a night owl"], category="bio")
    assert len(re.findall(r"^remembered as \S+#\S+$", said, re.MULTILINE)) == 2
    found = await called.text("recall", query="rowing on the Thames")
    assert re.match(r"- \[\S+#\S+\] The user rows on the Thames \(\d{4}-\d\d-\d\d\)$", found.splitlines()[0])
    run = await called.text("consolidate", force=True)
    assert re.match(r"run r-\S+: 2 pending facts -> 2 added", run), run
    listed = await called.text("list_entries", category="bio")
    ids = re.findall(r"^- \[(e-[0-9a-f]+)\] ", listed, re.MULTILINE)
    assert len(ids) == 2 and "The user rows on the Thames" in listed
    rowing = next(i for i in ids if re.search(rf"\[{i}\] The user rows", listed))
    one = await called.text("get_entry", id=rowing)
    assert one.startswith(f"- [{rowing}] The user rows on the Thames") and "categories: bio" in one
    edited = await called.text("edit_entry", id=rowing, text="The user rows on the Cam", pinned=True)
    assert re.match(rf"edited \(run r-\S+\)\n- \[{rowing}\] The user rows on the Cam \(updated \S+; pinned\)", edited)
    core = await called.text("core_memory")
    assert re.search(rf"^- The user rows on the Cam · \S+ \[{rowing}\]$", core, re.MULTILINE), core
    night = next(i for i in ids if i != rowing)
    assert await called.text("forget", id=night) == f"forgot entry {night}: The user is a night owl"
    erased = await called.text("erase", id=night)
    assert erased == f"erased {night}: its text is out of every file (entries: 1, facts: 1)"
    assert await called.text("review_items") == "nothing to review"
    reviewed = await called.text("review", action="apply")
    assert reviewed.startswith("REVIEW.md changed for 0 proposals; carried out: 0 accepted"), reviewed
    return rowing


async def test_initialize(memory: Path) -> None:
    server = StdioServerParameters(command=memd_bin(), args=["mcp"], env=memd_env(MEMD_DIR=str(memory)))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        result = wire(await session.initialize())
    assert result["serverInfo"]["name"] == "memd"
    assert {"tools", "resources", "prompts"} <= set(result["capabilities"])
    assert "core_memory" in result["instructions"]


async def test_the_tools_and_their_annotations(memory: Path) -> None:
    tools = await listed_tools(memory)
    assert [t["name"] for t in tools] == TOOLS
    for tool in tools:
        hints = tool["annotations"]
        wanted = HINTS[tool["name"]]
        assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"]) == wanted
        assert hints["openWorldHint"] is False
        assert tool["inputSchema"]["type"] == "object"
        assert tool["description"]
    schemas = {t["name"]: t["inputSchema"] for t in tools}
    assert "texts" in schemas["remember"]["properties"] and "similar" not in schemas["remember"]["properties"]
    assert "wait" not in schemas["recall"]["properties"] and "query" in schemas["recall"]["properties"]


async def test_every_input_schema_is_json_schema(memory: Path) -> None:
    tools = await listed_tools(memory)
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])


async def test_each_tool(memory: Path) -> None:
    async with connect(memory) as session:
        called = Called(session)
        entry = await every_tool(called)
        gone = await called("get_entry", id="e-00000000")
        assert gone["isError"] is True
        assert "no entry" in gone["content"][0]["text"]
        assert (await called.text("get_entry", id=entry)).startswith(f"- [{entry}] The user rows on the Cam")


async def test_the_use_memory_prompt(memory: Path) -> None:
    async with connect(memory) as session:
        called = Called(session)
        await called.consolidated("The user's name is Wren")
        prompts = [wire(p) for p in (await session.list_prompts()).prompts]
        assert [p["name"] for p in prompts] == ["use_memory"]
        prompt = wire(await session.get_prompt("use_memory"))
    [message] = prompt["messages"]
    assert message["role"] == "user"
    assert "The user's name is Wren" in message["content"]["text"]
    assert "{{core}}" not in message["content"]["text"]


async def test_the_memory_resource(memory: Path) -> None:
    async with connect(memory) as session:
        called = Called(session)
        await called.consolidated("The user keeps a sourdough starter")
        resources = [wire(r) for r in (await session.list_resources()).resources]
        assert [(r["uri"], r["mimeType"]) for r in resources] == [("memd://MEMORY.md", "text/markdown")]
        read = wire(await session.read_resource("memd://MEMORY.md"))
    [content] = read["contents"]
    assert content["text"] == (memory / "MEMORY.md").read_text()
    assert "The user keeps a sourdough starter" in content["text"]


# --- structured output ------------------------------------------------------


async def test_every_tool_has_an_output_schema(memory: Path) -> None:
    tools = await listed_tools(memory)
    missing = [t["name"] for t in tools if t.get("outputSchema", {}).get("type") != "object"]
    assert missing == []
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])


async def test_tool_results_carry_structured_content_that_fits_the_schema(memory: Path) -> None:
    async with connect(memory) as session:
        schemas = {t.name: wire(t).get("outputSchema") for t in (await session.list_tools()).tools}
        called = Called(session)
        await every_tool(called)  # the SDK checks each result against its tool's schema too
    assert {name for name, _ in called.results} == set(TOOLS)
    for name, result in called.results:
        assert schemas[name] is not None, name
        structured = result.get("structuredContent")
        assert isinstance(structured, dict), name
        jsonschema.validate(structured, schemas[name])
        assert any(c["type"] == "text" and c["text"] for c in result["content"]), name
    shapes = {name: result["structuredContent"] for name, result in called.results}
    assert "The user rows on the Thames" in [h["text"] for h in shapes["recall"]["hits"]]
    assert len(shapes["list_entries"]["entries"]) == 2
    assert "The user rows on the Cam" in shapes["core_memory"]["text"]
    assert shapes["get_entry"]["text"] == "The user rows on the Thames"
    assert shapes["forget"]["text"] == "The user is a night owl"
    assert len(shapes["erase"]["facts"]) == 1
