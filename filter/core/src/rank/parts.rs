//! The parts of a task. An agent's query is often a task of several steps ("get the failed job's
//! logs and post a summary to Slack"), and one sentence vector of the whole blends them: the
//! tools each step needs sit near neither. Each part is embedded beside the whole query, in the
//! same embeddings request, and a tool's cosine counts its best part (`rank::search`).

/// Where a task's steps meet, longest first where one begins another.
const JOINS: &[&str] = &[
    " and then ",
    ", and then ",
    ", and ",
    ", then ",
    " then ",
    " and ",
    ", ",
    "; ",
    ": ",
    " & ",
];

/// The most parts embedded for one query: a bound on the embeddings request.
pub const MAX_PARTS: usize = 4;

/// The query's parts, split where its steps meet; each holds two words or more. None when the
/// query has fewer than two such parts (one step: the whole query says it).
pub fn task_parts(query: &str) -> Vec<&str> {
    let bytes = query.as_bytes();
    let mut parts = Vec::new();
    let (mut start, mut at) = (0, 0);
    while at < bytes.len() {
        // The joins are ASCII: no byte of a longer character matches one, and `at` is at a
        // character boundary whenever one does.
        let join = JOINS.iter().find(|j| {
            bytes
                .get(at..at + j.len())
                .is_some_and(|b| b.eq_ignore_ascii_case(j.as_bytes()))
        });
        match join {
            Some(j) => {
                parts.extend(query.get(start..at));
                at += j.len();
                start = at;
            }
            None => at += 1,
        }
    }
    parts.extend(query.get(start..));
    let parts: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| p.split_whitespace().nth(1).is_some())
        .take(MAX_PARTS)
        .collect();
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
}

/// What a query is embedded from: the whole query, then each of its parts.
pub fn query_texts(query: &str) -> impl Iterator<Item = String> + '_ {
    std::iter::once(query)
        .chain(task_parts(query))
        .map(str::to_string)
}

/// The query's vector from the embeddings answer: the whole query's and its parts' laid end to
/// end (`search::Vectors::query`), taken from `vectors` in the order `query_texts` sent them.
pub fn query_vector(vectors: &mut impl Iterator<Item = Vec<f32>>, query: &str) -> Option<Vec<f32>> {
    let mut joined = vectors.next()?;
    for _ in task_parts(query) {
        joined.extend(vectors.next()?);
    }
    Some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_splits_where_its_steps_meet() {
        assert_eq!(
            task_parts("get the failed job logs of run 7 and post a summary to Slack channel C02"),
            [
                "get the failed job logs of run 7",
                "post a summary to Slack channel C02"
            ]
        );
        assert_eq!(
            task_parts("Crawl the docs with Firecrawl, then check the crawl job And then stop it"),
            [
                "Crawl the docs with Firecrawl",
                "check the crawl job",
                "stop it"
            ]
        );
        // A URL's colon is no join, and a one-word step is no part.
        assert_eq!(
            task_parts("open https://example.com/form: choose Premium; submit"),
            ["open https://example.com/form", "choose Premium"]
        );
        assert!(task_parts("open https://example.com/form; submit").is_empty());
        // One step (or words like "brand" that hold "and" without a join): no parts.
        assert!(task_parts("list brand assets").is_empty());
        assert!(task_parts("what time is it in Tokyo").is_empty());
        assert_eq!(task_parts("a b, c d, e f, g h, i j, k l").len(), MAX_PARTS);
        // Not ASCII: cut on character boundaries.
        assert_eq!(
            task_parts("évite ça et là, puis écris-moi vite"),
            ["évite ça et là", "puis écris-moi vite"]
        );
        assert_eq!(
            query_texts("read the file and write a summary").collect::<Vec<_>>(),
            [
                "read the file and write a summary",
                "read the file",
                "write a summary"
            ]
        );
        let mut answer = vec![vec![1.0], vec![2.0], vec![3.0], vec![4.0]].into_iter();
        assert_eq!(
            query_vector(&mut answer, "read the file and write it"),
            Some(vec![1.0, 2.0, 3.0])
        );
        assert_eq!(query_vector(&mut answer, "one step"), Some(vec![4.0]));
        assert_eq!(query_vector(&mut answer, "one step"), None);
        let mut short = vec![vec![1.0], vec![2.0]].into_iter();
        assert_eq!(query_vector(&mut short, "a b and c d and e f"), None);
    }
}
