//! The API's description (`GET /v1/openapi.json`) against the API itself:
//! every route the request types define is described, every described
//! route answers, and every request body is what the server accepts.

use serde_json::{Value, json};

use crate::serving::*;
use crate::support::*;

/// Every (method, path) the request types define, under `base`.
fn defined(base: &str) -> Vec<(String, String)> {
    struct Collect(Vec<(String, String)>, String);
    impl memd::request::Each for Collect {
        fn one<R: memd::request::Request>(&mut self) {
            let route = R::ROUTE;
            let method = route.method.as_str().to_lowercase();
            self.0.push((method, format!("{}{}", self.1, route.path)));
        }
    }
    let mut c = Collect(Vec::new(), base.to_string());
    memd::request::each(&mut c);
    c.0
}

/// Every (method, path) the document describes.
fn described(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            out.push((method.clone(), path.clone()));
        }
    }
    out
}

/// `template` with each `{field}` filled in.
fn filled(template: &str) -> String {
    template
        .replace("{name}", "alice")
        .replace("{id}", "e-nothere")
        .replace("{run}", "r-nothere")
}

/// A value of the type a schema names (the first that is not null).
fn sample(schema: &Value) -> Value {
    if let Some(v) = schema.get("const") {
        return v.clone();
    }
    if let Some(v) = schema["enum"].as_array().and_then(|e| e.first()) {
        return v.clone();
    }
    let choices = schema["oneOf"].as_array().or(schema["anyOf"].as_array());
    if let Some(first) = choices.and_then(|c| c.iter().find(|s| s["type"] != "null")) {
        return sample(first);
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string")
            .to_string(),
        _ => "string".into(),
    };
    match ty.as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        "array" => json!([sample(&schema["items"])]),
        "object" => json!({}),
        _ => json!("x"),
    }
}

/// Call every described route: none is missing from the router (no 404
/// "no such route", no 405), a body with every documented field is read
/// (never a 422), and where the schema closes the object, an undocumented
/// field is refused (422).
fn every_route_answers(http: &Http, doc: &Value) {
    for (method, path) in described(doc) {
        let op = &doc["paths"][&path][&method];
        let url = filled(&path);
        let (code, reply) = match method.as_str() {
            "get" | "delete" => {
                let query: Vec<String> = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["in"] == "query")
                    .map(|p| {
                        let v = sample(&p["schema"]);
                        let text = v.as_str().map(String::from).unwrap_or(v.to_string());
                        format!("{}={text}", p["name"].as_str().unwrap())
                    })
                    .collect();
                let url = format!("{url}?{}", query.join("&"));
                let m = match method.as_str() {
                    "get" => reqwest::Method::GET,
                    _ => reqwest::Method::DELETE,
                };
                let (code, text) = http.send(m, &url, None);
                (
                    code,
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                )
            }
            _ => {
                let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                let mut body = serde_json::Map::new();
                for (k, s) in schema["properties"].as_object().unwrap() {
                    body.insert(k.clone(), sample(s));
                }
                let closed = schema["additionalProperties"] == false;
                let send = |body: serde_json::Map<String, Value>| {
                    let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                    let (code, text) =
                        http.send(m, &url, Some(Value::Object(body).to_string().into()));
                    (
                        code,
                        serde_json::from_str(&text).unwrap_or(Value::String(text)),
                    )
                };
                if closed {
                    let mut extra = body.clone();
                    extra.insert("bogus".into(), json!(1));
                    let (code, msg) = send(extra);
                    assert_eq!(
                        code, 422,
                        "{method} {path} took an undocumented field: {msg}"
                    );
                }
                send(body)
            }
        };
        assert_ne!(code, 405, "{method} {path}: {reply}");
        assert_ne!(
            code, 422,
            "{method} {path} refused its documented fields: {reply}"
        );
        assert!(
            !reply.to_string().contains("no such route"),
            "{method} {path} is described but not routed: {reply}"
        );
    }
}

#[test]
fn the_openapi_document_describes_every_route_of_one_memory_and_each_answers() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start_in_process(&layout);
    let http = Http::at(&d.base, None);
    let (code, doc) = http.get("/v1/openapi.json");
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = described(&doc);
    for route in defined("/v1") {
        assert!(paths.contains(&route), "{route:?} is not described");
    }
    for extra in ["/healthz", "/v1/openapi.json"] {
        assert!(paths.contains(&("get".into(), extra.into())), "{extra}");
    }
    every_route_answers(&http, &doc);
    d.stop();
}

#[test]
fn the_openapi_document_of_a_root_describes_every_memorys_routes() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(4));
    let http = Http::at(&d.base, None);
    // A memory to answer on, made by its first write.
    let (code, _) = http.post(
        "/v1/m/alice/facts",
        json!({"text": "Keeps bees on the roof"}).to_string(),
    );
    assert_eq!(code, 200);
    let (code, doc) = http.get("/v1/openapi.json");
    assert_eq!(code, 200, "{doc}");
    let paths = described(&doc);
    for route in defined("/v1/m/{name}") {
        assert!(paths.contains(&route), "{route:?} is not described");
    }
    assert!(paths.contains(&("get".into(), "/v1/memories".into())));
    every_route_answers(&http, &doc);
    d.stop();
}

#[test]
fn mcp_tool_schemas_are_the_request_types_schemas() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut ask = |msg: Value| -> Value {
        use std::io::{BufRead, Write};
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let list = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tool = |name: &str| {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["inputSchema"]
            .clone()
    };
    let add = memd::request::schema_of::<memd::request::Add>();
    let remember = tool("remember");
    for field in ["text", "texts", "category", "session", "key"] {
        assert_eq!(
            remember["properties"][field], add["properties"][field],
            "{field}"
        );
    }
    // The field the tool fixes is not offered.
    assert!(
        remember["properties"].get("similar").is_none(),
        "{remember}"
    );
    let search = memd::request::schema_of::<memd::request::Search>();
    assert_eq!(
        tool("recall")["properties"]["query"],
        search["properties"]["query"]
    );
    // Arguments are checked by type.
    let r = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "bees", "k": "three"}}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_openapi_document_says_a_fact_needs_text_or_texts_and_a_search_needs_its_query() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start_in_process(&layout);
    let (_, doc) = Http::at(&d.base, None).get("/v1/openapi.json");
    let facts = &doc["paths"]["/v1/facts"]["post"]["requestBody"];
    assert_eq!(facts["required"], true, "{facts}");
    let any_of = &facts["content"]["application/json"]["schema"]["anyOf"];
    assert_eq!(
        any_of,
        &serde_json::json!([{"required": ["text"]}, {"required": ["texts"]}]),
        "{facts}"
    );
    let params = doc["paths"]["/v1/search"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let query = params.iter().find(|p| p["name"] == "query").unwrap();
    assert_eq!(query["required"], true, "{query}");
    // And the API holds to it.
    let http = Http::at(&d.base, None);
    assert_eq!(http.post("/v1/facts", "{}").0, 400);
    assert_eq!(http.get("/v1/search").0, 400);
    d.stop();
}

/// (method, path) with every `{param}` written `{}`.
fn shape(method: &str, path: &str) -> (String, String) {
    let mut out = String::new();
    let mut inside = false;
    for c in path.chars() {
        match c {
            '{' => (inside, out) = (true, out + "{}"),
            '}' => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    (method.to_lowercase(), out)
}

/// What an HTTP caller is told to do next is a route the server serves:
/// every remedy's route is one the request types define.
#[test]
fn every_remedy_names_a_route_the_binary_serves() {
    let served: std::collections::BTreeSet<(String, String)> =
        defined("/v1").iter().map(|(m, p)| shape(m, p)).collect();
    let mut named = 0;
    for remedy in memd::remedy::Remedy::each("e-1") {
        let Some(route) = remedy.route() else {
            continue;
        };
        let (method, path) = route.split_once(' ').unwrap();
        let path = path.replace("/e-1", "/{id}");
        assert!(
            served.contains(&shape(method, &path)),
            "{remedy:?}: {route}"
        );
        named += 1;
    }
    assert!(named >= 5, "{named} remedies have routes");
}

/// docs/API.md's list of routes names each route the request types define
/// (the ones the server serves and OpenAPI describes) and nothing else but
/// the health check and the description itself.
#[test]
fn api_md_lists_every_route_the_binary_serves_and_no_other() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/API.md")).unwrap();
    let routes = doc.split("\n## Routes\n").nth(1).expect("a Routes section");
    let routes = routes.split("\n## ").next().unwrap();
    let listed: std::collections::BTreeSet<(String, String)> = routes
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| {
            let (method, rest) = l.split_once(' ')?;
            let path = rest.split(['`', '?', ' ']).next()?;
            Some(shape(method, path))
        })
        .collect();
    let served: std::collections::BTreeSet<(String, String)> = defined("/v1")
        .iter()
        .map(|(m, p)| shape(m, p))
        .chain([shape("get", "/healthz"), shape("get", "/v1/openapi.json")])
        .collect();
    let missing: Vec<_> = served.difference(&listed).collect();
    let unknown: Vec<_> = listed.difference(&served).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/API.md lacks {missing:?} and lists {unknown:?}, which memd does not serve"
    );
}
