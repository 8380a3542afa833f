use super::*;

fn verdict(old: &str, new: &str) -> Verdict {
    judge(old, new, 0.6)
}

#[test]
fn a_new_employer_updates_the_old_one_with_or_without_now() {
    let old = "User works at Acme";
    assert_eq!(
        verdict(old, "User now works at Globex"),
        Verdict::Update(Why::Said)
    );
    assert_eq!(
        verdict(old, "User works at Globex"),
        Verdict::Update(Why::NewValue)
    );
}

#[test]
fn a_partner_named_anew_in_one_thing_updates_it_and_a_list_item_does_not() {
    assert_eq!(
        verdict(
            "Dr. Ilse Varga and Tom Reddy co-authored a paper on ethics in soil science",
            "Dr. Ilse Varga and Omar Haddad co-authored a paper on ethics in soil science"
        ),
        Verdict::Update(Why::NewValue)
    );
    assert_eq!(
        verdict("User likes cats and dogs", "User likes cats and birds"),
        Verdict::Distinct
    );
}

#[test]
fn a_second_liking_is_a_second_fact() {
    assert_eq!(
        verdict("User likes swimming", "User likes hiking"),
        Verdict::Distinct
    );
    assert_eq!(
        verdict("User has a dog named Rex", "User has a cat named Tom"),
        Verdict::Unknown
    );
}

#[test]
fn a_liking_said_to_have_changed_updates_the_old_one() {
    assert_eq!(
        verdict("User likes swimming", "User no longer likes swimming"),
        Verdict::Update(Why::Said)
    );
}

#[test]
fn a_move_updates_where_the_user_lives() {
    assert_eq!(
        verdict("User lives in Paris", "User moved to Berlin"),
        Verdict::Update(Why::Said)
    );
    assert_eq!(
        verdict("Lives in Seattle", "Moved to Lisbon in May"),
        Verdict::Update(Why::Said)
    );
}

#[test]
fn a_correction_of_a_name_updates_it() {
    assert_eq!(
        verdict(
            "User's manager is called Jon",
            "Correction: the manager's name is John, not Jon"
        ),
        Verdict::Update(Why::Said)
    );
}

#[test]
fn a_new_fact_on_the_same_person_is_not_an_update() {
    assert_eq!(
        verdict(
            "User's sister lives in Denver",
            "User's sister never liked the cold"
        ),
        Verdict::Unknown
    );
}

#[test]
fn two_statements_about_someone_unnamed_are_two_facts() {
    assert_eq!(
        verdict(
            "Three women are practicing judo in a park",
            "Three women are practicing judo in a hall"
        ),
        Verdict::Unknown
    );
    assert_eq!(
        verdict(
            "A woman is playing a cello",
            "A woman is now playing a flute"
        ),
        Verdict::Unknown
    );
    assert_eq!(
        verdict("The user plays the harp", "The user now plays the flute"),
        Verdict::Update(Why::Said)
    );
}

#[test]
fn another_subject_in_the_same_frame_is_another_fact() {
    assert_eq!(
        verdict("Alice lives in Paris", "Bob lives in Paris"),
        Verdict::Unknown
    );
    assert_eq!(
        verdict(
            "Mira Castell once interviewed Jonas Frei for a sailing magazine",
            "Ada Lindgren, not Mira Castell, interviewed Jonas Frei for a sailing magazine"
        ),
        Verdict::Update(Why::Said)
    );
}

#[test]
fn two_facts_on_one_person_are_not_an_update() {
    let a = "Hanna Berglund is an accomplished cellist who has performed across Canada.";
    let b = "Hanna Berglund and Iris Okafor organized a charity concert.";
    assert_eq!(verdict(a, b), Verdict::Unknown);
    assert_eq!(
        verdict("User works at Acme", "User likes hiking"),
        Verdict::Unknown
    );
    assert_eq!(
        verdict("User works at Acme", "User now lives in Berlin"),
        Verdict::Unknown
    );
}

#[test]
fn two_things_done_are_two_facts() {
    assert_eq!(
        verdict(
            "A few boys are watching football",
            "A few boys are playing football"
        ),
        Verdict::Unknown
    );
    assert_eq!(
        verdict("Maria is slicing an onion", "Maria is slicing a potato"),
        Verdict::Distinct
    );
    assert_eq!(
        verdict("User is working at Acme", "User is working at Globex"),
        Verdict::Update(Why::NewValue)
    );
}

#[test]
fn a_negation_added_updates_the_statement() {
    assert_eq!(
        verdict("User likes coffee", "User does not like coffee"),
        Verdict::Update(Why::Said)
    );
    assert_eq!(
        verdict("User has a new neighbour", "User has a dog named Rex"),
        Verdict::Unknown
    );
}

#[test]
fn a_detail_added_is_not_a_new_value() {
    assert_eq!(
        verdict("User works at Acme", "User works at Acme in Berlin"),
        Verdict::Unknown
    );
}

#[test]
fn a_statement_is_its_current_part_without_now() {
    let entry = "User now works at Globex (previously: User works at Acme)";
    assert_eq!(statement(entry), "User works at Globex");
    assert_eq!(statement("Lives in Oslo"), "Lives in Oslo");
}

#[test]
fn only_the_current_part_of_an_entry_is_compared() {
    let entry = "User now works at Globex (previously: User works at Acme)";
    assert_eq!(current_part(entry), "User now works at Globex");
    assert_eq!(
        verdict(entry, "User now works at Initech"),
        Verdict::Update(Why::NewValue)
    );
}

#[test]
fn a_denial_of_what_the_older_says_updates_it() {
    for (old, new) in [
        (
            "Ravi Menon has traveled to more than 20 countries.",
            "Ravi Menon has never traveled beyond his home country.",
        ),
        (
            "Pia Novak and Lars Engel collaborated on a community garden project in 2022.",
            "Pia Novak and Lars Engel have never collaborated on a community garden project together.",
        ),
        (
            "Selma Aziz received the National Archive Award in 2021.",
            "Selma Aziz did not receive any awards in 2021.",
        ),
        (
            "User doesn't drink coffee",
            "User drinks coffee every morning",
        ),
    ] {
        assert_eq!(
            verdict(old, new),
            Verdict::Update(Why::Denied),
            "{old} / {new}"
        );
    }
}

#[test]
fn a_denial_of_something_else_of_the_same_person_updates_nothing() {
    for (old, new) in [
        // One shared word: a verb of many objects.
        (
            "User drinks coffee every morning",
            "User never drinks alcohol",
        ),
        // What it denies is attending university; the rest affirms.
        (
            "Dario Klein is known for expertise in marine geology.",
            "Dario Klein did not attend university and is entirely self-taught in marine geology.",
        ),
        // Two words of five, neither the thing done.
        (
            "Greta Holm is known for her work in folk dance education.",
            "Greta Holm has never led any educational events or training sessions for aspiring folk musicians.",
        ),
        // Two occasions.
        (
            "Alice attended the 2022 developer conference in Berlin",
            "Alice did not attend the 2023 developer conference",
        ),
        // Names are not what a denial shares.
        (
            "Alice Smith works with Bob Jones",
            "Alice Smith never met Bob Jones",
        ),
        (
            "User's sister lives in Denver",
            "User's sister never liked the cold",
        ),
    ] {
        assert_ne!(
            verdict(old, new),
            Verdict::Update(Why::Denied),
            "{old} / {new}"
        );
    }
}

#[test]
fn every_denial_of_a_clause_is_read_not_only_the_first() {
    let old = "Lena Ortiz has led painting workshops for teenagers in Ohio.";
    let new =
        "Lena Ortiz has never lived in Ohio and has not led any painting workshops for teenagers.";
    assert_eq!(verdict(old, new), Verdict::Update(Why::Denied));
}

#[test]
fn a_denial_covers_its_own_clause_and_says_what_not_when() {
    for (old, new) in [
        (
            "Omar finds it rewarding to make a difference in the neighbourhood.",
            "Omar decided to run for the school board again, despite not being successful before, to make a difference in his neighbourhood.",
        ),
        (
            "Lea won a really big chess tournament last week and made a lot of prize money from it.",
            "Lea did not make it to the finals of the last chess tournament.",
        ),
    ] {
        assert_ne!(
            verdict(old, new),
            Verdict::Update(Why::Denied),
            "{old} / {new}"
        );
    }
}

/// Words to build texts of from the rule's own lists: subjects, a
/// possessive, words that take many values, actions, slots, negations,
/// change words, list words and plain values.
const VOCABULARY: &[&str] = &[
    "User", "Alice", "user's", "sister", "works", "at", "Acme", "Globex", "lives", "in", "Paris",
    "Berlin", "likes", "swimming", "hiking", "has", "a", "dog", "cat", "watching", "cricket",
    "does", "not", "no", "longer", "never", "now", "moved", "to", "and", "or", "is", "tall",
    "runner", "for", "the", "paper", "on", "ethics", "named", "Rex", "30", "31", "dislikes",
];

fn text_of(picks: &[usize]) -> String {
    let words: Vec<&str> = picks
        .iter()
        .map(|&i| VOCABULARY[i % VOCABULARY.len()])
        .collect();
    words.join(" ")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// What lets the built-in judge compare a fact with only some earlier
    /// ones ([`Read::older_keys`]): the keys miss no update. `newer` is
    /// `older` with one span replaced, so that many pairs share a frame.
    #[test]
    fn every_update_shares_a_frame_key_or_needs_none(
        older in proptest::collection::vec(0usize..100, 2..11),
        at in 0usize..11,
        cut in 0usize..4,
        put in proptest::collection::vec(0usize..100, 0..4),
    ) {
        let at = at.min(older.len());
        let mut newer = older.clone();
        newer.splice(at..(at + cut).min(older.len()), put);
        let (a, b) = (text_of(&older), text_of(&newer));
        let (ra, rb) = (Read::of(&a), Read::of(&b));
        if matches!(judge_read(&ra, &rb, 1.0), Verdict::Update(_)) {
            let framed = ra.older_keys().iter().any(|k| rb.newer_keys().contains(k));
            let shares_word = !ra.keys().is_disjoint(&rb.keys());
            proptest::prop_assert!(shares_word, "{a} / {b}");
            proptest::prop_assert!(
                framed || rb.updates_unframed() || ra.updated_unframed(),
                "{a} / {b}: an update with no frame key and no side that needs none"
            );
        }
    }
}

#[test]
fn a_change_said_of_something_else_does_not_fold_two_facts_on_one_topic() {
    assert_eq!(
        verdict(
            "Priya has pet rabbits that always calm her down",
            "Priya took her rabbits to the park today and they are now asleep"
        ),
        Verdict::Unknown
    );
    assert_eq!(
        verdict(
            "Omar is determined to make his bakery work",
            "Omar is working on new recipes for the bakery"
        ),
        Verdict::Unknown
    );
    assert_eq!(
        verdict(
            "Omar works for a bakery in the old town",
            "Omar left the bakery and now works as a courier"
        ),
        Verdict::Update(Why::Said)
    );
    assert_eq!(
        verdict(
            "Mira Holt is planning a joint exhibition with her sister",
            "Mira Holt is planning a podcast with a friend instead of an exhibition"
        ),
        Verdict::Update(Why::Said)
    );
}
