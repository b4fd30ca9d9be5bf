//! The sandbox against scripts as agents write them, and against scripts written to hurt it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod hostile;

use std::time::{Duration, Instant};

use hostile::{CAUGHT, HOSTILE};
use mcp_tool_search_script::{
    Host, Limit, Limits, Outcome, Reply, Run, ScriptError, Step, ToolCall,
};
use serde_json::{json, Value};

/// A catalog of three weather tools and one the caller may not use (`admin_reset`).
struct Catalog {
    clock: Instant,
}

impl Catalog {
    fn boxed() -> Box<dyn Host> {
        Box::new(Catalog {
            clock: Instant::now(),
        })
    }
}

const TOOLS: [(&str, &str); 4] = [
    ("weather_current", "Current weather for a city"),
    ("weather_forecast", "Forecast for a city, days ahead"),
    ("air_quality", "Air quality index for a city"),
    ("admin_reset", "Reset the weather station"),
];

impl Host for Catalog {
    fn search(
        &mut self,
        query: &str,
        namespace: Option<&str>,
        limit: Option<u32>,
    ) -> Result<String, String> {
        if namespace == Some("missing") {
            return Err("no namespace \"missing\"".to_owned());
        }
        let limit = limit.unwrap_or(10) as usize;
        let found: Vec<Value> = TOOLS
            .iter()
            .filter(|(name, description)| {
                *name != "admin_reset"
                    && query
                        .split_whitespace()
                        .any(|w| description.to_lowercase().contains(&w.to_lowercase()))
            })
            .take(limit)
            .map(|(name, description)| json!({"name": name, "description": description, "required": ["city"]}))
            .collect();
        Ok(Value::Array(found).to_string())
    }

    fn describe(&mut self, names: &[String]) -> Result<String, String> {
        let found: Vec<Value> = names
            .iter()
            .filter(|n| TOOLS.iter().any(|(t, _)| t == n && *t != "admin_reset"))
            .map(|n| json!({"name": n, "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}))
            .collect();
        Ok(Value::Array(found).to_string())
    }

    fn authorize(&mut self, name: &str, _arguments: &str) -> Result<(), String> {
        if name == "admin_reset" {
            return Err(format!("tool {name:?} is not permitted"));
        }
        if !TOOLS.iter().any(|(t, _)| *t == name) {
            return Err(format!("no tool {name:?}"));
        }
        Ok(())
    }

    fn now_ns(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }
}

/// What the upstream answers: the tool's name and the city, as MCP text content and structured
/// content.
fn upstream(call: &ToolCall) -> Reply {
    let args: Value = serde_json::from_str(&call.arguments).unwrap();
    let city = args["city"].as_str().unwrap_or("?");
    Reply::Result(
        json!({
            "content": [{"type": "text", "text": format!("{} in {city}", call.name)}],
            "structuredContent": {"tool": call.name, "city": city},
            "isError": false
        })
        .to_string(),
    )
}

/// Runs a script to its end, answering every call as the upstream would; `sent` collects the
/// calls that left.
fn run_with(script: &str, limits: Limits, sent: &mut Vec<ToolCall>) -> Outcome {
    let (run, mut step) = Run::start(script, Catalog::boxed(), limits);
    let mut run = run;
    loop {
        match step {
            Step::Done(outcome) => return outcome,
            Step::Waiting { calls } => {
                assert!(!calls.is_empty(), "a run waits with nothing in flight");
                sent.extend(calls.iter().cloned());
                let run = run.as_mut().unwrap();
                let mut last = None;
                for call in &calls {
                    last = Some(run.resume(call.id, upstream(call)));
                }
                step = last.unwrap();
            }
        }
    }
}

fn run(script: &str) -> Outcome {
    run_with(script, Limits::default(), &mut Vec::new())
}

fn result(script: &str) -> Value {
    let outcome = run(script);
    serde_json::from_str(&outcome.result.unwrap()).unwrap()
}

fn limit_of(outcome: &Outcome) -> Limit {
    match &outcome.result {
        Err(ScriptError::Limit { limit, .. }) => *limit,
        other => panic!("expected a limit, got {other:?}"),
    }
}

/// Starts a script that must wait for tool calls: the run and the calls it waits for.
fn waiting(script: &str) -> (Run, Vec<ToolCall>) {
    let (run, step) = Run::start(script, Catalog::boxed(), Limits::default());
    let Step::Waiting { calls } = step else {
        panic!("{step:?}")
    };
    (run.unwrap(), calls)
}

#[test]
fn a_script_searches_describes_calls_three_tools_and_combines_them() {
    let script = r#"
        const found = catalog.tools.search({ query: "city weather air", limit: 5 });
        const names = found.map((t) => t.name);
        const defs = catalog.tools.describe(names);
        console.log("found", names);
        const results = await Promise.all(
            names.map((n) => tools.call(n, { city: "Lisbon" })),
        );
        const one = await tools.weather_current({ city: "Porto" });
        return {
            described: defs.map((d) => d.name),
            texts: results.map((r) => r.content[0].text),
            sugar: one.structuredContent,
        };
    "#;
    let mut sent = Vec::new();
    let outcome = run_with(script, Limits::default(), &mut sent);
    let value: Value = serde_json::from_str(outcome.result.as_ref().unwrap()).unwrap();
    assert_eq!(
        value,
        json!({
            "described": ["weather_current", "weather_forecast", "air_quality"],
            "texts": ["weather_current in Lisbon", "weather_forecast in Lisbon", "air_quality in Lisbon"],
            "sugar": {"tool": "weather_current", "city": "Porto"}
        })
    );
    assert_eq!(outcome.calls, 4);
    assert_eq!(sent.len(), 4);
    assert_eq!(
        outcome.log,
        "found [\"weather_current\",\"weather_forecast\",\"air_quality\"]\n"
    );
}

#[test]
fn a_refused_call_throws_in_the_script_and_never_leaves() {
    let script = r#"
        try {
            await tools.call("admin_reset", {});
            return "called";
        } catch (e) {
            return e.message;
        }
    "#;
    let mut sent = Vec::new();
    let outcome = run_with(script, Limits::default(), &mut sent);
    assert_eq!(
        outcome.result.unwrap(),
        json!("tool \"admin_reset\" is not permitted").to_string()
    );
    assert!(sent.is_empty(), "a refused call left: {sent:?}");
    assert_eq!(outcome.calls, 0);
}

#[test]
fn an_uncaught_refusal_ends_the_script_with_its_message_and_line() {
    let outcome = run("const a = 1;\nawait tools.admin_reset({});\nreturn a;");
    assert_eq!(
        outcome.result,
        Err(ScriptError::Thrown {
            message: "Error: tool \"admin_reset\" is not permitted".to_owned(),
            line: Some(2),
        })
    );
}

#[test]
fn a_thrown_error_reports_the_scripts_own_line() {
    let outcome = run("const a = 1;\n\nthrow new TypeError('bad input ' + a);");
    assert_eq!(
        outcome.result,
        Err(ScriptError::Thrown {
            message: "TypeError: bad input 1".to_owned(),
            line: Some(3),
        })
    );
    let syntax = run("const a = ;");
    match syntax.result {
        Err(ScriptError::Thrown { message, .. }) => {
            assert!(message.starts_with("SyntaxError"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn return_values_become_json_and_undefined_becomes_null() {
    assert_eq!(result("return 1 + 1"), json!(2));
    assert_eq!(
        result("return { a: [1, 'x', null] }"),
        json!({"a": [1, "x", null]})
    );
    assert_eq!(result("const x = 1;"), Value::Null);
    assert_eq!(result("return 'a\\u0000b'"), json!("a\u{0}b"));
    match run("return 10n").result {
        Err(ScriptError::NotJson(why)) => assert!(why.contains("BigInt"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_api_arguments_throw_type_errors_the_script_can_read() {
    let value = result(
        r#"
        const errors = [];
        for (const f of [
            () => catalog.tools.search({}),
            () => catalog.tools.search({ query: "x", limit: 0 }),
            () => catalog.tools.search({ query: "x", namespace: "missing" }),
            () => catalog.tools.describe([1]),
        ]) {
            try { f(); errors.push("none"); } catch (e) { errors.push(e.name + ": " + e.message); }
        }
        for (const p of [tools.call("", {}), tools.call("weather_current", [1]), tools.call("nope", {})]) {
            try { await p; errors.push("none"); } catch (e) { errors.push(e.name + ": " + e.message); }
        }
        return errors;
    "#,
    );
    assert_eq!(
        value,
        json!([
            "TypeError: catalog.tools.search: query must be a non-empty string",
            "TypeError: catalog.tools.search: limit must be a positive integer",
            "Error: no namespace \"missing\"",
            "TypeError: catalog.tools.describe: a tool name must be a non-empty string",
            "TypeError: tools.call: the tool name must be a non-empty string",
            "TypeError: tools.call(\"weather_current\"): the arguments must be an object",
            "Error: no tool \"nope\""
        ])
    );
}

#[test]
fn an_endless_loop_ends_with_the_time_limit_even_when_it_catches() {
    let limits = Limits {
        time_ms: 50,
        ..Limits::default()
    };
    for script in [
        "while (true) {}",
        "for (;;) { try { while (true) {} } catch (e) {} }",
        "await tools.weather_current({city: 'x'}); while (true) {}",
        "const r = /(a+)+b/; return r.test('a'.repeat(40));",
    ] {
        let outcome = run_with(script, limits.clone(), &mut Vec::new());
        assert_eq!(limit_of(&outcome), Limit::Time, "{script}");
        assert_eq!(
            outcome.result.unwrap_err().to_string(),
            "the script ran longer than its time limit (time_ms = 50)"
        );
    }
}

/// A script that ends with its limit ends soon after it: the bound is loose (ten times the time
/// limit) so that a slow machine does not fail it; the regressions it catches ran for seconds.
#[test]
fn scripts_that_catch_what_the_engine_throws_end() {
    let limits = Limits::default();
    for script in CAUGHT {
        let started = Instant::now();
        let outcome = run_with(script, limits.clone(), &mut Vec::new());
        let bound = Duration::from_millis(10 * limits.time_ms);
        assert!(started.elapsed() < bound, "{script}: {outcome:?}");
    }
}

#[test]
fn hostile_scripts_end_with_their_limit() {
    let limits = Limits::default();
    for hostile in &HOSTILE {
        let started = Instant::now();
        let outcome = run_with(hostile.script, limits.clone(), &mut Vec::new());
        assert_eq!(
            limit_of(&outcome).name(),
            hostile.ends_with,
            "{}",
            hostile.script
        );
        let bound = Duration::from_millis(10 * limits.time_ms);
        assert!(
            started.elapsed() < bound,
            "{}: {:?}",
            hostile.script,
            started.elapsed()
        );
    }
}

#[test]
fn deep_recursion_ends_with_the_stack_limit() {
    let outcome = run("const f = (n) => f(n + 1) + 1; return f(0);");
    assert_eq!(limit_of(&outcome), Limit::Stack);
}

#[test]
fn a_stack_limit_of_zero_or_above_the_maximum_still_holds() {
    for stack_bytes in [0, 64 << 20] {
        let limits = Limits {
            stack_bytes,
            ..Limits::default()
        };
        let outcome = run_with(
            "const f = (n) => f(n + 1) + 1; return f(0);",
            limits,
            &mut Vec::new(),
        );
        assert_eq!(limit_of(&outcome), Limit::Stack, "{stack_bytes}");
    }
}

#[test]
fn too_many_calls_end_the_script_even_when_it_catches() {
    let limits = Limits {
        calls: 3,
        ..Limits::default()
    };
    let script = r#"
        for (let i = 0; i < 10; i++) {
            try { await tools.weather_current({ city: String(i) }); } catch (e) {}
        }
        return "finished";
    "#;
    let mut sent = Vec::new();
    let outcome = run_with(script, limits, &mut sent);
    assert_eq!(limit_of(&outcome), Limit::Calls);
    assert_eq!(sent.len(), 3);
    assert_eq!(outcome.calls, 3);
}

#[test]
fn a_call_that_times_out_ends_the_script() {
    let (mut run, calls) =
        waiting("try { await tools.weather_current({city: 'x'}); } catch (e) { return 'caught'; }");
    let Step::Done(outcome) = run.resume(calls[0].id, Reply::TimedOut) else {
        panic!("still waiting")
    };
    assert_eq!(limit_of(&outcome), Limit::CallTime);
    assert!(run.finished());
}

#[test]
fn an_upstream_error_rejects_the_call() {
    let (mut run, calls) = waiting(
        "try { await tools.weather_current({city: 'x'}); } catch (e) { return e.message; }",
    );
    let Step::Done(outcome) = run.resume(calls[0].id, Reply::Error("upstream answered 503".into()))
    else {
        panic!("still waiting")
    };
    assert_eq!(outcome.result.unwrap(), "\"upstream answered 503\"");
}

#[test]
fn output_over_the_limit_ends_the_script() {
    let limits = Limits {
        output_bytes: 1000,
        ..Limits::default()
    };
    let big = run_with("return 'x'.repeat(2000);", limits.clone(), &mut Vec::new());
    assert_eq!(limit_of(&big), Limit::Output);
    let chatty = run_with(
        "for (;;) { try { console.log('line'); } catch (e) {} }",
        limits,
        &mut Vec::new(),
    );
    assert_eq!(limit_of(&chatty), Limit::Output);
}

#[test]
fn a_script_awaiting_nothing_stalls_with_an_error() {
    assert_eq!(
        run("await new Promise(() => {}); return 1;").result,
        Err(ScriptError::Stalled)
    );
}

#[test]
fn a_run_dropped_while_calls_are_in_flight_goes_quietly() {
    let (run, calls) = waiting(
        "const a = tools.weather_current({city: 'a'}); const b = tools.air_quality({city: 'b'}); return [await a, await b];",
    );
    assert_eq!(calls.len(), 2);
    drop(run);
}

#[test]
fn a_reply_to_an_unknown_call_changes_nothing() {
    let (mut run, calls) =
        waiting("return (await tools.weather_current({city: 'a'})).structuredContent.city;");
    assert_eq!(
        run.resume(99, Reply::Result("{}".into())),
        Step::Waiting { calls: vec![] }
    );
    let Step::Done(outcome) = run.resume(calls[0].id, upstream(&calls[0])) else {
        panic!("still waiting")
    };
    assert_eq!(outcome.result.unwrap(), "\"a\"");
    // A second reply to the same call, after the end, changes nothing either.
    assert_eq!(
        run.resume(calls[0].id, upstream(&calls[0])),
        Step::Waiting { calls: vec![] }
    );
}

#[test]
fn scripts_cannot_reach_the_host_functions() {
    let value = result(
        "return [typeof natives, typeof search, typeof call, typeof globalThis.log, Object.keys(tools)];",
    );
    assert_eq!(
        value,
        json!(["undefined", "undefined", "undefined", "undefined", ["call"]])
    );
}
