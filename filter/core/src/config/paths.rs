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

/// Why a resource URI could be read as another one by the server, if it could. The SDKs read a
/// `resources/read` URI with a WHATWG URL parser and look the resource up by its serialization:
/// the TypeScript SDK by `new URL(uri).toString()`, the Python SDK through pydantic's `AnyUrl`,
/// which is pydantic-core's `PyUrl`: the `url` crate's `Url::options().parse(..)`
/// (pydantic-core src/validators/url.rs `parse_url`), whose `str()` is `Url::as_str()`
/// (src/url.rs). That reading lowercases the scheme and a special URL's host, maps the host
/// through IDNA (fullwidth letters, `U+3002`, a soft hyphen dropped), reads `0x7f.1` as
/// `127.0.0.1`, drops a default or empty port, resolves dot segments, reads `\` as `/` and
/// strips tabs and newlines. A policy decides on the URI as sent, so only a URI equal to its own
/// serialization can be decided on.
///
/// The URI is accepted only in a form whose serialization is itself by construction
/// ([`canonical_problem`]; `tests/uri_spellings.rs` checks that against the `url` crate): a
/// full parser would cost the `.wasm` more than its 1 MiB budget allows (the `url` crate adds
/// 84 KB without IDNA tables, 214 KB with them). What that form leaves out is refused though a
/// parser may keep it (IPv6 and non-ASCII hosts, characters a parser would escape in some
/// part): fail closed.
/// Beyond that, what another reader could still split differently (a server that decodes
/// escapes or fetches the URI): user information, capitals or a trailing dot in a host, dot
/// segments in an opaque path, escapes of unreserved characters and stray percent signs. A
/// resource template's expressions (RFC 6570, a completion's `ref/resource`) are read as a
/// sample of their expansion; a brace that delimits none is a problem.
pub fn resource_uri_problem(uri: &str) -> Option<&'static str> {
    let expanded = match expand_template(uri) {
        Ok(expanded) => expanded,
        Err(why) => return Some(why),
    };
    let uri = expanded.as_str();
    if let Some(why) = canonical_problem(uri) {
        return Some(why);
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

/// The URL Standard's special schemes and their default ports ("special scheme"): their hosts
/// are domains or IPv4 addresses, their paths hierarchical.
const SPECIAL_SCHEMES: [(&str, Option<u16>); 6] = [
    ("http", Some(80)),
    ("https", Some(443)),
    ("ws", Some(80)),
    ("wss", Some(443)),
    ("ftp", Some(21)),
    ("file", None),
];

/// Why `uri` might not be its own WHATWG serialization, if it might: `None` only for
/// `scheme:` + (`//` host [`:` port] path | path), query and fragment optional, where
/// - the scheme is lowercase (`[a-z][a-z0-9+.-]*`);
/// - a special scheme has `//`, a host of lowercase letters, digits and `-` in non-empty labels
///   (a last label that is a number makes it an IPv4 address, which must be in dotted decimal
///   without leading zeros; `file` has no port and no `localhost`) and a path starting with `/`;
/// - another scheme's host is the same letters, digits, `-` and `.` (no empty label);
/// - there is no user information, and a port is digits without a leading zero, at most 65535
///   and not the scheme's default;
/// - the path has no `.` or `..` segment and, like the query and the fragment, only characters
///   no part of a URL escapes or reads otherwise: ASCII letters, digits, `-._~!$&()*+,;=:@/%`
///   (`?` in a query or fragment, `'` outside a special URL's query).
///
/// Anything else (a tab, a space, `\`, non-ASCII, capitals in a host, an empty or default port,
/// `0x7f.1`, IPv6) is a problem, canonical or not.
fn canonical_problem(uri: &str) -> Option<&'static str> {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Some("no scheme");
    };
    let mut chars = scheme.bytes();
    let scheme_ok = chars.next().is_some_and(|b| b.is_ascii_lowercase())
        && chars.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b));
    if !scheme_ok {
        return Some("a scheme not in lowercase letters");
    }
    let special = SPECIAL_SCHEMES.iter().find(|(name, _)| *name == scheme);
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let kept = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&()*+,;=:@/%".contains(&b);
    let query_ok = |b: u8| kept(b) || b == b'?' || (b == b'\'' && special.is_none());
    let fragment_ok = |b: u8| kept(b) || b == b'?' || b == b'\'';
    if !query.bytes().all(query_ok) || !fragment.bytes().all(fragment_ok) {
        return Some(NOT_KEPT);
    }
    let path = match (rest.strip_prefix("//"), special) {
        (Some(after), _) => {
            let end = after.find('/').unwrap_or(after.len());
            let (authority, path) = after.split_at(end);
            if let Some(why) = authority_problem(authority, special) {
                return Some(why);
            }
            if special.is_some() && path.is_empty() {
                return Some("no path after the host (a server reads `/` there)");
            }
            path
        }
        (None, Some(_)) => return Some("a special scheme without `//` before its host"),
        (None, None) => rest,
    };
    if !path.bytes().all(|b| kept(b) || b == b'\'') {
        return Some(NOT_KEPT);
    }
    // In a file URL, a Windows drive letter (`C:`) moves to the front of the path and empties
    // the host, and the `url` crate (pydantic's) drops leading empty segments.
    let drive = path
        .strip_prefix('/')
        .and_then(|p| p.get(..2))
        .is_some_and(|d| {
            d.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) && d.ends_with(':')
        });
    if scheme == "file" && (drive || path.contains("//")) {
        return Some("a Windows drive letter or an empty segment in a file URL's path");
    }
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Some("a dot segment");
    }
    None
}

const NOT_KEPT: &str = "a character a URL parser escapes, drops or reads as another (a space, \
     control, backslash, quote, bracket, brace, `|`, `^`, a backtick or anything not ASCII)";

/// Why `host[:port]` (after `//`) might not be its own serialization, if it might.
fn authority_problem(
    authority: &str,
    special: Option<&(&str, Option<u16>)>,
) -> Option<&'static str> {
    if authority.contains('@') {
        return Some("user information (`user@`) in the authority");
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if let Some(port) = port {
        let value = port
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| port.parse::<u16>().ok())
            .flatten();
        let Some(value) = value.filter(|_| port == "0" || !port.starts_with('0')) else {
            return Some("a port that is empty, not a number below 65536, or zero-padded");
        };
        match special {
            Some((_, Some(default))) if *default == value => {
                return Some("the scheme's default port (a server drops it)")
            }
            Some(("file", _)) => return Some("a port in a file URL"),
            _ => {}
        }
    }
    let is_file = special.is_some_and(|(name, _)| *name == "file");
    if host.is_empty() {
        return match is_file {
            true if port.is_none() => None,
            _ => Some("an empty host"),
        };
    }
    let labels_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !labels_ok {
        return Some(
            "a host not in lowercase ASCII letters, digits and `-` between single dots (capitals, \
             escapes, non-ASCII, brackets, a leading or trailing dot)",
        );
    }
    // Another scheme's host is opaque: kept as written.
    special?;
    if is_file && host == "localhost" {
        return Some("`localhost` as a file URL's host (a server reads no host)");
    }
    // A host whose last label is a number is an IPv4 address (URL Standard "ends in a number"):
    // decimal, `0x` hex or octal parts, fewer than four; only dotted decimal is its own form.
    let last = host.rsplit('.').next().unwrap_or(host);
    let numeric = last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x");
    let dotted_decimal = host.split('.').count() == 4
        && host.split('.').all(|part| {
            part.bytes().all(|b| b.is_ascii_digit())
                && (part == "0" || !part.starts_with('0'))
                && part.parse::<u8>().is_ok()
        });
    if numeric && !dotted_decimal {
        return Some(
            "an IPv4 address not in dotted decimal (a server reads `0x7f.1` as `127.0.0.1`)",
        );
    }
    None
}

const NOT_AN_EXPRESSION: &str =
    "a brace that does not delimit a URI template expression (RFC 6570)";

/// `uri` with each URI template expression (RFC 6570 section 2.2) replaced by a sample of what
/// it expands to, so that the text around it can be checked as a URI; a URI without braces as
/// it is.
fn expand_template(uri: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(uri.len());
    let mut rest = uri;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(rest.get(..at).unwrap_or(""));
        let (inner, after) = rest
            .get(at..)
            .and_then(|r| r.strip_prefix('{'))
            .and_then(|r| r.split_once('}'))
            .ok_or(NOT_AN_EXPRESSION)?;
        out.push_str(expansion_sample(inner).ok_or(NOT_AN_EXPRESSION)?);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// One expansion of the expression `{inner}`: its operator's prefix and a letter (a letter is its
/// own canonical form in every part of a URL). `None` when `inner` is not an expression of
/// levels 1-4 (the operators RFC 6570 reserves, `=,!@|`, are not).
fn expansion_sample(inner: &str) -> Option<&'static str> {
    const OPERATORS: [(char, &str); 7] = [
        ('+', "z"),
        ('#', "#z"),
        ('.', ".z"),
        ('/', "/z"),
        (';', ";z"),
        ('?', "?z"),
        ('&', "&z"),
    ];
    let (sample, list) = OPERATORS
        .iter()
        .find_map(|(op, sample)| inner.strip_prefix(*op).map(|list| (*sample, list)))
        .unwrap_or(("z", inner));
    list.split(',').all(is_varspec).then_some(sample)
}

/// `varspec = varname [ ":" max-length / "*" ]`, `varname = varchar *( ["."] varchar )`,
/// `varchar = ALPHA / DIGIT / "_" / pct-encoded` (RFC 6570 section 2.3-2.4).
fn is_varspec(spec: &str) -> bool {
    let name = match spec.split_once(':') {
        Some((name, max)) => {
            let digits = (1..=4).contains(&max.len()) && max.bytes().all(|b| b.is_ascii_digit());
            if !digits || max.starts_with('0') {
                return false;
            }
            name
        }
        None => spec.strip_suffix('*').unwrap_or(spec),
    };
    let bytes = name.as_bytes();
    let mut i = 0;
    let mut after_dot = true;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'.' if !after_dot => {
                after_dot = true;
                i += 1;
                continue;
            }
            b'%' if bytes.get(i + 1).and_then(|h| hex(*h)).is_some()
                && bytes.get(i + 2).and_then(|l| hex(*l)).is_some() =>
            {
                i += 3
            }
            b if b.is_ascii_alphanumeric() || b == b'_' => i += 1,
            _ => return false,
        }
        after_dot = false;
    }
    !after_dot
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
            "hr://salaries",
            "https://internal.example.com/x",
            "https://127.0.0.1:8443/x",
            "hr://salaries:8080/x",
            "file://host/share/x",
            "https://xn--nxasmq6b.example/x",
            "file:///kb/{article}{?v}",
            "https://example.com{/path*}{#section}",
            "kb://{group.name}/{id:3}{&tags*}",
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
            "https://internal.example.com:443/x",
            "https://internal.example.com:/x",
            "hr://salaries:",
            "https://0x7f.1/x",
            "https://2130706433/x",
            "https://127.1/x",
            "https://\u{ff49}nternal.example.com/x",
            "https://internal\u{3002}example.com/x",
            "https://inter\u{ad}nal.example.com/x",
            "https://internal.example.com",
            "https:internal.example.com/x",
            "https://@internal.example.com/x",
            "hr://sala\tries",
            "hr://Salaries",
            "hr://%73alaries",
            "hr://u:p@salaries",
            "https://internal.example.com./x",
            "hr://salaries./x",
            "urn:a/../b",
            "hr://x/a\\b",
            "kb://articles/{slug",
            "kb://articles/slug}",
            "kb://articles/{}",
            "kb://articles/{=slug}",
            "kb://articles/{../x}",
            "kb://articles/{a:0}",
            "HR://{name}",
            // Canonical, but outside the form decided on (fail closed).
            "https://[::1]/x",
            "file:///C:/x",
            "file:////x",
            "file://h//x",
            "https://h/a^b",
            "urn:a|b",
            // Not canonical for a reader the filter does not share the form with.
            "file://localhost/x",
            "https://h:0443/x",
            "https://h:65536/x",
            "file://h:80/x",
            "https://1.2.3/x",
            "https://1.2.3.04/x",
            "https://a.0x1/x",
            "https://h/x?a'b",
            "https://h?q",
            "https:///h/x",
            "hr:///x",
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
