//! `GET /v1/openapi.json`: the API described as OpenAPI 3.1, generated
//! from the request types themselves ([`crate::request::each`], the list
//! the router is built from, so no route can be missing or described
//! twice). Each request's JSON Schema (schemars, draft 2020-12, which
//! OpenAPI 3.1 uses as it is) becomes its path parameters, its query
//! parameters (GET, DELETE) or its JSON body (POST); its reply's schema is
//! the 200 answer.
//!
//! Why neither `utoipa` nor `aide`: both describe routes through their own
//! registration (a second list beside the router, or extractors this API
//! does not use: every route is one generic handler reading one request
//! type); `utoipa` would also derive a second schema per type beside the
//! schemars one MCP needs. The description here is a few dozen lines over
//! the schemas memd already has.

use serde_json::{Map, Value, json};

use crate::remedy::Remedy;
use crate::request::{self, Method, Request};

/// The description of a daemon serving one memory (`/v1/…`), or many
/// (`/v1/m/{name}/…`, `root`); `guarded` when a token is needed.
pub(crate) fn document(root: bool, guarded: bool) -> Value {
    let base = match root {
        true => "/v1/m/{name}",
        false => "/v1",
    };
    let mut paths = Paths {
        base,
        root,
        paths: Map::new(),
    };
    request::each(&mut paths);
    let mut paths = paths.paths;
    let health = operation("Liveness", json!([]), None, ok(json!({"type": "object"})));
    paths.insert("/healthz".into(), json!({ "get": health }));
    let memory_health = with_name(root, health_of_memory());
    paths.insert(format!("{base}/healthz"), json!({ "get": memory_health }));
    let described = operation(
        "This description",
        json!([]),
        None,
        ok(json!({"type": "object"})),
    );
    paths.insert("/v1/openapi.json".into(), json!({ "get": described }));
    if root {
        paths.insert("/v1/memories".into(), json!({ "get": memories() }));
    }
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "memd",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Long-term memory for AI agents, kept as plain markdown. Errors are {\"error\": \"...\"} with a 4xx or 5xx status.",
        },
        "paths": paths,
    });
    if guarded {
        doc["components"] =
            json!({"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}});
        doc["security"] = json!([{ "bearer": [] }]);
    }
    doc
}

/// The paths of every request, as [`request::each`] visits them.
struct Paths {
    base: &'static str,
    root: bool,
    paths: Map<String, Value>,
}

impl request::Each for Paths {
    fn one<R: Request>(&mut self) {
        let route = R::ROUTE;
        let params = request::schema_of::<R>();
        let properties = params["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut required: Vec<&str> = params["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // A group of one is a field that must be given.
        required.extend(R::NEEDS.iter().filter(|g| g.len() == 1).map(|g| g[0]));
        let in_path: Vec<&str> = route.path_fields().collect();
        let mut parameters: Vec<Value> = in_path
            .iter()
            .map(|f| parameter(f, "path", true, &properties))
            .collect();
        let mut body = None;
        if route.method.in_query() {
            let query = properties.keys().filter(|k| !in_path.contains(&k.as_str()));
            parameters.extend(
                query.map(|k| parameter(k, "query", required.contains(&k.as_str()), &properties)),
            );
        } else {
            body = Some(body_of(needing(params.clone(), R::NEEDS), &in_path));
        }
        let reply = match R::MEDIA {
            Some(media) => json!({
                "description": "OK",
                "content": { media: { "schema": {"type": "string"} } },
            }),
            None => ok(request::schema_of::<R::Reply>()),
        };
        let mut op = operation(route.summary, Value::Array(parameters), body, reply);
        op["operationId"] = json!(request::name_of::<R>());
        let op = with_name(self.root, op);
        let path = format!("{}{}", self.base, route.path);
        let entry = self.paths.entry(path).or_insert_with(|| json!({}));
        entry[method_name(route.method)] = op;
    }
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Get => "get",
        Method::Post => "post",
        Method::Delete => "delete",
        Method::Patch => "patch",
    }
}

/// One parameter, its schema the request's property of that name.
fn parameter(name: &str, at: &str, required: bool, properties: &Map<String, Value>) -> Value {
    let schema = properties
        .get(name)
        .cloned()
        .unwrap_or(json!({"type": "string"}));
    let description = schema.get("description").cloned();
    let mut p = json!({ "name": name, "in": at, "required": required, "schema": schema });
    if let Some(d) = description {
        p["description"] = d;
    }
    p
}

/// A JSON body: the request's schema without the fields in the path.
fn body_of(mut schema: Value, in_path: &[&str]) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(|v| v.as_object_mut()) {
        for f in in_path {
            props.remove(*f);
        }
    }
    if let Some(req) = schema.get_mut("required").and_then(|v| v.as_array_mut()) {
        req.retain(|r| !in_path.iter().any(|f| r == f));
    }
    let required = schema["required"].as_array().is_some_and(|r| !r.is_empty())
        || schema.get("anyOf").is_some();
    json!({
        "required": required,
        "content": { "application/json": { "schema": schema } },
    })
}

/// `schema` saying what [`Request::NEEDS`] says: a field of a group of
/// one in `required`, a group of more as `anyOf` of each field required.
fn needing(mut schema: Value, needs: &[&[&str]]) -> Value {
    for group in needs {
        match group {
            [one] => {
                let req = schema["required"].as_array().cloned().unwrap_or_default();
                let mut req: Vec<Value> = req;
                req.push(json!(one));
                schema["required"] = Value::Array(req);
            }
            many => {
                let each: Vec<Value> = many.iter().map(|f| json!({ "required": [f] })).collect();
                schema["anyOf"] = Value::Array(each);
            }
        }
    }
    schema
}

fn ok(schema: Value) -> Value {
    json!({
        "description": "OK",
        "content": { "application/json": { "schema": schema } },
    })
}

/// What would fix an error, as data: an operation (`op`) and the id it
/// takes, if any.
fn remedy_schema() -> Value {
    let ops: Vec<Value> = Remedy::each("e-1")
        .iter()
        .map(|r| json!(r)["op"].clone())
        .collect();
    json!({
        "type": "object",
        "properties": { "op": { "enum": ops }, "id": { "type": "string" } },
        "required": ["op"],
    })
}

/// An operation with its parameters, body and 200 answer, and the error
/// every route may give.
fn operation(summary: &str, parameters: Value, body: Option<Value>, reply: Value) -> Value {
    let error = json!({
        "description": "The request failed: 400 as given, 401/403 refused, 404 no such id, 409 busy, 413 too large, 500 otherwise",
        "content": { "application/json": { "schema": {
            "type": "object",
            "properties": {
                "error": { "type": "string" },
                "kind": {
                    "description": "memd's kind of failure, as the CLI's exit code says it: invalid 2, busy 3, not_found 4, corrupt 5, unfinished 6, other 1",
                    "enum": ["invalid", "busy", "not_found", "corrupt", "unfinished", "other"],
                },
                "next": {
                    "description": "What would fix it, as this API's route and what it does",
                    "type": "string",
                },
                "remedy": remedy_schema(),
            },
            "required": ["error"],
        } } },
    });
    let mut op = json!({
        "summary": summary,
        "parameters": parameters,
        "responses": { "200": reply, "default": error },
    });
    if let Some(b) = body {
        op["requestBody"] = b;
    }
    op
}

/// With `root`, the `name` path parameter first.
fn with_name(root: bool, mut op: Value) -> Value {
    if !root {
        return op;
    }
    let name = json!({
        "name": "name",
        "in": "path",
        "required": true,
        "description": "The memory: ASCII letters, digits, '-', '_' and '.', not starting with a dot, at most 64 bytes",
        "schema": {"type": "string"},
    });
    if let Some(ps) = op.get_mut("parameters").and_then(|v| v.as_array_mut()) {
        ps.insert(0, name);
    }
    op
}

fn health_of_memory() -> Value {
    operation(
        "A memory's liveness",
        json!([]),
        None,
        ok(json!({"type": "object"})),
    )
}

fn memories() -> Value {
    let listed = json!({
        "type": "object",
        "properties": {
            "memories": {"type": "array", "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "open": {"type": "boolean"}},
            }},
            "open": {"type": "integer"},
            "moved": {"type": "array", "items": {"type": "string"}},
        },
    });
    operation(
        "Every memory under the root, and which are open",
        json!([]),
        None,
        ok(listed),
    )
}
