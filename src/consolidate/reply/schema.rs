//! The JSON Schema of a judge's reply for one cluster, sent as
//! `response_format: json_schema` where the endpoint takes it: op kinds,
//! and the cluster's own aliases as enums (`F1`…`Fn`, `E1`…`Em`), so that
//! a server that constrains decoding cannot produce a reply naming `F2`
//! when only `F1` exists, or an op on an entry that was not shown.
//! Validation still checks everything: a schema is a help, never a trust.

use serde_json::{Value, json};

use crate::consolidate::ops::Cluster;

/// The schema of a reply `{"ops": [...]}` for `cluster`.
pub(crate) fn reply(cluster: &Cluster) -> Value {
    let facts: Vec<String> = (1..=cluster.groups.len())
        .map(|i| format!("F{i}"))
        .collect();
    let entries: Vec<String> = (1..=cluster.entries.len())
        .map(|i| format!("E{i}"))
        .collect();
    // An endpoint that refuses a keyword here costs one step down to
    // json_object (remembered), never a failed run.
    let from = json!({"type": "array", "items": {"enum": facts}, "minItems": 1});
    let entry = json!({"enum": entries});
    let text = json!({"type": "string"});
    let mut kinds = vec![op("ADD", &[("text", &text), ("from", &from)])];
    if !entries.is_empty() {
        kinds.push(op(
            "REPLACE",
            &[("target", &entry), ("text", &text), ("from", &from)],
        ));
        kinds.push(op("KEEP", &[("target", &entry), ("from", &from)]));
    }
    if entries.len() > 1 {
        kinds.push(op("REMOVE", &[("target", &entry), ("into", &entry)]));
    }
    if !cluster.forgotten.is_empty() {
        let shown: Vec<String> = (1..=cluster.forgotten.len())
            .map(|i| format!("X{i}"))
            .collect();
        let forgotten = json!({"enum": shown});
        kinds.push(op("FORGET", &[("target", &forgotten), ("from", &from)]));
    }
    json!({
        "type": "object",
        "properties": {"ops": {"type": "array", "items": {"anyOf": kinds}}},
        "required": ["ops"],
        "additionalProperties": false,
    })
}

/// One op kind: `op` fixed to `name`, and `fields`, all required.
fn op(name: &str, fields: &[(&str, &Value)]) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert("op".into(), json!({"enum": [name]}));
    let mut required = vec!["op".to_string()];
    for (field, schema) in fields {
        properties.insert(field.to_string(), (*schema).clone());
        required.push(field.to_string());
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}
