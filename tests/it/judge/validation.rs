//! Reading a judge's ops: a reply is refused or repaired when it would drop
//! what a fact or an entry said (a name, a number, a negation).

use serde_json::json;

use crate::consolidate::entry;

#[test]
fn validation_refuses_replies_that_would_drop_what_a_fact_or_an_entry_said() {
    use memd::consolidate::ops::{Cluster, Group};
    use memd::consolidate::reply::read as validate;
    let cluster = Cluster {
        groups: vec![Group {
            ids: vec!["2026-11-22#00000001".parse().unwrap()],
            text: "Pixel the cat is afraid of the vacuum cleaner".into(),
            days: vec!["2026-11-22".into()],
        }],
        entries: vec![
            entry("e-cat", "The user has a cat named Pixel"),
            entry("e-job", "Works at Google as a data engineer"),
            entry("e-tea", "Drinks green tea"),
        ],
        forgotten: Vec::new(),
    };
    the_judge_is_refused_what_it_would_drop(&cluster);
    a_replace_that_erases_the_old_value_keeps_it_as_history(&cluster);
    text_that_says_what_nothing_shown_said_is_not_kept(&cluster);
    // The good reply passes: the fact in its own words, a true restatement kept.
    let reply = json!({"ops": [
        {"op": "REPLACE", "target": "E1", "from": ["F1"],
         "text": "The user has a cat named Pixel, who is afraid of the vacuum cleaner"}
    ]});
    assert!(validate(&reply, &cluster, 20).is_ok());
}

/// A KEEP, ADD or REMOVE that would drop what a fact of `cluster` or one
/// of its entries said is refused.
fn the_judge_is_refused_what_it_would_drop(cluster: &memd::consolidate::ops::Cluster) {
    use memd::consolidate::reply::read as validate;
    // A KEEP whose entry does not say the fact (a real 1.5B model did this).
    let err = validate(
        &json!({"ops": [{"op": "KEEP", "target": "E1", "from": ["F1"]}]}),
        cluster,
        20,
    )
    .unwrap_err();
    assert!(err.contains("no text says it"), "{err}");
    // An ADD whose text is not the fact.
    assert!(
        validate(
            &json!({"ops": [{"op": "ADD", "text": "x", "from": ["F1"]}]}),
            cluster,
            20
        )
        .is_err()
    );
    // A REMOVE into an entry that does not say what the removed one said.
    let reply = json!({"ops": [
        {"op": "ADD", "text": "Pixel is afraid of the vacuum cleaner", "from": ["F1"]},
        {"op": "REMOVE", "target": "E3", "into": "E2"}
    ]});
    assert!(
        validate(&reply, cluster, 20)
            .unwrap_err()
            .contains("does not say what E3 says")
    );
}

/// A REPLACE of an entry of `cluster` that erases its old value, or keeps
/// too little of it, keeps it as history.
fn a_replace_that_erases_the_old_value_keeps_it_as_history(
    cluster: &memd::consolidate::ops::Cluster,
) {
    use memd::consolidate::ops::{Group, Op};
    use memd::consolidate::reply::read as validate;
    // A REPLACE that erases the old value keeps it as history. (Each fact
    // is placed by one op, so the update is a second fact, F2.)
    let mut job = cluster.clone();
    job.groups.push(Group {
        ids: vec!["2026-11-22#00000002".parse().unwrap()],
        text: "Now works at Microsoft".into(),
        days: vec!["2026-11-22".into()],
    });
    let reply = json!({"ops": [
        {"op": "ADD", "text": "Pixel is afraid of the vacuum cleaner", "from": ["F1"]},
        {"op": "REPLACE", "target": "E2", "text": "Now works at Microsoft", "from": ["F2"]}
    ]});
    let ops = validate(&reply, &job, 20).unwrap();
    match &ops[1] {
        Op::Replace { text, .. } => assert_eq!(
            text,
            "Now works at Microsoft (previously: Works at Google as a data engineer)"
        ),
        other => panic!("{other:?}"),
    }
    // Half the old words kept is still too little: "Google" and "data"
    // would be gone.
    let reply = json!({"ops": [
        {"op": "ADD", "text": "Pixel is afraid of the vacuum cleaner", "from": ["F1"]},
        {"op": "REPLACE", "target": "E2", "text": "Works as an engineer at Microsoft", "from": ["F2"]}
    ]});
    match &validate(&reply, &job, 20).unwrap()[1] {
        Op::Replace { text, .. } => assert!(
            text.ends_with("(previously: Works at Google as a data engineer)"),
            "{text}"
        ),
        other => panic!("{other:?}"),
    }
}

/// Text that says what nothing in `cluster` said, or a number from
/// nowhere, is not kept; one word from nowhere is a rewrite, and is.
fn text_that_says_what_nothing_shown_said_is_not_kept(cluster: &memd::consolidate::ops::Cluster) {
    use memd::consolidate::ops::Op;
    use memd::consolidate::reply::read as validate;
    // Text that says what nothing shown said: the fact's own words instead
    // (ADD); a REPLACE is not applied, its fact is ADDed in its own words
    // (or, with no fact to fall back on, the reply is refused).
    let reply = json!({"ops": [
        {"op": "ADD", "from": ["F1"],
         "text": "Pixel is afraid of the vacuum cleaner; previously she was a student in Edinburgh"}
    ]});
    match &validate(&reply, cluster, 20).unwrap()[0] {
        Op::Add { text, .. } => assert_eq!(text, "Pixel the cat is afraid of the vacuum cleaner."),
        other => panic!("{other:?}"),
    }
    let reply = json!({"ops": [
        {"op": "REPLACE", "target": "E1", "from": ["F1"],
         "text": "The user has a cat named Pixel who hates the vacuum and loves tuna"}
    ]});
    let fact_alone = vec![Op::Add {
        text: "Pixel the cat is afraid of the vacuum cleaner.".into(),
        from: vec!["2026-11-22#00000001".parse().unwrap()],
    }];
    assert_eq!(validate(&reply, cluster, 20).unwrap(), fact_alone);
    // A number from nowhere is a made-up value, even alone.
    let reply = json!({"ops": [
        {"op": "REPLACE", "target": "E2", "from": ["F1"],
         "text": "Works at Google as a data engineer since 2019; Pixel is afraid of the vacuum cleaner"}
    ]});
    assert_eq!(validate(&reply, cluster, 20).unwrap(), fact_alone);
    let reply = json!({"ops": [
        {"op": "ADD", "text": "Pixel is afraid of the vacuum cleaner", "from": ["F1"]},
        {"op": "REPLACE", "target": "E3", "text": "Drinks green tea with honey and lemon"}
    ]});
    let err = validate(&reply, cluster, 20).unwrap_err();
    assert!(err.contains("honey, lemon"), "{err}");
    // One word from nowhere is a rewrite, not an invention.
    let reply = json!({"ops": [
        {"op": "REPLACE", "target": "E2", "from": ["F1"],
         "text": "Works at Google as a data engineer; owns Pixel, afraid of the vacuum cleaner"}
    ]});
    match &validate(&reply, cluster, 20).unwrap()[0] {
        Op::Replace { text, .. } => assert!(
            text.starts_with("Works at Google as a data engineer; owns Pixel"),
            "{text}"
        ),
        other => panic!("{other:?}"),
    }
}

/// A text that drops a fact's names or numbers does not say the fact,
/// however many other words match (Qwen 1.5B kept the old partner's name
/// and appended "previously" the same sentence).
#[test]
fn a_text_that_drops_a_facts_name_does_not_say_it() {
    use memd::consolidate::ops::{Cluster, Group, Op, Snapshot};
    use memd::consolidate::reply::read as validate;
    let cluster = Cluster {
        groups: vec![Group {
            ids: vec!["2026-02-01#00000002".parse().unwrap()],
            text: "Caspar Wilde and Rufus Kane ran a charity fundraiser for children's education."
                .into(),
            days: vec!["2026-02-01".into()],
        }],
        entries: vec![Snapshot {
            id: "e-fund".parse().unwrap(),
            text:
                "Caspar Wilde and Colette Brandt ran a charity fundraiser for children's education."
                    .into(),
            pinned: false,
            unreviewed: false,
            first_seen: "2026-01-01".into(),
            updated: "2026-01-01".into(),
        }],
        forgotten: Vec::new(),
    };
    let reply = json!({"ops": [{"op": "REPLACE", "target": "E1", "from": ["F1"],
        "text": "Caspar Wilde and Colette Brandt ran a charity fundraiser for children's education; previously they ran a charity fundraiser for children's education."}]});
    assert_eq!(
        validate(&reply, &cluster, 20).unwrap(),
        vec![Op::Add {
            text: cluster.groups[0].text.clone(),
            from: cluster.groups[0].ids.clone(),
        }]
    );
    let keep = json!({"ops": [{"op": "KEEP", "target": "E1", "from": ["F1"]}]});
    let err = validate(&keep, &cluster, 20).unwrap_err();
    assert!(err.contains("no text says it"), "{err}");
    let good = json!({"ops": [{"op": "REPLACE", "target": "E1", "from": ["F1"],
        "text": "Caspar Wilde and Rufus Kane ran a charity fundraiser for children's education; previously Colette Brandt did."}]});
    match &validate(&good, &cluster, 20).unwrap()[0] {
        Op::Replace { text, .. } => {
            assert!(text.ends_with("previously Colette Brandt did."), "{text}")
        }
        other => panic!("{other:?}"),
    }
}

/// No op drops a name, a number or a negation: a negation is not a stop
/// word to validation, a REPLACE needs a fact, a merge keeps every name
/// of the entry it removes, and each fact is placed once.
#[test]
fn no_op_drops_a_name_a_number_or_a_negation() {
    use memd::consolidate::ops::{Cluster, Group, Op};
    use memd::consolidate::reply::read as validate;
    let cluster = Cluster {
        groups: vec![Group {
            ids: vec!["2026-11-22#00000001".parse().unwrap()],
            text: "User is not vegetarian".into(),
            days: vec!["2026-11-22".into()],
        }],
        entries: vec![
            entry("e-veg", "User is vegetarian"),
            entry("e-alice", "Alice is vegetarian"),
            entry("e-bob", "Bob is vegetarian"),
        ],
        forgotten: Vec::new(),
    };
    let refused = |reply: serde_json::Value, why: &str| {
        let err = validate(&reply, &cluster, 20).unwrap_err();
        assert!(err.contains(why), "{err}");
    };
    refused(
        json!({"ops": [{"op": "REPLACE", "target": "E1", "text": "User is not vegetarian"},
                       {"op": "ADD", "from": ["F1"], "text": "User is not vegetarian"}]}),
        "must name the facts",
    );
    refused(
        json!({"ops": [{"op": "KEEP", "target": "E1", "from": ["F1"]}]}),
        "no text says it",
    );
    refused(
        json!({"ops": [{"op": "ADD", "from": ["F1"], "text": "User is not vegetarian"},
                       {"op": "REMOVE", "target": "E3", "into": "E2"}]}),
        "does not say what E3 says",
    );
    refused(
        json!({"ops": [{"op": "ADD", "from": ["F1"], "text": "User is not vegetarian"},
                       {"op": "ADD", "from": ["F1"], "text": "User is not vegetarian"}]}),
        "placed by two operations",
    );
    // The update itself is fine, and keeps the old value as history.
    let ops = validate(
        &json!({"ops": [{"op": "REPLACE", "target": "E1", "from": ["F1"], "text": "User is not vegetarian"}]}),
        &cluster,
        20,
    )
    .unwrap();
    match &ops[0] {
        Op::Replace { text, .. } => {
            assert_eq!(
                text,
                "User is not vegetarian (previously: User is vegetarian)"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        memd::consolidate::reply::repair::with_history("Is vegetarian", "Is not vegetarian"),
        "Is vegetarian (previously: Is not vegetarian)"
    );
}
