"""The client held against the API's own description, ``GET
/v1/openapi.json`` of a running daemon: every operation it describes is a
client method and every method an operation; the parameters are the same;
each typed reply has the fields the description gives its reply."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

import memd.types
from memd import Client
from memd._api import ENDPOINTS, Endpoint
from memd.types import Model

from .conftest import init, serving

Spec = dict[str, Any]

METHODS = ("get", "post", "put", "patch", "delete")

NEWER = {("Status", "embedder"), ("Left", "remedy"), ("Problem", "remedy")}
"""Fields a daemon before them does not describe or send (each has a default)."""

NOT_A_METHOD = {("get", "/healthz")}
"""The daemon's own liveness; ``Client.health()`` asks the memory's
(``/v1/healthz``, ``/v1/m/NAME/healthz``), which the description lists too."""


@pytest.fixture(scope="module", params=["one", "root"])
def spec(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spec]:
    """The description given by ``memd serve`` and by ``memd serve --root``."""
    where = tmp_path_factory.mktemp(request.param) / "memd"
    if request.param == "root":
        where.mkdir()
    else:
        init(where)
    args = ("--root",) if request.param == "root" else ()
    with serving(where, *args) as daemon, Client(daemon.url) as client:
        yield client.openapi()


def spec_path(spec: Spec, endpoint: Endpoint[..., Any]) -> str:
    if endpoint.from_root:
        return endpoint.path
    base = "/v1/m/{name}" if "/v1/memories" in spec["paths"] else "/v1"
    return base + endpoint.path


def operations(spec: Spec) -> dict[tuple[str, str], Spec]:
    return {
        (method, path): op
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    }


def served(spec: Spec) -> dict[tuple[str, str], Endpoint[..., Any]]:
    """The client's endpoints the daemon serves (``memories`` under a root only)."""
    ours = {(e.method.lower(), spec_path(spec, e)): e for e in ENDPOINTS.values()}
    return {at: e for at, e in ours.items() if at in operations(spec) or at[1] != "/v1/memories"}


def test_every_operation_is_a_method_and_every_method_an_operation(spec: Spec) -> None:
    described = set(operations(spec)) - NOT_A_METHOD
    assert set(served(spec)) == described


def test_the_parameters_are_the_described_ones(spec: Spec) -> None:
    described = operations(spec)
    for at, endpoint in served(spec).items():
        op = described[at]
        names = {p["name"] for p in op["parameters"]} - {"name"}
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        names |= set(body.get("schema", {}).get("properties", {}))
        assert set(endpoint.signature.parameters) == names, at
        for p in op["parameters"]:
            if p["in"] == "path" and p["name"] != "name":
                assert "{" + p["name"] + "}" in endpoint.path, at


def test_the_replies_have_the_described_fields(spec: Spec) -> None:
    described = operations(spec)
    held: set[type[Model]] = set()
    undescribed: set[type[Model]] = set()
    for at, endpoint in served(spec).items():
        model = endpoint.read.model
        if model is not None:
            content = described[at]["responses"]["200"]["content"]
            schema = object_schema(content["application/json"]["schema"])
            held |= same_fields(model, schema, at[1], undescribed)
    every = {m for m in vars(memd.types).values() if is_model(m) and m is not Model}
    if ("get", "/v1/memories") not in described:
        every -= {memd.types.Memories, memd.types.MemoryInfo}
    assert held == every - undescribed


def test_the_memory_is_text(spec: Spec) -> None:
    [(_, endpoint)] = [(at, e) for at, e in served(spec).items() if at[1].endswith("/memory")]
    op = operations(spec)[("get", spec_path(spec, endpoint))]
    assert list(op["responses"]["200"]["content"]) == ["text/markdown"]


def test_errors_are_described_with_their_kinds(spec: Spec) -> None:
    kinds = {"invalid", "busy", "not_found", "corrupt", "unfinished", "other"}
    for op in operations(spec).values():
        error = op["responses"]["default"]["content"]["application/json"]["schema"]
        assert set(error["properties"]) == {"error", "kind", "next", "remedy"}
        ops = set(error["properties"]["remedy"]["properties"]["op"]["enum"])
        assert {"forget", "unforget", "erase"} <= ops
        assert set(error["properties"]["kind"]["enum"]) == kinds


def test_every_schema_is_json_schema(spec: Spec) -> None:
    bad = []
    for at, op in operations(spec).items():
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        replies = [c["schema"] for c in op["responses"]["200"]["content"].values()]
        params = [p["schema"] for p in op["parameters"]]
        for schema in [body.get("schema", {}), *replies, *params]:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                bad.append((at, e.message))
    assert bad == []


# --- holding a dataclass to a schema ----------------------------------------


def is_model(x: Any) -> bool:
    return isinstance(x, type) and issubclass(x, Model)


def innermost_model(tp: Any) -> type[Model] | None:
    if is_model(tp):
        return typing.cast("type[Model]", tp)
    for arg in typing.get_args(tp):
        found = innermost_model(arg)
        if found is not None:
            return found
    return None


def object_schema(schema: Spec) -> Spec:
    """The object a schema describes: through arrays, ``anyOf`` variants
    (the object one), nullable types, and ``oneOf`` variants of a tagged
    union (one object: every variant's properties, those all require
    required)."""
    if "anyOf" in schema:  # a search's reply: the object, not the bare array
        return next(s for s in schema["anyOf"] if "properties" in s)
    if "oneOf" in schema:  # a file as of a time: known or unknowable
        variants = [object_schema(s) for s in schema["oneOf"]]
        required = set.intersection(*(set(v.get("required", [])) for v in variants))
        properties = {k: v for s in variants for k, v in s.get("properties", {}).items()}
        return {"properties": properties, "required": sorted(required)}
    if "items" in schema:
        return object_schema(schema["items"])
    return schema


def same_fields(
    model: type[Model], schema: Spec, where: str, undescribed: set[type[Model]]
) -> set[type[Model]]:
    """Hold ``model``'s fields to ``schema``'s properties (both ways, but for
    :data:`NEWER`; a field the schema does not require has a default), and
    its nested models to theirs; the models held (the models of newer
    fields the schema lacks go to ``undescribed``)."""
    properties = schema.get("properties", {})
    fields = {f.name: f for f in dataclasses.fields(model) if f.name != "raw"}
    newer = {name for kind, name in NEWER if kind == model.__name__} - set(properties)
    assert set(fields) - newer == set(properties), f"{where}: {model.__name__}"
    required = set(schema.get("required") or [])
    for name, f in fields.items():
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        assert has_default or name in required, f"{where}: {model.__name__}.{name} is optional"
    held = {model}
    hints = typing.get_type_hints(model)
    for name in fields:
        nested = innermost_model(hints[name])
        if nested is not None and name in newer:
            undescribed.add(nested)
        elif nested is not None:
            held |= same_fields(nested, object_schema(properties[name]), f"{where}.{name}", undescribed)
    return held
