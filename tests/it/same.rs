//! The tier-2 merge rule (`memd::same`) on texts whose answer is known.

use memd::same::Rule;

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
