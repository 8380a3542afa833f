"""The errors a memd client raises.

The daemon answers a failed request with a 4xx or 5xx status and a JSON body
``{"error": "...", "kind": "..."}``. ``kind`` is memd's own kind of failure
(``invalid``, ``busy``, ``not_found``, ``corrupt``, ``unfinished``,
``other``: the CLI's exit codes). A request the daemon cannot read as one (a
body that is not the request, 400, 413, 415 or 422) is ``invalid``; only a
refused token or origin and an unknown route carry no kind. When memd knows
what would fix it, the body also has ``remedy``, an operation of the API as
data (``{"op": "unforget", "id": "e-1"}``), and ``next``, the same in the
API's words ("POST /v1/entries/e-1/unforget to bring e-1 back"); the error's
message ends with ``next``. Each error is a :class:`MemdError`; the
subclasses say what a caller usually wants to tell apart.
"""

from __future__ import annotations

from typing import Any

import httpx


class MemdError(Exception):
    """A request to memd failed.

    ``status`` is the HTTP status (``None`` when no reply came), ``kind`` is
    memd's kind of failure when the reply gave one, ``remedy`` what would
    fix it (``{"op": ..., ...}``) when memd knows, ``body`` the reply's JSON
    (or ``None``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        kind: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.body = body
        remedy = body.get("remedy") if isinstance(body, dict) else None
        self.remedy: dict[str, Any] | None = remedy if isinstance(remedy, dict) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status}, kind={self.kind!r})"


class NotFoundError(MemdError):
    """No such entry, fact, run, memory or route (404, kind ``not_found``)."""


class InvalidError(MemdError):
    """The request is not one memd takes (400, 415 or 422; kind ``invalid``)."""


class BusyError(MemdError):
    """Another run holds the lock (409, kind ``busy``), or the memory is
    being moved to another node (503, kind ``busy``, after the client's own
    retries): nothing was done; try again later."""


class AuthError(MemdError):
    """Refused before any route ran (401 or 403): the token, or an origin."""


class TransportError(MemdError):
    """No reply: the daemon could not be reached, or the connection failed."""


_BY_KIND: dict[str, type[MemdError]] = {
    "not_found": NotFoundError,
    "invalid": InvalidError,
    "busy": BusyError,
}

_BY_STATUS: dict[int, type[MemdError]] = {
    400: InvalidError,
    401: AuthError,
    403: AuthError,
    404: NotFoundError,
    409: BusyError,
    503: BusyError,
    413: InvalidError,
    415: InvalidError,
    422: InvalidError,
}


def error_from(response: httpx.Response) -> MemdError:
    """The error a failed reply stands for."""
    body = _json_or_none(response)
    message = response.reason_phrase or "request failed"
    kind = None
    if isinstance(body, dict):
        message = str(body.get("error", message))
        kind = body.get("kind") if isinstance(body.get("kind"), str) else None
        if isinstance(body.get("next"), str):
            message = f"{message}; {body['next']}"
    cls = _BY_KIND.get(kind or "") or _BY_STATUS.get(response.status_code, MemdError)
    return cls(message, status=response.status_code, kind=kind, body=body)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
