"""An agent loop with memd around the model, over memd's HTTP API.

memd does not read conversations: the agent writes its facts itself, one
self-contained sentence each (mem0 extracts facts from messages with an
LLM call; memd leaves that to the agent, which already has the model and
the context). Each turn here:

1. reads MEMORY.md (``core``) and searches memory for the user's message;
2. puts both in the system prompt;
3. asks the model, which answers and ends with a ``REMEMBER:`` line per new
   fact about the user;
4. adds those facts to memd (the day's archive) and shows the answer.

Consolidation (merging facts into entries, MEMORY.md) runs in the daemon
on its own schedule; nothing here waits for it. Any OpenAI-compatible chat
endpoint works, a small local model included (no tool calling needed).

    memd serve &                                   # the daemon, on 127.0.0.1:7437
    LLM_BASE_URL=http://127.0.0.1:8080/v1 python examples/agent_loop.py

Environment: ``MEMD_URL`` (default the daemon's address), ``LLM_BASE_URL``,
``LLM_MODEL``, ``LLM_API_KEY`` (sent as a bearer token when set),
``SESSION`` (the session the facts are filed under).
"""

from __future__ import annotations

import os
import sys

import httpx

from memd import Client

SYSTEM = """You are a helpful assistant with a long-term memory of the user.

What you always remember:
{core}

What memory found for this message (score, day, text):
{recalled}

Answer the user. Then, if their message told you something new and lasting
about them (a preference, a fact of their life, a change to something above),
end with one line per fact, each a self-contained sentence:
REMEMBER: <the fact>"""


def split_reply(reply: str) -> tuple[str, list[str]]:
    """The answer, and the facts of its ``REMEMBER:`` lines."""
    answer, facts = [], []
    for line in reply.splitlines():
        if line.strip().upper().startswith("REMEMBER:"):
            fact = line.split(":", 1)[1].strip()
            if fact:
                facts.append(fact)
        else:
            answer.append(line)
    return "\n".join(answer).strip(), facts


def turn(memory: Client, llm: httpx.Client, model: str, session: str, message: str) -> str:
    """One turn: recall, ask, remember. Returns the answer."""
    hits = memory.search(message, k=5, exclude_core=True).hits
    recalled = "\n".join(f"{h.score:.2f} {h.day} {h.text}" for h in hits) or "(nothing)"
    system = SYSTEM.format(core=memory.core(compact=True).strip() or "(nothing yet)", recalled=recalled)
    reply = llm.post(
        "/chat/completions",
        json={
            "model": model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": message}],
            "temperature": 0,
        },
    )
    reply.raise_for_status()
    answer, facts = split_reply(reply.json()["choices"][0]["message"]["content"] or "")
    for fact in facts:
        added = memory.add(fact, session=session)
        print(f"  (remembered {added.ids[0]}: {fact})", file=sys.stderr)
    return answer


def main() -> None:
    key = os.environ.get("LLM_API_KEY")
    llm = httpx.Client(
        base_url=os.environ.get("LLM_BASE_URL", "http://127.0.0.1:8080/v1"),
        headers={"Authorization": f"Bearer {key}"} if key else {},
        timeout=300,
    )
    model = os.environ.get("LLM_MODEL", "local")
    session = os.environ.get("SESSION", "chat")
    with Client(os.environ.get("MEMD_URL", "http://127.0.0.1:7437")) as memory:
        for message in sys.stdin:
            if message.strip():
                print(turn(memory, llm, model, session, message.strip()), flush=True)


if __name__ == "__main__":
    main()
