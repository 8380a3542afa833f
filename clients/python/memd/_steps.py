"""Running a sequence of calls written once for both clients.

A step function is a generator that yields :class:`~memd.Call` objects and
is sent each reply (or thrown the :class:`~memd.MemdError` it raised); its
return value is the result. :func:`run` drives one with a :class:`Client`,
:func:`arun` with an :class:`AsyncClient`, so logic that needs several
requests (the LangGraph store's) is not written twice.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._api import Call
from .client import AsyncClient, Client
from .errors import MemdError

T = TypeVar("T")

Steps = Generator[Call[Any], Any, T]


@dataclass
class _Done(Generic[T]):
    value: T


def _advance(steps: Steps[T], reply: Any, error: MemdError | None) -> Call[Any] | _Done[T]:
    """Give the steps a reply (or an error): the next call, or the result."""
    try:
        return steps.send(reply) if error is None else steps.throw(error)
    except StopIteration as done:
        return _Done(done.value)


def run(client: Client, steps: Steps[T]) -> T:
    """Run ``steps`` with a blocking client."""
    step = _advance(steps, None, None)
    while isinstance(step, Call):
        try:
            reply, error = client.send(step), None
        except MemdError as e:
            reply, error = None, e
        step = _advance(steps, reply, error)
    return step.value


async def arun(client: AsyncClient, steps: Steps[T]) -> T:
    """Run ``steps`` with an asyncio client."""
    step = _advance(steps, None, None)
    while isinstance(step, Call):
        try:
            reply, error = await client.send(step), None
        except MemdError as e:
            reply, error = None, e
        step = _advance(steps, reply, error)
    return step.value
