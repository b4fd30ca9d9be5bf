//! Code mode's scripts, written once with what each must come to, and run natively
//! (`filter/core/tests/code_mode.rs`, through `http::exchange`) and against the code-mode
//! `.wasm` in wasmtime (`wasm-tests/tests/shim_code_mode.rs`): the catalog, the policy, the
//! limits, and the upstream that answers the scripts' calls.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};

/// The plugin configuration: code mode, a policy by role, small limits.
pub const CONFIG: &str = r#"{"mode":"code",
    "code":{"limits":{"calls":3,"time_ms":100,"call_time_ms":1500}},
    "authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["weather_*","calendar_*","notes_*"]},
             {"claim":"roles","values":["admin"],"tools":["*"]}],
    "default":"deny"}}"#;

/// A tool whose call never answers: the host ends it at its timeout.
pub const HANGS: &str = "notes_wait";

/// The upstream's `tools/list` result.
pub fn catalog() -> Vec<u8> {
    let tools = [
        (
            "weather_forecast",
            "Forecast the weather for a city.\nDays ahead.",
            "city",
        ),
        (
            "calendar_list_events",
            "List calendar events on a day",
            "day",
        ),
        (
            "notes_create",
            "Create a note with a title and text",
            "title",
        ),
        (HANGS, "Wait for a note to change", "title"),
        (
            "payments_refund",
            "Refund a payment to a customer",
            "payment",
        ),
    ];
    let defs: Vec<Value> = tools
        .iter()
        .map(|(n, d, r)| {
            json!({"name": n, "description": d,
                   "inputSchema": {"type": "object", "properties": {*r: {"type": "string"}}, "required": [r]}})
        })
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

/// The upstream's JSON answer to a `tools/call` body: the tool's name as text, and its name
/// and arguments as `structuredContent`.
pub fn answer(request: &[u8]) -> Vec<u8> {
    let request: Value = serde_json::from_slice(request).unwrap();
    let name = request["params"]["name"].as_str().unwrap().to_string();
    let args = request["params"]["arguments"].clone();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":request["id"],"result":{
        "content":[{"type":"text","text":format!("{name} done")}],
        "structuredContent":{"tool":name,"args":args},"isError":false}}))
    .unwrap()
}

/// The `run_script` request for `script`.
pub fn request(script: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"run_script","arguments":{"script":script},
                  "_meta":{"progressToken":"p"}}}))
    .unwrap()
}

/// What a script must come to.
#[derive(Debug)]
pub enum Expect {
    /// Its return value (JSON).
    Result(&'static str),
    /// An error whose message has this text.
    Error(&'static str),
    /// The limit that ends it.
    Limit(&'static str),
}

#[derive(Debug)]
pub struct Case {
    pub role: &'static str,
    pub script: &'static str,
    pub expect: Expect,
    /// The calls that reach the upstream.
    pub calls: usize,
}

pub const CASES: &[Case] = &[
    Case {
        role: "support",
        script: r#"
const [weather] = catalog.tools.search({query: "weather forecast", limit: 2});
const [def] = catalog.tools.describe([weather.name]);
const [w, c] = await Promise.all([
  tools.call(weather.name, {city: "Oslo"}),
  tools.calendar_list_events({day: "monday"}),
]);
const note = await tools.notes_create({title: w.structuredContent.args.city});
return {weather: w.content[0].text, calendar: c.structuredContent.args.day,
        note: note.structuredContent.tool, required: def.inputSchema.required};"#,
        expect: Expect::Result(
            r#"{"weather":"weather_forecast done","calendar":"monday","note":"notes_create","required":["city"]}"#,
        ),
        calls: 3,
    },
    Case {
        role: "support",
        script: r#"return [catalog.tools.search("refund a payment").map(t => t.name).includes("payments_refund"),
                   catalog.tools.describe(["payments_refund", "notes_create"]).map(t => t.name)];"#,
        expect: Expect::Result(r#"[false,["notes_create"]]"#),
        calls: 0,
    },
    Case {
        role: "support",
        script: r#"try { await tools.payments_refund({payment: "p1"}); return "called"; }
                   catch (e) { return e.message; }"#,
        expect: Expect::Result(r#""Unknown tool: payments_refund""#),
        calls: 0,
    },
    Case {
        role: "support",
        script: "\nawait tools.call('payments_refund', {});",
        expect: Expect::Error("line 2: Error: Unknown tool: payments_refund"),
        calls: 0,
    },
    Case {
        role: "admin",
        script: "return await tools.run_script({script: '1'});",
        expect: Expect::Error("run_script cannot be called from a script"),
        calls: 0,
    },
    Case {
        role: "support",
        script: "return (;",
        expect: Expect::Error("SyntaxError"),
        calls: 0,
    },
    Case {
        role: "support",
        script: "for (let i = 0; i < 4; i++) await tools.notes_create({title: 'x' + i});",
        expect: Expect::Limit("calls"),
        calls: 3,
    },
    Case {
        role: "support",
        script: "for (;;) {}",
        expect: Expect::Limit("time_ms"),
        calls: 0,
    },
    Case {
        role: "support",
        script: "const a = []; for (;;) a.push('x'.repeat(65536));",
        expect: Expect::Limit("memory_bytes"),
        calls: 0,
    },
    Case {
        role: "support",
        script: "const f = (n) => f(n + 1) + 1; return f(0);",
        expect: Expect::Limit("stack_bytes"),
        calls: 0,
    },
    Case {
        role: "support",
        script: "try { await tools.notes_wait({title: 't'}); } catch (e) { return 'caught'; }",
        expect: Expect::Limit("call_time_ms"),
        calls: 1,
    },
    Case {
        role: "support",
        script: "return 1 + 1;",
        expect: Expect::Result("2"),
        calls: 0,
    },
];

/// Checks a `run_script` tool result against `case`.
pub fn check(case: &Case, result: &Value) {
    let context = || format!("{}\n{result:#}", case.script);
    match case.expect {
        Expect::Result(json) => {
            assert_eq!(result["isError"], false, "{}", context());
            let want: Value = serde_json::from_str(json).unwrap();
            assert_eq!(result["structuredContent"]["result"], want, "{}", context());
            let text: Value =
                serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text, want, "{}", context());
        }
        Expect::Error(text) => {
            assert_eq!(result["isError"], true, "{}", context());
            let message = result["content"][0]["text"].as_str().unwrap();
            assert!(message.contains(text), "{}", context());
            assert_eq!(
                result["structuredContent"]["limit"],
                Value::Null,
                "{}",
                context()
            );
        }
        Expect::Limit(limit) => {
            assert_eq!(result["isError"], true, "{}", context());
            assert_eq!(result["structuredContent"]["limit"], limit, "{}", context());
        }
    }
}
