//! Text to search terms. Tool names are identifiers (`github_create_issue`, `getWeather`,
//! `s3.putObject`, `ipv4-lookup`), so words are split at every identifier boundary before the
//! usual lowercase, stop-word and stemming steps.

use crate::stem::stem;

/// Splits `text` into lowercase words at non-alphanumeric characters, camelCase humps
/// (`getHTTPResponse` → get, http, response) and letter/digit boundaries (`v2api` → v, 2, api).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        split_identifier(run, &mut out);
    }
    out
}

fn split_identifier(run: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = run.chars().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (Some(&prev), Some(&cur)) = (chars.get(i - 1), chars.get(i)) else {
            continue;
        };
        let next_is_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_is_lower)
            || (prev.is_alphabetic() && cur.is_numeric())
            || (prev.is_numeric() && cur.is_alphabetic());
        if boundary {
            push_word(chars.get(start..i), out);
            start = i;
        }
    }
    push_word(chars.get(start..), out);
}

fn push_word(chars: Option<&[char]>, out: &mut Vec<String>) {
    if let Some(chars) = chars.filter(|c| !c.is_empty()) {
        out.push(chars.iter().collect::<String>().to_lowercase());
    }
}

/// Search terms: words without English stop words, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// `terms`, with each distinct word stemmed once: a catalog repeats a few hundred words across
/// hundreds of thousands of tokens, and stemming dominated the index build.
pub fn terms_with(text: &str, stems: &mut crate::fnv::FnvHashMap<String, String>) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| match stems.get(&w) {
            Some(s) => s.clone(),
            None => {
                let s = stem(&w);
                stems.insert(w, s.clone());
                s
            }
        })
        .collect()
}

/// English function words that carry no intent in a tool request ("can you *find* me *flights*").
/// The list is the common NLTK one; measured on the MetaTool set it beats the short Lucene list
/// (see the README's evaluation section).
fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

const STOP_WORDS: [&str; 125] = [
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_boundaries() {
        assert_eq!(words("github_create_issue"), ["github", "create", "issue"]);
        assert_eq!(words("getHTTPResponse"), ["get", "http", "response"]);
        assert_eq!(words("s3.putObject"), ["s", "3", "put", "object"]);
        assert_eq!(words("ipv4-lookup"), ["ipv", "4", "lookup"]);
        assert_eq!(words("ResearchHelper"), ["research", "helper"]);
        assert_eq!(words("PDF_URLTool"), ["pdf", "url", "tool"]);
        assert_eq!(words("  Ünïcode wörds, ok?"), ["ünïcode", "wörds", "ok"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn stop_words_sorted_and_removed() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOP_WORDS.to_vec());
        assert_eq!(
            terms("Can you find me the flights to Paris?"),
            ["find", "flight", "pari"]
        );
    }
}
