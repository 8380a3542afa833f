//! The tier-2 merge rule (`memd::duplicate`) on texts whose answer is known.

use memd::duplicate::Rule;

#[test]
fn the_subject_articles_and_a_plural_s_do_not_make_texts_different() {
    let r = Rule::SHIPPED;
    assert!(r.words_agree(
        "User loves coffee, especially flat white",
        "Loves coffee, especially flat white."
    ));
    assert!(r.words_agree("The user's dog is called Rex", "Dog is called Rex"));
}

#[test]
fn names_numbers_negations_and_order_make_texts_different() {
    let r = Rule::SHIPPED;
    assert!(!r.words_agree("Works with Anna", "Works with Annette"));
    assert!(!r.words_agree("Has 2 cats", "Has 3 cats"));
    assert!(!r.words_agree("User is vegetarian", "User is not vegetarian"));
    assert!(!r.words_agree("Bob reports to Ann", "Ann reports to Bob"));
    assert!(!r.words_agree("", "the user"));
}

#[test]
fn a_close_embedding_alone_never_merges() {
    let r = Rule::SHIPPED;
    assert!(!r.same("Likes tea", "Likes coffee", 0.99));
    assert!(!r.same("Likes tea", "Likes tea.", r.min_cosine - 0.01));
    assert!(r.same("Likes tea", "Likes tea.", r.min_cosine));
}

#[test]
fn a_leading_clause_is_said_by_the_text_that_goes_on_and_not_by_one_that_takes_it_back() {
    let r = Rule::SHIPPED;
    let part = |p: &str, w: &str| r.part_of(p, w, 1.0, 0.0);
    assert!(part(
        "Tariq lost his job at Parcel Express.",
        "Tariq lost his job at Parcel Express during the month of the conversation."
    ));
    assert!(part(
        "Sven volunteers at a food bank",
        "Sven volunteers at a food bank, which he started a year ago"
    ));
    assert!(part(
        "Aiko is allergic to peanuts",
        "Aiko is allergic to peanuts and bakes with sunflower butter"
    ));
    // Taken back, narrowed or made a condition of: not said.
    assert!(!part(
        "User likes coffee",
        "User likes coffee, but not anymore"
    ));
    assert!(!part("Was vegetarian", "Was vegetarian until 2020"));
    assert!(!part(
        "Would move to Berlin",
        "Would move to Berlin, if offered a job"
    ));
    assert!(!part("Is there", "Is there as long as he wants"));
    // Not a leading clause: a middle, a different word, too few words.
    assert!(!part(
        "Parcel Express",
        "Tariq lost his job at Parcel Express"
    ));
    assert!(
        !part("Likes coffee", "Likes coffee in the morning"),
        "two words say too little"
    );
    assert!(!part("Lives in Hamburg", "Lives in Hamburgers, Texas"));
    // The guard: a whole far from the part in meaning does not take it.
    assert!(!r.part_of(
        "Tariq lost his job at Parcel Express",
        "Tariq lost his job at Parcel Express, during the month",
        0.1,
        memd::duplicate::PART_MIN_COSINE
    ));
}
