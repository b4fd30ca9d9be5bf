//! The reference ranker the README sets beside ours: a textbook BM25 as the `bm25s` library ranks
//! with its defaults (Lucene's idf, k1 1.2, b 0.75, one field, tokens of two or more word
//! characters, lowercase, English stop words, no stemming), over the tool's name (split on
//! `_ . -` and camelCase), its description, and each top-level argument's name (split the same
//! way) and description. Deliberately not the filter's code: it shares no tokenizer, field or
//! parameter with it, so "at least as good as the reference" compares two rankers, not one with
//! itself.

use mcp_tool_search_core::Tool;
use serde_json::Value;
use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

pub struct Reference {
    names: Vec<String>,
    /// Per document, its length in tokens.
    lengths: Vec<f64>,
    avg_length: f64,
    /// Per term, (document, frequency), documents ascending.
    postings: HashMap<String, Vec<(usize, f64)>>,
}

impl Reference {
    pub fn build(tools: &[Tool]) -> Reference {
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(tools.len());
        for (doc, tool) in tools.iter().enumerate() {
            let tokens = tokens(&document(tool));
            lengths.push(tokens.len() as f64);
            let mut tf: HashMap<String, f64> = HashMap::new();
            for t in tokens {
                *tf.entry(t).or_default() += 1.0;
            }
            for (term, f) in tf {
                postings.entry(term).or_default().push((doc, f));
            }
        }
        let avg_length = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Reference {
            names: tools.iter().map(|t| t.name.to_string()).collect(),
            lengths,
            avg_length: avg_length.max(f64::MIN_POSITIVE),
            postings,
        }
    }

    /// Every tool with a positive score, best first, ties by name.
    pub fn rank(&self, query: &str) -> Vec<&str> {
        let n = self.names.len() as f64;
        let mut scores = vec![0.0f64; self.names.len()];
        let mut terms = tokens(query);
        terms.sort();
        terms.dedup();
        for term in terms {
            let Some(list) = self.postings.get(&term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let len = self.lengths.get(doc).copied().unwrap_or(0.0);
                let norm = K1 * (1.0 - B + B * len / self.avg_length);
                if let Some(s) = scores.get_mut(doc) {
                    *s += idf * tf * (K1 + 1.0) / (tf + norm);
                }
            }
        }
        let mut ranked: Vec<(f64, &str)> = scores
            .into_iter()
            .zip(&self.names)
            .filter(|(s, _)| *s > 0.0)
            .map(|(s, n)| (s, n.as_str()))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        ranked.into_iter().map(|(_, n)| n).collect()
    }
}

/// The text a tool is indexed by.
fn document(tool: &Tool) -> String {
    let mut text = format!("{} {}", split_name(&tool.name), tool.description);
    let definition: Value = serde_json::from_str(tool.definition()).unwrap_or(Value::Null);
    if let Some(properties) = definition
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            text.push(' ');
            text.push_str(&split_name(name));
            if let Some(d) = schema.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.push_str(d);
            }
        }
    }
    text
}

/// `list_pullRequests` → `list pull Requests`.
fn split_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '.' | '-') {
            out.push(' ');
        } else {
            if c.is_uppercase() && prev.is_some_and(char::is_lowercase) {
                out.push(' ');
            }
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// `(?u)\b\w\w+\b`, lowercased, English stop words removed.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// bm25s's English list (as scikit-learn's short one): the words it drops by default.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];
