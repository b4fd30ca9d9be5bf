use super::*;

fn fields<'a>(docs: &'a [(&'a str, &'a str)]) -> Vec<Fields<'a>> {
    docs.iter()
        .map(|(n, d)| Fields {
            name: n,
            title: "",
            description: d,
            input_schema: "",
        })
        .collect()
}

fn tuned(k1: f32, b: [f32; 3], per_field: bool) -> Tuning {
    Tuning {
        k1,
        b,
        b_from_lengths: [false; 3],
        per_field,
        name_as_written: 0.0,
        ..Tuning::default()
    }
}

/// A query word found as written in a name adds a second BM25, over names alone and their
/// words unstemmed, at `name_as_written`: stemmed, `find_issues` and `find_issue` are one
/// term, and a query for the issues would rank them by name alone.
#[test]
fn names_as_written_tell_word_forms_apart() {
    let docs = [
        ("find_issues", "In a repository."),
        ("find_issue", "In a repository."),
    ];
    let plain = tuned(2.0, [0.75, 0.0, 0.75], true);
    let written = Tuning {
        name_as_written: 0.2,
        ..plain
    };
    let build = |t| Bm25Index::build_tuned(fields(&docs), FieldWeights::default(), t);
    let (plain, written) = (build(plain), build(written));
    let before = plain.scores("the issues");
    assert_eq!(before[0], before[1]);
    let after = written.scores("the issues");
    // "=issues" is in one name of two: idf ln 2; its pseudo frequency 2 × 1 / (0.25 + 0.75 ×
    // 2 / 2), saturated with k1 2: ln 2 × 2 × 3 / (2 + 2), weighted 0.2.
    let added = 0.2 * 2f32.ln() * 1.5;
    assert!((after[0] - before[0] - added).abs() < 1e-6, "{after:?}");
    assert_eq!(after[1], before[1]);
    let singular = written.scores("an issue");
    assert!(singular[1] > singular[0], "{singular:?}");
    // Stop words are not names' words either.
    assert_eq!(written.scores("in"), vec![0.0, 0.0]);
    let explained = written.explain("the issues", 0, fields(&docs)[0]);
    let part = explained.iter().find(|t| t.as_written.is_some()).unwrap();
    assert_eq!((part.term.as_str(), part.as_written), ("issues", Some(0.2)));
    assert!((part.score - added).abs() < 1e-6);
    assert_eq!((part.fields[0].tf, part.fields[1].tf), (1.0, 0.0));
    let total: f32 = explained.iter().map(|t| t.score).sum();
    assert!((total - after[0]).abs() < 1e-6);
    assert!(written
        .explain("the issues", 1, fields(&docs)[1])
        .iter()
        .all(|t| t.as_written.is_none()));
}

#[test]
fn scores_follow_bm25f() {
    let docs = [
        ("weather_forecast", "Get the weather forecast for a city."),
        ("stock_quote", "Get a stock quote."),
        ("flight_search", "Search flights between two cities."),
    ];
    let index = Bm25Index::build_tuned(
        fields(&docs),
        FieldWeights::default(),
        tuned(1.2, [0.75, 0.5, 0.75], true),
    );
    let s = index.scores("weather in Paris");
    assert!(s[0] > 0.0 && s[1] == 0.0 && s[2] == 0.0);
    // Name lengths 2, 2, 2 (mean 2); descriptions 4 ("get weather forecast city"), 3, 4
    // ("search flights two cities"; "between" is a stop word), mean 11/3. weather: once in
    // the name (weight 2, b 0.75), once in the description (weight 1, b 0.5).
    let name_part = 2.0 * 1.0 / (0.25 + 0.75 * 2.0 / 2.0);
    let desc_part = 1.0 * 1.0 / (0.5 + 0.5 * 4.0 / (11.0 / 3.0));
    let tf = name_part + desc_part;
    let idf = (1.0f32 + (3.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
    let expected = idf * tf * 2.2 / (tf + 1.2);
    assert!((s[0] - expected).abs() < 1e-5, "{} vs {expected}", s[0]);
    let explained = index.explain("weather in Paris", 0, fields(&docs)[0]);
    assert_eq!(explained.len(), 1);
    let w = &explained[0];
    assert_eq!(w.term, "weather");
    assert!((w.score - s[0]).abs() < 1e-6);
    assert!((w.fields[0].normalized_tf - name_part).abs() < 1e-6);
    assert!((w.fields[1].normalized_tf - desc_part).abs() < 1e-6);
    assert_eq!(
        (w.fields[0].tf, w.fields[1].tf, w.fields[2].tf),
        (1.0, 1.0, 0.0)
    );
    assert_eq!((w.fields[1].length, w.fields[1].b), (4.0, 0.5));
}

/// Without BM25F, one normalization by the weighted length of the whole tool (the scorer
/// before per-field normalization), kept for the ablation.
#[test]
fn whole_document_normalization_when_not_per_field() {
    let docs = [
        ("weather_forecast", "Get the weather forecast for a city."),
        ("stock_quote", "Get a stock quote."),
        ("flight_search", "Search flights between two cities."),
    ];
    let index = Bm25Index::build_tuned(
        fields(&docs),
        FieldWeights::default(),
        tuned(1.2, [0.75; 3], false),
    );
    let s = index.scores("weather in Paris");
    // tf = 2 (name) + 1 (description); dl = 2*2 + 4; the mean of 8, 7, 8.
    let avg = 23.0 / 3.0;
    let idf = (1.0f32 + (3.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
    let expected = idf * 3.0 * 2.2 / (3.0 + 1.2 * (0.25 + 0.75 * 8.0 / avg));
    assert!((s[0] - expected).abs() < 1e-5, "{} vs {expected}", s[0]);
}

/// A term in two fields scores above the same term in either, but below the two added:
/// the fields are combined before the saturation, which is concave.
#[test]
fn fields_combine_before_saturation() {
    // Equal field lengths, so that only where "refund" is differs.
    let docs = [
        ("refund", "Refund charges."),
        ("refund_", "Undo charges."),
        ("undo", "Refund charges."),
    ];
    for k1 in [1.2, 8.0] {
        let index = Bm25Index::build_tuned(
            fields(&docs),
            FieldWeights::default(),
            tuned(k1, [0.75, 0.0, 0.75], true),
        );
        let s = index.scores("refund");
        assert!(s[0] > s[1] && s[1] > s[2] && s[2] > 0.0, "k1 {k1}: {s:?}");
        assert!(s[0] < s[1] + s[2], "k1 {k1}: {s:?}");
    }
}

#[test]
fn name_terms_weigh_double() {
    let docs = [
        ("search_flights", "Find trips."),
        ("book_trip", "Search flights."),
    ];
    let index = Bm25Index::build(fields(&docs), FieldWeights::default());
    let s = index.scores("search flights");
    assert!(s[0] > s[1]);
}

#[test]
fn schema_indexed_only_when_weighted() {
    let docs = [Fields {
        name: "create_event",
        title: "",
        description: "Create an event.",
        input_schema: "attendees Email addresses of attendees",
    }];
    let off = Bm25Index::build(
        docs,
        FieldWeights {
            input_schema: 0.0,
            ..FieldWeights::default()
        },
    );
    assert_eq!(off.scores("attendees")[0], 0.0);
    assert!(!off.indexes_schema());
    let on = Bm25Index::build(docs, FieldWeights::default());
    assert!(on.indexes_schema());
    assert!(on.scores("attendees")[0] > 0.0);
    let why = on.explain("attendees", 0, docs[0]);
    assert_eq!(why[0].fields[2].tf, 2.0);
    assert_eq!(why[0].fields[0].tf + why[0].fields[1].tf, 0.0);
}

#[test]
fn feedback_terms_follow_the_best_documents() {
    // Two documents: the better one lends more; the query's own term is left out; ties go
    // to the lower id.
    let docs = vec![
        (3.0, vec![(0u32, 1.0), (1, 1.0), (2, 2.0)]),
        (1.0, vec![(0u32, 1.0), (3, 1.0)]),
    ];
    let lent = feedback_terms(&docs, &[0], 3);
    let ids: Vec<u32> = lent.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [2, 1, 3]);
    assert!((lent[0].1 - 0.75 * 0.5).abs() < 1e-6, "{lent:?}");
    assert!(feedback_terms(&docs, &[], 0).is_empty());
    assert!(feedback_terms(&[], &[], 3).is_empty());
}

#[test]
fn top_k_breaks_ties_by_name_and_keeps_zero_scores() {
    let names = ["b", "a", "d", "c"];
    let scores = [1.0, 1.0, 0.0, 2.0];
    let hits = top_k(0..4, |d| scores[d as usize], |d| names[d as usize], 3);
    let got: Vec<&str> = hits.iter().map(|h| names[h.doc as usize]).collect();
    assert_eq!(got, ["c", "a", "b"]);
    let all = top_k(0..4, |d| scores[d as usize], |d| names[d as usize], 10);
    assert_eq!(all.len(), 4);
    assert_eq!(names[all[3].doc as usize], "d");
    assert!(top_k(0..4, |_| 0.0, |d| names[d as usize], 0).is_empty());
}

#[test]
fn top_k_gives_the_same_order_for_a_page_and_a_deep_page() {
    let names: Vec<String> = (0..500)
        .map(|i| format!("t{:03}", (i * 37) % 500))
        .collect();
    // Few distinct scores, NaN among them: ties broken by name everywhere.
    let score = |d: u32| match d % 7 {
        0 => f32::NAN,
        r => (r % 4) as f32,
    };
    let name = |d: u32| names[d as usize].as_str();
    let deep = top_k(0..500, score, name, SMALL_PAGE + 100);
    let mut all: Vec<u32> = (0..500).collect();
    let key = |d: u32| {
        if score(d).is_nan() {
            f32::NEG_INFINITY
        } else {
            score(d)
        }
    };
    all.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(name(a).cmp(name(b))));
    let deep_docs: Vec<u32> = deep.iter().map(|h| h.doc).collect();
    assert_eq!(deep_docs, all[..SMALL_PAGE + 100]);
    for limit in [1, 5, SMALL_PAGE] {
        let page = top_k(0..500, score, name, limit);
        let docs = |h: &[Hit]| h.iter().map(|h| h.doc).collect::<Vec<_>>();
        assert_eq!(docs(&page), docs(&deep[..limit]), "limit {limit}");
    }
}

#[test]
fn empty_index() {
    let index = Bm25Index::build(Vec::<Fields>::new(), FieldWeights::default());
    assert!(index.is_empty());
    assert!(index.scores("anything").is_empty());
}

#[test]
fn descriptions_are_normalized_by_how_much_their_lengths_vary() {
    // Lengths within ±50% of their mean: no normalization; a spread of 0.6 or less as well.
    assert_eq!(derived_b([10.0, 14.0, 9.0, 12.0].into_iter()), 0.0);
    // A catalog of one-liners and manuals (coefficient of variation 1.2 and more): BM25's 0.75.
    let manuals = [4.0, 5.0, 6.0, 4.0, 5.0, 400.0];
    assert_eq!(derived_b(manuals.into_iter()), B);
    // Between, linear in the coefficient of variation: lengths 1 and 3 have a CV of 0.5,
    // lengths 1 and 5 of 2/3, lengths 1 and 9 of 0.8.
    assert_eq!(derived_b([1.0, 3.0].into_iter()), 0.0);
    let b = derived_b([1.0, 9.0].into_iter());
    assert!((b - B * (0.8 - 0.6) / 0.6).abs() < 1e-6, "{b}");
    // Tools without the field do not count; fewer than two with it: no normalization.
    assert_eq!(
        derived_b([0.0, 0.0, 10.0, 14.0, 9.0, 12.0].into_iter()),
        0.0
    );
    assert_eq!(derived_b([0.0, 500.0].into_iter()), 0.0);
    assert_eq!(derived_b(std::iter::empty()), 0.0);
}

/// Real servers' catalogs: a manual-length description mentions every topic once; a terse one
/// names its own. Normalized as the catalog's spread asks, the terse tool comes first; with the
/// description's `b` fixed at 0 (MetaTool's), the manual does.
#[test]
fn a_terse_tool_outranks_a_manual_that_mentions_the_topic_in_passing() {
    let manual = "Run a query. ".repeat(60) + "It also reads logs: logs of jobs, logs of builds.";
    let docs = [
        ("fetch_entries", "Read the logs."),
        ("execute", manual.as_str()),
        ("list_branches", "List branches."),
        ("get_me", "Who you are."),
        ("git_status", "Status of a repo."),
        ("describe", "Describe a cluster in a sentence or two."),
    ];
    let derived = Bm25Index::build(fields(&docs), FieldWeights::default());
    let fixed = Bm25Index::build_tuned(
        fields(&docs),
        FieldWeights::default(),
        Tuning {
            b_from_lengths: [false; 3],
            ..Tuning::default()
        },
    );
    let best = |index: &Bm25Index| {
        let s = index.scores("read logs");
        (0..s.len()).max_by(|&a, &b| s[a].total_cmp(&s[b])).unwrap()
    };
    assert_eq!(docs[best(&derived)].0, "fetch_entries");
    assert_eq!(docs[best(&fixed)].0, "execute");
    let explained = derived.explain("logs", 0, fields(&docs)[0]);
    let description = &explained[0].fields[1];
    assert!(description.b_from_lengths);
    assert_eq!(description.b, B);
    let explained = fixed.explain("logs", 0, fields(&docs)[0]);
    assert!(!explained[0].fields[1].b_from_lengths);
    assert_eq!(explained[0].fields[1].b, 0.0);
}

/// The term rules decide what a query and a tool share: stemmed, "issues" finds `get_issue`;
/// as written it does not. With stop words kept, "the" becomes a term both sides hold.
#[test]
fn term_rules_decide_what_a_query_shares_with_a_tool() {
    let docs = [
        ("get_issue", "Read one issue."),
        ("the_weather", "Forecast for a city."),
    ];
    let with = |stem, stop_words| {
        let tuning = Tuning {
            terms: crate::config::TermRules { stem, stop_words },
            ..Tuning::default()
        };
        Bm25Index::build_tuned(fields(&docs), FieldWeights::default(), tuning)
    };
    let shipped = with(true, true);
    assert!(shipped.scores("issues")[0] > 0.0);
    assert_eq!(shipped.scores("the")[1], 0.0);
    assert!(shipped.query_terms("the").is_empty());
    let unstemmed = with(false, true);
    assert_eq!(unstemmed.scores("issues")[0], 0.0);
    assert!(unstemmed.scores("issue")[0] > 0.0);
    let unstopped = with(true, false);
    assert!(unstopped.scores("the")[1] > 0.0);
    assert_eq!(unstopped.query_terms("the")[0].0, "the");
}
