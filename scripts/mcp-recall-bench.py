"""Recall latency of `memd mcp` seen by a real MCP client (the official Python
SDK, PyPI package `mcp`), for BENCHMARKS.md.

usage: python3 scripts/mcp-recall-bench.py MEMD_BINARY DIR [CALLS]
  DIR: a memory directory (no daemon running in it, so the server answers
  from its own index). Prints one JSON line: recall p50/p99 in ms over CALLS
  calls (default 100), after one warm-up call.
"""
import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERIES = ["what coffee does the user like", "where does the sister live",
           "allergies", "weekend plans", "work projects"]


async def main(binary, directory, calls):
    params = StdioServerParameters(command=binary, args=["--dir", directory, "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("recall", {"query": "warm up", "k": 8})
            times = []
            for i in range(calls):
                t = time.perf_counter()
                r = await session.call_tool("recall", {"query": QUERIES[i % len(QUERIES)], "k": 8})
                times.append((time.perf_counter() - t) * 1000)
                assert not getattr(r, "is_error", getattr(r, "isError", False)), r
    times.sort()
    print(json.dumps({"binary": binary, "calls": calls,
                      "recall_p50_ms": round(times[len(times) // 2], 2),
                      "recall_p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100))
