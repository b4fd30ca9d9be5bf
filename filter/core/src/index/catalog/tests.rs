use super::tool::MAX_SCHEMA_TEXT_BYTES;
use super::*;

pub(crate) fn tool(def: &str) -> Tool {
    let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
    Tool::from_raw(&raw).unwrap()
}

fn sample() -> Catalog {
    Catalog::from_tools(vec![
        tool(
            r#"{"name":"stripe_refund_charge","description":"Refund a charge.","inputSchema":{"type":"object","properties":{"charge_id":{"type":"string","description":"The charge to refund"}}}}"#,
        ),
        tool(r#"{"name":"github_create_issue","description":"Open a new issue in a repository."}"#),
        tool(r#"{"name":"weather","description":"Forecast for a city.","title":"Weather"}"#),
    ])
}

#[test]
fn tool_fields() {
    let t = tool(
        r#"{"name":"x","title":"T","description":"D","inputSchema":{"type":"object","properties":{"a":{"description":"first","type":"object","properties":{"b":{"description":"nested"}}}}}}"#,
    );
    assert_eq!(t.schema_text(), "a first b nested ");
    assert_eq!(t.about(), "T. D");
    assert!(Tool::from_raw(
        &serde_json::value::to_raw_value(&serde_json::json!({"description":"no name"})).unwrap()
    )
    .is_err());
    assert!(Tool::from_raw(
        &serde_json::value::to_raw_value(&serde_json::json!({"name":""})).unwrap()
    )
    .is_err());
}

/// README "Configuration", `search.weights.input_schema`: nested properties are read four
/// levels deep (array `items` counting as a level) and at most 4 kB a tool, cut at a character.
#[test]
fn schema_text_reads_four_levels_and_at_most_four_kilobytes() {
    let mut schema = serde_json::json!({"type": "string"});
    for level in (1..=6).rev() {
        let inner = if level == 3 {
            serde_json::json!({"description": format!("d{level}"), "type": "array", "items": {"properties": {format!("l{}", level + 1): schema}}})
        } else {
            serde_json::json!({"description": format!("d{level}"), "properties": {format!("l{}", level + 1): schema}})
        };
        schema = inner;
    }
    let def = serde_json::json!({"name": "deep", "inputSchema": {"properties": {"l1": schema}}});
    let t = tool(&def.to_string());
    assert_eq!(t.schema_text(), "l1 d1 l2 d2 l3 d3 l4 d4 ");

    let props: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|i| {
            (
                format!("p{i:03}"),
                serde_json::json!({"description": "é".repeat(20)}),
            )
        })
        .collect();
    let def = serde_json::json!({"name": "wide", "inputSchema": {"properties": props}});
    let text = tool(&def.to_string()).schema_text();
    assert!(text.len() <= MAX_SCHEMA_TEXT_BYTES && text.len() > MAX_SCHEMA_TEXT_BYTES - 50);
    assert_eq!(MAX_SCHEMA_TEXT_BYTES, 4096);
    assert!(
        text.starts_with("p000 éé") && !text.contains("p299"),
        "{text}"
    );
}

#[test]
fn catalog_sorted_unique_and_round_trips() {
    let c = sample();
    let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["github_create_issue", "stripe_refund_charge", "weather"]
    );
    let mut complete = c
        .merged(
            &[],
            Page {
                first: false,
                last: true,
            },
        )
        .unwrap();
    assert!(complete.is_complete() && !c.is_complete());
    assert!(Catalog::from_json(&complete.to_json())
        .unwrap()
        .is_complete());
    complete = Catalog::from_json(&complete.to_json()).unwrap();
    assert!(complete
        .merged(
            &[],
            Page {
                first: false,
                last: true
            }
        )
        .is_none());
    let back = Catalog::from_json(&c.to_json()).unwrap();
    assert_eq!(back.to_json(), c.to_json());
    assert!(Catalog::from_json("{\"tools\":5}").is_err());
}

#[test]
fn merge_upserts_or_replaces() {
    let c = sample();
    assert!(c
        .merged(
            &[tool(
                r#"{"name":"weather","description":"Forecast for a city.","title":"Weather"}"#
            )],
            Page {
                first: false,
                last: false
            }
        )
        .is_none());
    let updated = c
        .merged(
            &[tool(r#"{"name":"weather","description":"New."}"#)],
            Page {
                first: false,
                last: false,
            },
        )
        .unwrap();
    assert_eq!(updated.len(), 3);
    assert_eq!(&*updated.get("weather").unwrap().description, "New.");
    assert_ne!(updated.to_json(), c.to_json());
    let replaced = c
        .merged(
            &[tool(r#"{"name":"only"}"#)],
            Page {
                first: true,
                last: true,
            },
        )
        .unwrap();
    assert_eq!(replaced.len(), 1);
    let dup = Catalog::from_tools(vec![
        tool(r#"{"name":"a","description":"1"}"#),
        tool(r#"{"name":"a","description":"2"}"#),
    ]);
    assert_eq!(dup.len(), 1);
    assert_eq!(&*dup.get("a").unwrap().description, "2");
}

/// A list's definition is taken from the known catalog only when its bytes are the known
/// definition's, wherever its members are.
#[test]
fn a_known_definition_is_reused_only_when_its_bytes_are_the_same() {
    let known = Catalog::from_tools(vec![
        tool(r#"{"name":"pay","description":"Pay an invoice."}"#),
        tool(r#"{"description":"Send mail.","name":"mail"}"#),
    ]);
    let read = |def: &str| {
        let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
        Tool::from_raw_known(&raw, fnv::fingerprint(def.as_bytes()), &known)
    };
    let same = read(r#"{"name":"pay","description":"Pay an invoice."}"#).unwrap();
    assert!(same.same_definition(known.get("pay").unwrap()));
    // The same name, other bytes: read as it is.
    let changed = read(r#"{"name":"pay","description":"Refund an invoice."}"#).unwrap();
    assert_eq!(&*changed.description, "Refund an invoice.");
    assert!(!changed.same_definition(known.get("pay").unwrap()));
    // A name that does not open the definition (a gateway's order), or is escaped.
    let later = read(r#"{"description":"Send mail.","name":"mail"}"#).unwrap();
    assert!(later.same_definition(known.get("mail").unwrap()));
    let escaped = read(r#"{"name":"p\u0061y","description":"Pay an invoice."}"#).unwrap();
    assert_eq!(&*escaped.name, "pay");
    assert_eq!(
        escaped.definition(),
        r#"{"name":"p\u0061y","description":"Pay an invoice."}"#
    );
    // A second name member is refused whatever the first one names.
    assert!(read(r#"{"name":"pay","description":"Pay an invoice.","name":"mail"}"#).is_err());
    // The same members in another order are another definition.
    let reordered = read(r#"{"description":"Pay an invoice.","name":"pay"}"#).unwrap();
    assert!(!reordered.same_definition(known.get("pay").unwrap()));
    assert_eq!(&*reordered.name, "pay");
    // Spacing as Python's json.dumps writes it.
    let spaced = Catalog::from_tools(vec![tool(r#"{ "name" : "pay", "title": "Pay"}"#)]);
    let raw: Box<RawValue> = serde_json::from_str(r#"{ "name" : "pay", "title": "Pay"}"#).unwrap();
    let print = fnv::fingerprint(raw.get().as_bytes());
    let again = Tool::from_raw_known(&raw, print, &spaced).unwrap();
    assert!(again.same_definition(spaced.get("pay").unwrap()));
    assert_eq!(&*again.title, "Pay");
}
