//! Request paths as an MCP server will route them. A path the filter compares as a plain string
//! but the server decodes to its MCP endpoint (`/%6dcp`, `//mcp`, `/a/../mcp`, `/MCP` on a
//! case-insensitive router) would carry calls past every policy, so the filter compares paths
//! after the union of what common servers undo: the comparison over-matches on purpose.

/// Percent-decoding rounds: a server that decodes twice must not see `/mcp` where we saw
/// something else; past this many rounds the path is treated as still encoded.
const DECODE_ROUNDS: usize = 4;

/// `path` (the `:path` pseudo-header) in the form the filter compares: query and fragment cut,
/// percent-decoded until stable, `\` read as `/`, `;parameters` dropped from each segment
/// (servlet containers do), empty and `.` segments dropped, `..` applied, ASCII lowercase, no
/// trailing slash. Always starts with `/`.
pub fn normalize(path: &str) -> String {
    let decoded = decode(path);
    segments(cut(&decoded), true)
}

/// Every form of `path` some server could route on: [`normalize`]'s; the same without cutting at
/// a `?` or `#` that only decoding revealed (a URL parser resolves `/x%3f/../mcp` to `/mcp`);
/// and the same with `..` kept as a segment (a prefix router matches `/mcp/%2e%2e` under
/// `/mcp`). A request is MCP traffic when any of them is an MCP path or lies under one. The
/// first is [`normalize`]'s.
pub fn candidates(path: &str) -> [String; 3] {
    let decoded = decode(path);
    [
        segments(cut(&decoded), true),
        segments(&decoded, true),
        segments(cut(&decoded), false),
    ]
}

/// Why a resource URI could be read as another one by the server, if it could. Servers look a
/// resource up by its URI normalized (the TypeScript SDK by `new URL(uri).toString()`, RFC 3986
/// section 6: scheme and host lowercased, dot segments removed, unreserved characters decoded);
/// a policy decides on the URI as sent, so only a URI that normalization leaves unchanged (and
/// that no reader could split differently) can be decided on.
pub fn resource_uri_problem(uri: &str) -> Option<&'static str> {
    if uri
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return Some("a control character, space or backslash");
    }
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Some("no scheme");
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    if !scheme_ok {
        return Some("a scheme not in lowercase letters");
    }
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let path = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            let authority = after.get(..end).unwrap_or("");
            if authority
                .chars()
                .any(|c| c.is_ascii_uppercase() || c == '@' || c == '%')
            {
                return Some("an authority with capitals, user information or escapes");
            }
            after.get(end..).unwrap_or("")
        }
        None => rest,
    };
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Some("a dot segment");
    }
    let bytes = uri.as_bytes();
    for (i, _) in uri.match_indices('%') {
        let decoded = bytes
            .get(i + 1)
            .and_then(|h| hex(*h))
            .zip(bytes.get(i + 2).and_then(|l| hex(*l)))
            .map(|(h, l)| h << 4 | l);
        match decoded {
            Some(b) if b.is_ascii_alphanumeric() || b"-._~/\\".contains(&b) => {
                return Some("an escaped character that decodes to an unreserved one or a slash");
            }
            Some(_) => {}
            None => return Some("a stray percent sign"),
        }
    }
    None
}

/// A parameter of the path's query string (`name=value`, `+` read as a space, percent-decoded
/// once); the first when repeated.
pub fn query_param(path: &str, name: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or("");
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| {
            let value = value.replace('+', " ");
            let bytes = percent_decode(value.as_bytes()).unwrap_or_else(|| value.into_bytes());
            String::from_utf8_lossy(&bytes).into_owned()
        })
    })
}

/// The path cut at the first `?` or `#`.
fn cut(path: &str) -> &str {
    path.split(['?', '#']).next().unwrap_or("")
}

/// The raw query and fragment cut, then percent-decoded until stable, `\` read as `/`.
fn decode(path: &str) -> String {
    let mut bytes = cut(path).as_bytes().to_vec();
    for _ in 0..DECODE_ROUNDS {
        match percent_decode(&bytes) {
            Some(decoded) => bytes = decoded,
            None => break,
        }
    }
    String::from_utf8_lossy(&bytes).replace('\\', "/")
}

/// `/`-joined segments: `;parameters` dropped, surrounding blanks trimmed, empty and `.`
/// segments dropped, `..` applied (or kept, when `resolve` is false), ASCII lowercase.
fn segments(text: &str, resolve: bool) -> String {
    let mut out: Vec<String> = Vec::new();
    for segment in text.split('/') {
        let segment = segment.split(';').next().unwrap_or("");
        let segment = segment.trim_matches(|c: char| c.is_whitespace() || c.is_control());
        match segment {
            "" | "." => {}
            ".." if resolve => {
                out.pop();
            }
            s => out.push(s.to_ascii_lowercase()),
        }
    }
    format!("/{}", out.join("/"))
}

/// One round of percent-decoding; `None` when nothing was encoded.
fn percent_decode(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = bytes.get(i + 1).and_then(|c| hex(*c));
            let lo = bytes.get(i + 2).and_then(|c| hex(*c));
            if let (Some(hi), Some(lo)) = (hi, lo) {
                out.push(hi << 4 | lo);
                changed = true;
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_a_server_routes_to_mcp_compares_as_mcp() {
        for path in [
            "/mcp",
            "/mcp/",
            "/mcp?x=1",
            "/mcp#f",
            "/%6dcp",
            "/%6Dcp",
            "/%256dcp",
            "/%2fmcp",
            "//mcp",
            "///mcp//",
            "/./mcp",
            "/a/../mcp",
            "/a/%2e%2e/mcp",
            "/../mcp",
            "/MCP",
            "/Mcp/",
            "/mcp;jsessionid=1",
            "\\mcp",
            "/x\\..\\mcp",
            "/mcp%20",
            "/mcp%00",
            "/mcp%3fx",
        ] {
            assert_eq!(normalize(path), "/mcp", "{path}");
        }
    }

    #[test]
    fn candidates_cover_prefix_routers_and_url_parsers() {
        assert_eq!(candidates("/x%3f/../mcp")[1], "/mcp");
        assert_eq!(candidates("/mcp/%2e%2e")[2], "/mcp/..");
        assert_eq!(candidates("/mcp/%2e%2e")[0], "/");
        assert_eq!(candidates("/mcp?a=/../b")[1], "/mcp");
    }

    #[test]
    fn resource_uris_are_decided_on_only_in_canonical_form() {
        for ok in [
            "file:///kb/refunds.md",
            "kb://articles/{slug}",
            "demo://resource/static/document/architecture.md",
            "https://example.com/a%20b?q=A#F",
            "urn:isbn:0451450523",
        ] {
            assert_eq!(resource_uri_problem(ok), None, "{ok}");
        }
        for bad in [
            "file:///a/../b",
            "file:///a/./b",
            "file:///a/%2E%2E/b",
            "file:///a/%2fb",
            "file:///a\\b",
            "File:///a",
            "https://Example.com/a",
            "https://u@example.com/a",
            "file:///%41",
            "file:///a%",
            "no-scheme",
            "file:///a b",
        ] {
            assert!(resource_uri_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn query_parameters_are_decoded_once() {
        let p = "/mcp/search/groups?query=post+a%20message&namespace=a%2526b#x";
        assert_eq!(query_param(p, "query").as_deref(), Some("post a message"));
        assert_eq!(query_param(p, "namespace").as_deref(), Some("a%26b"));
        assert_eq!(query_param(p, "limit"), None);
        assert_eq!(query_param("/mcp/search/groups", "query"), None);
    }

    #[test]
    fn other_paths_stay_apart() {
        assert_eq!(normalize("/v2/mcp"), "/v2/mcp");
        assert_eq!(normalize("/mcpx"), "/mcpx");
        assert_eq!(normalize("/mcp/search"), "/mcp/search");
        assert_eq!(normalize(""), "/");
        assert_eq!(normalize("/%zz"), "/%zz");
        assert_eq!(normalize("/%"), "/%");
        assert_eq!(normalize("/%e2%82"), "/\u{fffd}");
    }
}
