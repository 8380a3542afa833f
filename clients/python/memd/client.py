"""The clients: :class:`Client` (blocking, ``httpx.Client``) and
:class:`AsyncClient` (``httpx.AsyncClient``), with the same methods, one per
operation of the API (see :mod:`memd._api`, where each is described once).

``memory=NAME`` reaches memory ``NAME`` of a daemon run as ``memd serve
--root DIR`` (its routes are ``/v1/m/NAME/…``); without it, the one memory
of ``memd serve`` (``/v1/…``). ``token`` is sent as ``Authorization:
Bearer`` (the daemon's ``MEMD_TOKEN``, or a memory's own token).

A ``503`` reply of kind ``busy`` says nothing was done: the memory is
being moved to another node (deploy/README.md), or its node is
restarting. The client sends the same request again after the reply's
``Retry-After`` (at most :data:`MAX_RETRY_AFTER` seconds), ``retries``
times (default :data:`RETRIES`), then raises :class:`BusyError`. A write
sent with a ``key`` is written once whatever happens.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from ._api import AsyncOperations, Call, Endpoint, SyncOperations
from .errors import TransportError, error_from

T = TypeVar("T")
C = TypeVar("C", bound="Client")
A = TypeVar("A", bound="AsyncClient")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)

DEFAULT_URL = "http://127.0.0.1:7437"
DEFAULT_TIMEOUT = 120.0
"""Seconds; a consolidation waiting on an LLM can take a while."""
RETRIES = 5
"""Times a request refused with nothing done (``503``, kind ``busy``) is
sent again."""
MAX_RETRY_AFTER = 5.0
"""The longest wait, in seconds, before sending such a request again."""


class _Base(Generic[H]):
    """What both clients share: where requests go and how each is made.

    ``http`` is an ``httpx`` client to send through (its own base URL and
    headers are not used); by default the client makes and closes one.
    """

    _new_http: Callable[..., H]

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        memory: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        http: H | None = None,
        retries: int = RETRIES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.token = token
        self.memory = memory
        self.timeout = timeout
        self.prefix = "/v1" if memory is None else f"/v1/m/{quote(memory, safe='')}"
        self._owns_http = http is None
        self._http: H = http or type(self)._new_http(timeout=timeout)

    def _headers(self) -> dict[str, str]:
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    def _url(self, call: Call[Any]) -> str:
        return self.base_url + (call.path if call.from_root else self.prefix + call.path)

    def _request(self, call: Call[Any]) -> httpx.Request:
        return self._http.build_request(
            call.method, self._url(call), params=call.query, json=call.body, headers=self._headers()
        )

    def __repr__(self) -> str:
        memory = "" if self.memory is None else f", memory={self.memory!r}"
        return f"{type(self).__name__}({self.base_url!r}{memory})"


def _reply(call: Call[T], response: httpx.Response) -> T:
    """The reply read, or the error it stands for raised."""
    if response.is_error:
        raise error_from(response)
    return call.read(response)


def _again_after(response: httpx.Response) -> float | None:
    """Seconds to wait before sending a request again that memd (or the
    load balancer in front of it) refused with nothing done; ``None`` when
    the reply is not such a refusal."""
    if response.status_code != 503:
        return None
    try:
        kind = response.json().get("kind")
    except (ValueError, AttributeError):
        return None
    if kind != "busy":
        return None
    try:
        wait = float(response.headers.get("retry-after", "1"))
    except ValueError:
        wait = 1.0
    return min(max(wait, 0.0), MAX_RETRY_AFTER)


def _unreachable(e: httpx.TransportError) -> TransportError:
    return TransportError(f"no reply from memd: {e}")


class Client(_Base[httpx.Client], SyncOperations):
    """A blocking client of memd's HTTP API.

    >>> with Client() as memd:
    ...     memd.add("User prefers answers in British English", session="s1")
    ...     hits = memd.search("which spelling?").hits
    """

    _new_http = httpx.Client

    def send(self, call: Call[T]) -> T:
        """Send one call and read its reply (what every method does)."""
        for tried in range(self.retries + 1):
            try:
                response = self._http.send(self._request(call))
            except httpx.TransportError as e:
                raise _unreachable(e) from e
            wait = _again_after(response)
            if wait is None or tried == self.retries:
                break
            time.sleep(wait)
        return _reply(call, response)

    def _bind(self, endpoint: Endpoint[Any, T]) -> Callable[..., T]:
        @functools.wraps(endpoint.params)
        def method(*args: Any, **kwargs: Any) -> T:
            return self.send(endpoint(*args, **kwargs))

        method.__signature__ = endpoint.signature  # type: ignore[attr-defined]
        return method

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self: C) -> C:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(_Base[httpx.AsyncClient], AsyncOperations):
    """An asyncio client of memd's HTTP API: :class:`Client`'s methods, each
    a coroutine.

    >>> async with AsyncClient() as memd:
    ...     await memd.add("User keeps bees")
    ...     found = await memd.search("hobbies")
    """

    _new_http = httpx.AsyncClient

    async def send(self, call: Call[T]) -> T:
        """Send one call and read its reply (what every method does)."""
        for tried in range(self.retries + 1):
            try:
                response = await self._http.send(self._request(call))
            except httpx.TransportError as e:
                raise _unreachable(e) from e
            wait = _again_after(response)
            if wait is None or tried == self.retries:
                break
            await asyncio.sleep(wait)
        return _reply(call, response)

    def _bind(self, endpoint: Endpoint[Any, T]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(endpoint.params)
        async def method(*args: Any, **kwargs: Any) -> T:
            return await self.send(endpoint(*args, **kwargs))

        method.__signature__ = endpoint.signature  # type: ignore[attr-defined]
        return method

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
