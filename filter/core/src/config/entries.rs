//! The kinds of MCP catalog entries the filter lists, searches and authorizes: tools, prompts,
//! resources and resource templates (spec 2025-11-25 "Server Features"), each with the method
//! that lists it, the result member that holds it and the field that names it. Where each
//! kind's catalog is kept (`Entry::catalog_key`) is spelled with the shared-data keys
//! (`store::keys`).

/// A kind of catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Entry {
    #[default]
    Tool,
    Prompt,
    Resource,
    ResourceTemplate,
}

impl Entry {
    pub const ALL: [Entry; 4] = [
        Entry::Tool,
        Entry::Prompt,
        Entry::Resource,
        Entry::ResourceTemplate,
    ];

    /// The kind a list method lists.
    pub fn of_list_method(method: &str) -> Option<Entry> {
        Entry::ALL.into_iter().find(|e| e.list_method() == method)
    }

    pub fn list_method(self) -> &'static str {
        match self {
            Entry::Tool => "tools/list",
            Entry::Prompt => "prompts/list",
            Entry::Resource => "resources/list",
            Entry::ResourceTemplate => "resources/templates/list",
        }
    }

    /// The list result's member that holds the entries.
    pub fn list_member(self) -> &'static str {
        match self {
            Entry::Tool => "tools",
            Entry::Prompt => "prompts",
            Entry::Resource => "resources",
            Entry::ResourceTemplate => "resourceTemplates",
        }
    }

    /// The field that names an entry: what a call, `prompts/get` or `resources/read` names it
    /// by, and what authorization globs match.
    pub fn key_field(self) -> &'static str {
        match self {
            Entry::Tool | Entry::Prompt => "name",
            Entry::Resource => "uri",
            Entry::ResourceTemplate => "uriTemplate",
        }
    }

    /// The type a search result says it is.
    pub fn type_name(self) -> &'static str {
        match self {
            Entry::Tool => "tool",
            Entry::Prompt => "prompt",
            Entry::Resource => "resource",
            Entry::ResourceTemplate => "resource_template",
        }
    }
}

/// What a search looks for (`type`): one kind, resources with their templates, or everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchType {
    #[default]
    Tool,
    Prompt,
    Resource,
    All,
}

impl SearchType {
    pub fn parse(text: &str) -> Option<SearchType> {
        match text {
            "tool" => Some(SearchType::Tool),
            "prompt" => Some(SearchType::Prompt),
            "resource" => Some(SearchType::Resource),
            "all" => Some(SearchType::All),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SearchType::Tool => "tool",
            SearchType::Prompt => "prompt",
            SearchType::Resource => "resource",
            SearchType::All => "all",
        }
    }

    pub fn entries(self) -> &'static [Entry] {
        match self {
            SearchType::Tool => &[Entry::Tool],
            SearchType::Prompt => &[Entry::Prompt],
            SearchType::Resource => &[Entry::Resource, Entry::ResourceTemplate],
            SearchType::All => &Entry::ALL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_name_their_kind() {
        for entry in Entry::ALL {
            assert_eq!(Entry::of_list_method(entry.list_method()), Some(entry));
        }
        assert_eq!(Entry::of_list_method("tools/call"), None);
        assert_eq!(SearchType::parse("resource").unwrap().entries().len(), 2);
        assert_eq!(SearchType::parse("tools"), None);
    }
}
