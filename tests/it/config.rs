//! memd.toml: defaults, the generated file, overrides, errors naming keys.

use memd::config::{Config, EmbedderKind};

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn the_generated_file_lists_every_key_with_its_default() {
    let text = memd::config::default_file_text();
    // Everything is commented out: the file means "all defaults".
    assert_eq!(Config::parse(&text, no_env).unwrap(), Config::default());
    // Uncommenting every key line gives the same config, so the file shows
    // the true defaults and every key is documented.
    let uncommented: String = text
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if is_key_line(rest) => rest.to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        Config::parse(&uncommented, no_env).unwrap(),
        Config::default()
    );
    for key in [
        "min_hours",
        "min_facts",
        "interval_seconds",
        "neighbor_k",
        "cluster_max",
        "max_lines",
        "max_retries",
        "remove_budget",
        "base_url",
        "model_dir",
    ] {
        assert!(
            uncommented.contains(&format!("\n{key} = ")),
            "{key} missing"
        );
    }
    for line in text
        .lines()
        .filter(|l| l.strip_prefix("# ").is_some_and(is_key_line))
    {
        let i = text.find(line).unwrap();
        let doc = text[..i].lines().last().unwrap();
        assert!(doc.len() > 4, "key without documentation: {line}");
    }
}

#[test]
fn values_and_environment_overrides_apply() {
    let text = "[consolidation]\nmin_hours = 1.5\n[embedder]\nkind = \"lexical\"\n";
    let env = |k: &str| match k {
        "MEMD_CONSOLIDATION_MIN_FACTS" => Some("3".to_string()),
        "MEMD_LLM_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
        "MEMD_MODEL_DIR" => Some("/models/minilm".to_string()),
        "MEMD_LLM_JSON_MODE" => Some("false".to_string()),
        _ => None,
    };
    let c = Config::parse(text, env).unwrap();
    assert_eq!(c.consolidation.min_hours, 1.5);
    assert_eq!(c.consolidation.min_facts, 3);
    assert_eq!(c.embedder.kind, EmbedderKind::Lexical);
    assert_eq!(c.embedder.model_dir, "/models/minilm");
    assert!(c.llm.configured());
    assert!(!c.llm.json_mode);
    assert_eq!(c.promotion.max_lines, Config::default().promotion.max_lines);
}

#[test]
fn unknown_keys_and_wrong_types_name_the_key() {
    let err = Config::parse("[consolidation]\nmin_hourz = 1\n", no_env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("min_hourz"), "{err}");
    let err = Config::parse("[consolidaton]\n", no_env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("consolidaton"), "{err}");
    let err = Config::parse("[consolidation]\nmin_facts = \"ten\"\n", no_env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("min_facts"), "{err}");
    let err = Config::parse("[embedder]\nkind = \"word2vec\"\n", no_env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("word2vec") && err.contains("kind"), "{err}");
    let env = |k: &str| (k == "MEMD_CONSOLIDATION_NEIGHBOR_K").then(|| "many".to_string());
    let err = format!("{:#}", Config::parse("", env).unwrap_err());
    assert!(err.contains("MEMD_CONSOLIDATION_NEIGHBOR_K"), "{err}");
}

/// `key = value`, as opposed to a line of documentation.
fn is_key_line(l: &str) -> bool {
    l.split_once(" = ").is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
    })
}
