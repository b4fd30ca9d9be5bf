//! The real all-MiniLM-L6-v2 against sentence-transformers' published output. These tests need
//! `make model`; without it they fail and say so.
// Test code: helpers outside #[test] functions may unwrap and panic too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{dot, encoder, max_diff, norm};
use mcp_tool_search_embedder::model::LoadError;
use mcp_tool_search_embedder::{Embed, SentenceEncoder};

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
    encoder().embed(&texts).unwrap().vectors
}

/// The model card's example: `model.encode(["This is an example sentence"])` starts with
/// 0.0677, 0.0635, 0.0487, 0.0793, 0.0374.
#[test]
fn matches_the_published_reference_vector() {
    let v = &embed(&["This is an example sentence"])[0];
    assert_eq!(v.len(), 384);
    let reference = [0.0677f32, 0.0635, 0.0487, 0.0793, 0.0374];
    for (i, (got, want)) in v.iter().zip(reference).enumerate() {
        assert!(
            (got - want).abs() < 5e-4,
            "dimension {i}: got {got:.5}, reference {want:.4} (first values: {:?})",
            &v[..5]
        );
    }
    assert!((norm(v) - 1.0).abs() < 1e-5, "norm {}", norm(v));
}

#[test]
fn counts_tokens_without_padding() {
    let texts = vec!["This is an example sentence".to_string(), "hi".to_string()];
    // [CLS] this is an example sentence [SEP] = 7, [CLS] hi [SEP] = 3.
    assert_eq!(encoder().embed(&texts).unwrap().tokens, 10);
}

#[test]
fn a_batch_gives_the_vectors_of_its_texts_alone() {
    let texts = [
        "read a file",
        "This is an example sentence",
        "Search the web for recent news articles about a topic and return the top results with \
         titles, links and short summaries; supports date ranges, languages and safe search.",
        "x",
        "Envoy proxy-wasm filter: tools/list rewriting for MCP servers",
    ];
    // More texts than one forward pass takes, in no particular length order, so the sorting
    // and grouping inside the encoder must put every vector back in its place.
    let generated: Vec<String> = (0..35)
        .map(|i| {
            format!(
                "tool {i}: {}",
                "fetch the weather forecast for a city ".repeat(i % 9)
            )
        })
        .collect();
    let texts: Vec<&str> = texts
        .iter()
        .copied()
        .chain(generated.iter().map(String::as_str))
        .collect();
    let batch = embed(&texts);
    assert_eq!(batch.len(), texts.len());
    for (text, in_batch) in texts.iter().zip(&batch) {
        let alone = &embed(&[text])[0];
        assert_eq!(in_batch.len(), 384);
        let diff = max_diff(alone, in_batch);
        assert!(diff < 1e-5, "{text:?}: padded in a batch differs by {diff}");
        assert!((norm(in_batch) - 1.0).abs() < 1e-5);
    }
}

#[test]
fn long_texts_are_truncated_at_256_tokens() {
    // Every word is one token: 254 words + [CLS] + [SEP] fill the window exactly.
    let words = |n: usize| {
        (0..n)
            .map(|i| ["alpha", "beta", "gamma", "delta"][i % 4])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let texts = vec![words(254), words(300), words(2000), words(200)];
    let out = encoder().embed(&texts).unwrap();
    assert!(max_diff(&out.vectors[0], &out.vectors[1]) < 1e-5);
    assert!(max_diff(&out.vectors[0], &out.vectors[2]) < 1e-5);
    assert!(
        max_diff(&out.vectors[0], &out.vectors[3]) > 1e-4,
        "200 words are not truncated"
    );
    assert_eq!(out.tokens, 256 * 3 + 202);
}

#[test]
fn similar_meanings_are_closer() {
    let v = embed(&[
        "read the contents of a file from disk",
        "open a file and return its text",
        "send an email to a colleague",
    ]);
    let related = dot(&v[0], &v[1]);
    let unrelated = dot(&v[0], &v[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
}

#[test]
fn unicode_and_odd_text_embed() {
    for text in ["日本語のテキスト", "   ", "🙂🙂", "a\u{0}b", "Ünïcödé ÀÇÉ"] {
        let v = &embed(&[text])[0];
        assert_eq!(v.len(), 384, "{text:?}");
        assert!(v.iter().all(|x| x.is_finite()), "{text:?}");
        assert!((norm(v) - 1.0).abs() < 1e-5, "{text:?}");
    }
}

#[test]
fn a_missing_model_says_to_run_make_model() {
    let dir = std::env::temp_dir().join("mcp-tool-search-embedder-no-model");
    let err = SentenceEncoder::load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Missing { .. }));
    let message = err.to_string();
    assert!(message.contains("make model"), "{message}");
    assert!(message.contains("model.safetensors"), "{message}");
}
