//! `*` globs for tool names and namespaces: the only wildcard operators need, and one that
//! cannot be mistaken for a regular expression.

/// A compiled `*` glob. `*` matches any run of characters (including none); everything else
/// matches itself, case-sensitively, because MCP tool names are case-sensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    parts: Vec<String>,
}

impl Glob {
    pub fn new(pattern: &str) -> Self {
        Glob {
            source: pattern.to_string(),
            parts: pattern.split('*').map(str::to_string).collect(),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether every text matches (the pattern is made of `*` only).
    pub fn matches_everything(&self) -> bool {
        self.parts.len() > 1 && self.parts.iter().all(String::is_empty)
    }

    pub fn matches(&self, text: &str) -> bool {
        let (first, rest) = match self.parts.split_first() {
            Some(split) => split,
            None => return text.is_empty(),
        };
        let Some(mut remaining) = text.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            // No `*` at all: the pattern is a literal.
            return remaining.is_empty();
        };
        for part in middle {
            match remaining.find(part.as_str()) {
                Some(at) => remaining = remaining.get(at + part.len()..).unwrap_or(""),
                None => return false,
            }
        }
        remaining.len() >= last.len() && remaining.ends_with(last.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn literal_and_wildcards() {
        assert!(Glob::new("github_get_issue").matches("github_get_issue"));
        assert!(!Glob::new("github_get_issue").matches("github_get_issues"));
        assert!(Glob::new("github_*").matches("github_"));
        assert!(Glob::new("github_*").matches("github_list_issues"));
        assert!(!Glob::new("github_*").matches("gitlab_list"));
        assert!(Glob::new("*_issue").matches("github_get_issue"));
        assert!(Glob::new("*").matches(""));
        assert!(Glob::new("a*b*c").matches("abc"));
        assert!(Glob::new("a*b*c").matches("axxbyyc"));
        assert!(!Glob::new("a*b*c").matches("axxcyyb"));
        assert!(!Glob::new("ab*ba").matches("aba"));
        assert!(Glob::new("*get*").matches("github_get_issue"));
    }
}
