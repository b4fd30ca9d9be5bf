//! Resource URIs as servers read them (issue 30, class 6). The Python SDK reads a `resources/read`
//! URI through pydantic's `AnyUrl` and the TypeScript SDK through `new URL`: both are WHATWG URL
//! parsers, which lowercase the scheme and a special URL's host, map its host through IDNA
//! (fullwidth letters, `U+3002` as a dot, a soft hyphen dropped), read IPv4 hosts in every
//! numeric form, drop a default or empty port, resolve dot segments, read `\` as `/` and strip
//! tabs and newlines. A policy that matched the URI as sent would deny `hr://salaries` and let
//! `hr://salaries:` reach the same resource.
//!
//! Differential over generated spellings of denied and allowed resources: every spelling a server
//! reads as a denied resource never reaches the upstream; every spelling that is its own
//! canonical form is decided by the rules on it as sent. Natively, through `http::exchange`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{resource_uri_problem, Caller, RequestHead};
use serde_json::{json, Value};
use support::*;

const UPSTREAM: &[u8] = br#"{"jsonrpc":"2.0","id":5,"result":{"from":"upstream"}}"#;
const POLICY: &str = r#"{"authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"effect":"deny",
              "resources":["https://internal.example.com/*","https://127.0.0.1/*","hr://salaries"]},
             {"claim":"roles","values":["support"],"resources":["*"]}],
    "default":"deny"}}"#;

/// The resources the rules deny, in canonical form.
const DENIED: [&str; 3] = [
    "https://internal.example.com/x",
    "https://127.0.0.1/x",
    "hr://salaries",
];
/// Resources of the same shapes the rules allow.
const ALLOWED: [&str; 3] = [
    "https://public.example.com/x",
    "https://127.0.0.2/x",
    "hr://benefits",
];

/// A resource URI in parts: `scheme://host path` (no port, user information, query).
#[derive(Clone, Copy)]
struct Target {
    scheme: &'static str,
    host: &'static str,
    path: &'static str,
}

impl Target {
    fn of(uri: &'static str) -> Target {
        let (scheme, rest) = uri.split_once("://").unwrap();
        let (host, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
        Target { scheme, host, path }
    }
    fn uri(&self) -> String {
        self.with(self.scheme, "", self.host, "", self.path)
    }
    fn with(&self, scheme: &str, userinfo: &str, host: &str, port: &str, path: &str) -> String {
        format!("{scheme}://{userinfo}{host}{port}{path}")
    }
    /// A scheme whose host a WHATWG parser reads as a domain or an IPv4 address (URL Standard
    /// "special scheme"); any other scheme's host is opaque and kept as written.
    fn special(&self) -> bool {
        self.scheme == "https"
    }
    fn ipv4(&self) -> bool {
        self.host.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    }
}

/// One spelling of a target.
struct Spelling {
    uri: String,
    how: String,
    /// Whether a WHATWG reader (the SDKs') reads it as the target itself.
    same: bool,
    /// Canonical (its WHATWG serialization is itself) yet refused on purpose: a reader other
    /// than WHATWG's could split it differently (user information, escapes of unreserved
    /// characters, capitals or escapes in an opaque host, `\` in a non-special URL).
    refused_anyway: bool,
}

fn fullwidth(c: char) -> char {
    if c.is_ascii_graphic() {
        char::from_u32(c as u32 - 0x21 + 0xff01).unwrap()
    } else {
        c
    }
}

/// Every spelling the generators make of `t`.
fn spellings(t: Target) -> Vec<Spelling> {
    let mut out = Vec::new();
    let mut add = |uri: String, how: &str, same: bool, refused_anyway: bool| {
        out.push(Spelling {
            uri,
            how: how.to_string(),
            same,
            refused_anyway,
        })
    };
    let (scheme, host, path) = (t.scheme, t.host, t.path);
    let sp = t.special();
    add(t.uri(), "as listed", true, false);

    // The scheme's case: WHATWG lowercases it.
    add(
        t.with(&scheme.to_uppercase(), "", host, "", path),
        "scheme in capitals",
        true,
        false,
    );
    let first = scheme[..1].to_uppercase() + &scheme[1..];
    add(
        t.with(&first, "", host, "", path),
        "scheme capitalized",
        true,
        false,
    );

    // The host's case: a special URL's host is lowercased, an opaque host is kept.
    if !t.ipv4() {
        add(
            t.with(scheme, "", &host.to_uppercase(), "", path),
            "host in capitals",
            sp,
            !sp,
        );
        let h = host[..1].to_uppercase() + &host[1..];
        add(
            t.with(scheme, "", &h, "", path),
            "host capitalized",
            sp,
            !sp,
        );
    }

    // IDNA (UTS 46) maps fullwidth forms and ideographic full stops, and ignores a soft hyphen
    // and variation selectors, in a special URL's host; an opaque host is percent-encoded.
    let full: String = host.chars().map(fullwidth).collect();
    add(
        t.with(scheme, "", &full, "", path),
        "host in fullwidth letters",
        sp,
        false,
    );
    let one: String = host
        .chars()
        .take(1)
        .map(fullwidth)
        .chain(host.chars().skip(1))
        .collect();
    add(
        t.with(scheme, "", &one, "", path),
        "one fullwidth letter",
        sp,
        false,
    );
    for (dot, name) in [
        ('\u{3002}', "U+3002"),
        ('\u{ff0e}', "U+FF0E"),
        ('\u{ff61}', "U+FF61"),
    ] {
        if host.contains('.') {
            let h = host.replace('.', &dot.to_string());
            add(
                t.with(scheme, "", &h, "", path),
                &format!("{name} for the dots"),
                sp,
                false,
            );
        }
    }
    for (ignored, name) in [
        ('\u{ad}', "a soft hyphen"),
        ('\u{fe0f}', "a variation selector"),
    ] {
        for at in [1, host.len() - 1] {
            let h = format!("{}{ignored}{}", &host[..at], &host[at..]);
            add(
                t.with(scheme, "", &h, "", path),
                &format!("{name} in the host"),
                sp,
                false,
            );
        }
    }
    // A special URL's host is percent-decoded before IDNA; an opaque host keeps the escape.
    let h = format!("%{:02X}{}", host.as_bytes()[0], &host[1..]);
    add(
        t.with(scheme, "", &h, "", path),
        "host's first letter escaped",
        sp,
        !sp,
    );
    let h = format!("%{:02x}{}", host.as_bytes()[0], &host[1..]);
    add(
        t.with(scheme, "", &h, "", path),
        "host's first letter escaped (lowercase hex)",
        sp,
        !sp,
    );
    // A trailing dot: the same IPv4 address; another domain to a URL parser, but the same one
    // to DNS (a server that fetches the URI reaches the same host), so the filter refuses it.
    let ip = sp && t.ipv4();
    add(
        t.with(scheme, "", &format!("{host}."), "", path),
        "host with a trailing dot",
        ip,
        !ip,
    );

    // IPv4 in every form the URL Standard's IPv4 parser reads (decimal, hex, octal, fewer parts).
    if t.ipv4() {
        let parts: Vec<u32> = host.split('.').map(|p| p.parse().unwrap()).collect();
        let n = parts.iter().fold(0u32, |acc, p| acc << 8 | p);
        let [a, b, c, d] = [parts[0], parts[1], parts[2], parts[3]];
        let forms = [
            format!("{n}"),
            format!("0x{n:x}"),
            format!("0X{n:X}"),
            format!("0{n:o}"),
            format!("{a}.{}", b << 16 | c << 8 | d),
            format!("{a}.{b}.{}", c << 8 | d),
            format!("0x{a:x}.{}", b << 16 | c << 8 | d),
            format!("0{a:o}.{b}.{c}.{d}"),
            format!("0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}"),
            format!("0x0000{a:x}.{b}.{c}.{d}"),
            format!("{a}.{b}.{c}.0{d:o}"),
            format!("{a}.0x{b:x}.{c}.{d}"),
        ];
        for form in forms {
            add(
                t.with(scheme, "", &form, "", path),
                &format!("IPv4 as {form}"),
                true,
                false,
            );
        }
        // Fullwidth digits and ideographic dots reach the IPv4 parser through IDNA.
        let h: String = format!("{n}").chars().map(fullwidth).collect();
        add(
            t.with(scheme, "", &h, "", path),
            "IPv4 as a fullwidth number",
            true,
            false,
        );
    }

    // Ports: the default and an empty one are dropped; a non-special scheme has no default.
    if sp {
        add(
            t.with(scheme, "", host, ":443", path),
            "the default port",
            true,
            false,
        );
        add(
            t.with(scheme, "", host, ":0443", path),
            "the default port, zero-padded",
            true,
            false,
        );
        add(
            t.with(scheme, "", host, ":8443", path),
            "another port",
            false,
            false,
        );
    } else {
        add(
            t.with(scheme, "", host, ":80", path),
            "a port",
            false,
            false,
        );
    }
    add(
        t.with(scheme, "", host, ":", path),
        "an empty port (a trailing colon)",
        true,
        false,
    );

    // User information: empty is dropped; otherwise it stays, and the filter refuses it.
    add(
        t.with(scheme, "@", host, "", path),
        "empty user information",
        true,
        false,
    );
    add(
        t.with(scheme, ":@", host, "", path),
        "empty user and password",
        true,
        false,
    );
    add(t.with(scheme, "u@", host, "", path), "a user", false, true);
    add(
        t.with(scheme, "u:p@", host, "", path),
        "a user and password",
        false,
        true,
    );

    // Slashes after the scheme: a special URL ignores how many there are, and which way.
    if sp {
        for sep in [":", ":/", ":///", ":\\\\", ":/\\", ":\\/"] {
            add(
                format!("{scheme}{sep}{host}{path}"),
                &format!("{sep:?} after the scheme"),
                true,
                false,
            );
        }
    } else {
        add(
            format!("{scheme}:{host}"),
            "no slashes after the scheme",
            false,
            false,
        );
    }

    // The path: dot segments resolved (escaped too), `\` read as `/` in a special URL, escapes
    // of unreserved characters kept (so refused by the filter, though no server confuses them).
    if let Some(rest) = path.strip_prefix('/') {
        for dots in [
            "/./",
            "/a/../",
            "/%2e/",
            "/a/%2e%2E/",
            "/.%2e/",
            "/../",
            "/a/b/../../",
        ] {
            add(
                t.with(scheme, "", host, "", &format!("{dots}{rest}")),
                &format!("dot segments {dots}"),
                true,
                false,
            );
        }
        add(
            t.with(scheme, "", host, "", &format!("\\{rest}")),
            "a backslash for the slash",
            sp,
            !sp,
        );
        let escaped = format!("/%{:02X}{}", rest.as_bytes()[0], &rest[1..]);
        add(
            t.with(scheme, "", host, "", &escaped),
            "an escaped letter in the path",
            false,
            true,
        );
        add(
            t.with(scheme, "", host, "", &format!("{path}/.")),
            "a trailing dot segment",
            false,
            false,
        );
        add(
            t.with(scheme, "", host, "", &format!("{path}?")),
            "an empty query",
            false,
            false,
        );
        add(
            t.with(scheme, "", host, "", &format!("{path}#")),
            "an empty fragment",
            false,
            false,
        );
    } else {
        // An empty path: what a dot segment or a slash would add is another URI.
        add(
            t.with(scheme, "", host, "", "/"),
            "a trailing slash",
            false,
            false,
        );
        add(
            t.with(scheme, "", host, "", "/."),
            "a dot segment",
            false,
            false,
        );
        add(
            t.with(scheme, "", host, "", "?"),
            "an empty query",
            false,
            false,
        );
    }

    // Tabs and newlines anywhere are removed; C0 controls and spaces around the URI trimmed.
    let plain = t.uri();
    for (i, _) in plain.char_indices().skip(1) {
        for c in ['\t', '\n', '\r'] {
            let uri = format!("{}{c}{}", &plain[..i], &plain[i..]);
            add(uri, &format!("{c:?} at {i}"), true, false);
        }
    }
    for (before, after) in [
        (" ", ""),
        ("", " "),
        ("\u{0}", ""),
        ("", "\u{1f}"),
        ("\u{c}", "\u{b}"),
    ] {
        add(
            format!("{before}{plain}{after}"),
            &format!("{before:?} before, {after:?} after"),
            true,
            false,
        );
    }
    out
}

/// What the filter did with a `resources/read` (or subscription) of `uri`.
#[derive(Debug, PartialEq)]
enum Decision {
    /// Reached the upstream as sent.
    Forwarded,
    /// Answered `Resource not found` by the filter (a rule denies it).
    Denied,
    /// 400, -32600: not decided on (a URI read in more than one way).
    Unreadable,
}

fn support_caller() -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", "support"),
        ..post("/mcp")
    }
}

fn decide(env: &mut TestEnv, method: &str, params: Value) -> Decision {
    let body = json!({"jsonrpc":"2.0","id":5,"method":method,"params":params}).to_string();
    let out = exchange(
        env,
        support_caller(),
        body.as_bytes(),
        ("200", "application/json", &[UPSTREAM]),
    );
    match out {
        Outcome::Upstream { .. } => {
            assert_eq!(sent_upstream().unwrap(), body.into_bytes());
            Decision::Forwarded
        }
        Outcome::Local { status, body, .. } => {
            assert_eq!(sent_upstream(), None);
            let reply: Value = serde_json::from_slice(&body).unwrap();
            match (status, reply["error"]["code"].as_i64()) {
                (200, Some(-32002)) => Decision::Denied,
                (400, Some(-32600)) => {
                    let message = reply["error"]["message"].as_str().unwrap();
                    assert!(message.contains("resource URI"), "{message}");
                    Decision::Unreadable
                }
                other => panic!("{method} {params}: {other:?} {reply}"),
            }
        }
        Outcome::Held => panic!("{method} {params}: held"),
    }
}

/// The URI's WHATWG serialization (the `url` crate, with the IDNA tables pydantic-core has too),
/// or `None` when it does not parse there.
fn canonical(uri: &str) -> Option<String> {
    url::Url::parse(uri).ok().map(String::from)
}

fn denied(uri: &str) -> bool {
    DENIED.contains(&uri)
        || uri.starts_with("https://internal.example.com/")
        || uri.starts_with("https://127.0.0.1/")
}

#[test]
fn every_spelling_a_server_reads_as_a_denied_resource_is_refused() {
    let mut env = TestEnv::new(POLICY);
    let mut count = 0;
    let mut failures = Vec::new();
    let mut breaches = Vec::new();
    for (uri, is_denied) in DENIED
        .iter()
        .map(|u| (*u, true))
        .chain(ALLOWED.iter().map(|u| (*u, false)))
    {
        let target = Target::of(uri);
        for s in spellings(target) {
            // The generator's claim, checked against the `url` crate.
            if let Some(c) = canonical(&s.uri) {
                assert_eq!(
                    c == uri,
                    s.same,
                    "{uri}: {} {:?} reads as {c}",
                    s.how,
                    s.uri
                );
            }
            // Not its own serialization (every other spelling of the target is not), or one a
            // reader other than WHATWG's could split otherwise: refused.
            let expected =
                if canonical(&s.uri).as_deref() != Some(s.uri.as_str()) || s.refused_anyway {
                    Decision::Unreadable
                } else if denied(&s.uri) {
                    Decision::Denied
                } else {
                    Decision::Forwarded
                };
            for method in [
                "resources/read",
                "resources/subscribe",
                "resources/unsubscribe",
            ] {
                count += 1;
                let got = decide(&mut env, method, json!({"uri": s.uri}));
                // The property itself: what a server reads as a denied resource never reaches it.
                if s.same && is_denied && got == Decision::Forwarded {
                    breaches.push(format!("{method} {:?} ({} of {uri})", s.uri, s.how));
                }
                if got != expected {
                    failures.push(format!(
                        "{method} {:?} ({} of {uri}): {got:?}, want {expected:?}",
                        s.uri, s.how
                    ));
                }
            }
        }
    }
    assert!(
        breaches.is_empty(),
        "{} of {count} read a denied resource upstream:\n{}",
        breaches.len(),
        breaches.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} of {count}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count > 1000, "{count}");
}

/// The rules are written in canonical form and match canonical URIs as sent: a deny glob holds
/// for every canonical URI under it, whatever its path, query or fragment, and an allowed
/// canonical URI next to it passes.
#[test]
fn deny_globs_match_canonical_uris() {
    let mut env = TestEnv::new(POLICY);
    for uri in [
        "https://internal.example.com/",
        "https://internal.example.com/x",
        "https://internal.example.com/a/b.json",
        "https://internal.example.com/x?q=1",
        "https://internal.example.com/x#top",
        "https://internal.example.com/a%20b",
        "https://127.0.0.1/admin",
        "hr://salaries",
    ] {
        assert_eq!(canonical(uri).as_deref(), Some(uri), "{uri} is canonical");
        assert_eq!(
            decide(&mut env, "resources/read", json!({"uri": uri})),
            Decision::Denied,
            "{uri}"
        );
    }
    for uri in [
        "https://internal.example.com.evil/x",
        "https://internal.example.com:8443/x",
        "https://127.0.0.10/x",
        "hr://salaries/2026",
        "hr://salaries?x",
        "kb://articles/refunds",
        "file:///kb/refunds.md",
        "urn:isbn:0451450523",
    ] {
        assert_eq!(canonical(uri).as_deref(), Some(uri), "{uri} is canonical");
        assert_eq!(
            decide(&mut env, "resources/read", json!({"uri": uri})),
            Decision::Forwarded,
            "{uri}"
        );
    }
}

/// A completion's `ref/resource` names a template (RFC 6570): its expressions are read as
/// placeholders and the rest must be canonical, as a resource URI must.
#[test]
fn template_refs_are_canonical_around_their_expressions() {
    let mut env = TestEnv::new(POLICY);
    let complete = |uri: &str| json!({"ref":{"type":"ref/resource","uri":uri},"argument":{"name":"id","value":"a"}});
    for (uri, want) in [
        ("https://internal.example.com/{id}", Decision::Denied),
        ("https://internal.example.com/{id}{?q,r}", Decision::Denied),
        (
            "https://internal.example.com/{id}{/rest*}{#frag}",
            Decision::Denied,
        ),
        ("HTTPS://internal.example.com/{id}", Decision::Unreadable),
        (
            "https://internal.example.com:443/{id}",
            Decision::Unreadable,
        ),
        ("https://internal.example.com:/{id}", Decision::Unreadable),
        ("https://ｉnternal.example.com/{id}", Decision::Unreadable),
        (
            "https://internal.example.com/a/../{id}",
            Decision::Unreadable,
        ),
        ("https://internal.example.com/{id", Decision::Unreadable),
        ("https://internal.example.com/{i d}", Decision::Unreadable),
        ("https://internal.example.com/{../x}", Decision::Unreadable),
        ("https://internal.example.com/id}", Decision::Unreadable),
        ("hr://{name}", Decision::Forwarded),
        ("kb://articles/{slug}", Decision::Forwarded),
        ("https://internal.example.com/{=id}", Decision::Unreadable),
        (
            "https://public.example.com/{+path}/{id:3}",
            Decision::Forwarded,
        ),
        (
            "https://public.example.com{/segments*}{?q}",
            Decision::Forwarded,
        ),
    ] {
        assert_eq!(
            decide(&mut env, "completion/complete", complete(uri)),
            want,
            "{uri}"
        );
    }
}

/// Soundness of the form the filter decides on, against the `url` crate: random edits of
/// canonical URIs (characters a parser escapes, drops, maps or reads as structure) and every
/// spelling above; whatever the filter accepts, a WHATWG parser reads as itself (or not at all:
/// then the server refuses it).
#[test]
fn whatever_the_filter_decides_on_a_url_parser_reads_as_itself() {
    const SEEDS: [&str; 10] = [
        "https://internal.example.com/x",
        "https://127.0.0.1:8443/a/b?q=1#f",
        "hr://salaries",
        "hr://salaries/2026?x=1",
        "file:///kb/refunds.md",
        "file://host/share/x",
        "urn:isbn:0451450523",
        "kb:/articles/a",
        "ws://a-b.c0.example:80/x",
        "ftp://files.example/pub/",
    ];
    const PIECES: [&str; 48] = [
        "a",
        "Z",
        "0",
        "1",
        "9",
        ".",
        "..",
        "/",
        "//",
        "\\",
        ":",
        "::",
        "@",
        "%",
        "%2e",
        "%2E",
        "%41",
        "%zz",
        "%20",
        "?",
        "#",
        "[",
        "]",
        "{",
        "}",
        "{x}",
        "|",
        "^",
        "`",
        "'",
        "\"",
        "<",
        " ",
        "\t",
        "\n",
        "\u{0}",
        "\u{7f}",
        "0x",
        "0x7f",
        "256",
        "xn--",
        "-",
        "~",
        "\u{ff41}",
        "\u{3002}",
        "\u{ad}",
        "\u{e9}",
        "localhost",
    ];
    // xorshift64*: deterministic, no dependency.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |n: usize| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    };
    let mut candidates: Vec<String> = DENIED
        .iter()
        .chain(ALLOWED.iter())
        .flat_map(|u| spellings(Target::of(u)))
        .map(|s| s.uri)
        .collect();
    for _ in 0..200_000 {
        let mut uri = SEEDS[next(SEEDS.len())].to_string();
        for _ in 0..1 + next(3) {
            let mut at = next(uri.len() + 1);
            while !uri.is_char_boundary(at) {
                at -= 1;
            }
            let piece = PIECES[next(PIECES.len())];
            match next(3) {
                0 => uri.insert_str(at, piece),
                1 => {
                    let end = (at + 1 + next(4)).min(uri.len());
                    if uri.is_char_boundary(end) {
                        uri.replace_range(at..end, piece);
                    }
                }
                _ => {
                    let end = (at + 1 + next(4)).min(uri.len());
                    if uri.is_char_boundary(end) {
                        uri.replace_range(at..end, "");
                    }
                }
            }
        }
        candidates.push(uri);
    }
    let mut accepted = 0;
    let mut unsound = Vec::new();
    for uri in &candidates {
        // A template's expressions are read as a sample of their expansion (tested above).
        if uri.contains(['{', '}']) || resource_uri_problem(uri).is_some() {
            continue;
        }
        accepted += 1;
        match url::Url::parse(uri) {
            Ok(url) if url.as_str() != uri => {
                unsound.push(format!("{uri:?} reads as {:?}", url.as_str()))
            }
            _ => {}
        }
    }
    assert!(
        unsound.is_empty(),
        "{} accepted, read otherwise:\n{}",
        unsound.len(),
        unsound.join("\n")
    );
    assert!(
        accepted > 10_000,
        "only {accepted} of {} accepted",
        candidates.len()
    );
}
