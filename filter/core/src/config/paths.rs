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
    let raw = path.split(['?', '#']).next().unwrap_or("");
    let mut bytes = raw.as_bytes().to_vec();
    for _ in 0..DECODE_ROUNDS {
        match percent_decode(&bytes) {
            Some(decoded) => bytes = decoded,
            None => break,
        }
    }
    // A query or fragment marker that appears only after decoding is part of the path to the
    // server, but cutting there too keeps the comparison over-inclusive.
    let text = String::from_utf8_lossy(&bytes).replace('\\', "/");
    let text = text.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<String> = Vec::new();
    for segment in text.split('/') {
        let segment = segment.split(';').next().unwrap_or("");
        let segment = segment.trim_matches(|c: char| c.is_whitespace() || c.is_control());
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s.to_ascii_lowercase()),
        }
    }
    format!("/{}", segments.join("/"))
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
