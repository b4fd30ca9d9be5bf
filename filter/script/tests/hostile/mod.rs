//! Scripts written to hurt the sandbox, each with the limit that must end it under the default
//! [`Limits`](mcp_tool_search_script::Limits). Written once: the sandbox's native tests
//! (tests/scripts.rs) and the Envoy e2e against the `.wasm` (wasm-tests/tests/sandbox_e2e.rs)
//! both run them. In a Wasm VM a script that escapes its limit traps the VM (the stack) or holds
//! the worker (the time); see docs/CODE-MODE.md for what each did to Envoy's V8 before the
//! sandbox bounded it.

/// What must end a script: the name of its limit (`Limit::name`).
pub struct Hostile {
    pub script: &'static str,
    pub ends_with: &'static str,
}

const fn stack(script: &'static str) -> Hostile {
    Hostile {
        script,
        ends_with: "stack_bytes",
    }
}

const fn memory(script: &'static str) -> Hostile {
    Hostile {
        script,
        ends_with: "memory_bytes",
    }
}

const fn time(script: &'static str) -> Hostile {
    Hostile {
        script,
        ends_with: "time_ms",
    }
}

pub const HOSTILE: [Hostile; 27] = [
    // Every recursive path in the engine, 20,000 to 100,000 levels deep: JavaScript calls, and
    // the C recursion of the parser, JSON and arrays, whose native frames the patched QuickJS
    // charges to the stack limit on Wasm (quickjs-sys/VENDORED.md).
    stack("const f = (n) => n ? f(n - 1) + 1 : 0; return f(100000)"),
    stack("const f = (n) => n ? [n - 1].map(f)[0] + 1 : 0; return f(100000)"),
    stack("let n = 100000; const o = { get x() { return n-- ? this.x : 0 } }; return o.x"),
    stack("return eval('('.repeat(100000) + '1' + ')'.repeat(100000))"),
    stack("return eval('!'.repeat(100000) + '1')"),
    stack("return eval('0?'.repeat(100000) + '1' + ':1'.repeat(100000))"),
    stack("return eval('1**'.repeat(100000) + '1')"),
    stack("return eval('`${'.repeat(100000) + '1' + '}`'.repeat(100000))"),
    stack("return eval('['.repeat(100000) + ']'.repeat(100000)).length"),
    stack("return typeof eval('x=>'.repeat(100000) + '1')"),
    stack("return JSON.parse('['.repeat(100000) + ']'.repeat(100000)).length"),
    stack(r#"return typeof JSON.parse('{"a":'.repeat(100000) + '1' + '}'.repeat(100000))"#),
    stack("let a = []; for (let i = 0; i < 20000; i++) a = [a]; return JSON.stringify(a).length"),
    stack("let a = []; for (let i = 0; i < 20000; i++) a = [a]; return a.flat(Infinity).length"),
    stack("return typeof JSON.parse('['.repeat(100000) + ']'.repeat(100000), (k, v) => v)"),
    // The heap, also when the script catches what its allocations throw.
    memory("let s = 'x'; while (true) s = s + s;"),
    memory("const a = []; while (true) a.push('x'.repeat(1 << 16) + a.length);"),
    memory("const a = []; while (true) { try { a.push(new Array(1 << 16).fill(1)); } catch (e) {} }"),
    memory("try { const a = []; while (true) a.push({ a }); } catch (e) {} return 'caught';"),
    memory("let a = []; for (let i = 0; i < 1e6; i++) a = [a]; try { JSON.stringify(a) } catch (e) { throw null }"),
    // The heap full to the last byte, then a loop that catches everything: the error that stops
    // the script must still be built.
    memory("const keep = []; try { while (true) keep.push({}) } catch (e) {} for (;;) { try { for (;;) {} } catch (e) {} }"),
    // Time, also inside `try`, in a regular expression, and in loops around built-in functions,
    // which never poll the interrupt handler.
    time("while (true) {}"),
    time("for (;;) { try { while (true) {} } catch (e) {} }"),
    time("const r = /(a+)+b/; return r.test('a'.repeat(40));"),
    time("const o = Array.from({length: 3000}, (_, i) => ({i, name: 'tool' + i})); while (true) JSON.stringify(o);"),
    time("const a = Array.from({length: 20000}, (_, i) => (i * 7919) % 20011); while (true) a.slice().sort();"),
    time("const s = 'ab'.repeat(50000); while (true) s.split('b').join('-');"),
];

/// Scripts that run into a limit and catch its error, or push the engine's own checks (regular
/// expressions, prototype and proxy chains, bound functions): whatever each returns or throws,
/// it must end, and in a Wasm VM the VM must serve on.
pub const CAUGHT: [&str; 22] = [
    "let d = 0; const f = () => { d++; [1].map(f) }; try { f() } catch (e) { return [d, String(e)] }",
    "let d = 0; const o = { toString() { d++; return `${this}` } }; try { String(o) } catch (e) { return [d, String(e)] }",
    "let d = 0; const p = new Proxy({}, { get(t, k, r) { d++; return r[k] } }); try { p.x } catch (e) { return [d, String(e)] }",
    "let d = 0; const o = { toJSON() { d++; return JSON.stringify(o) } }; try { JSON.stringify(o) } catch (e) { return [d, String(e)] }",
    "let d = 0; const f = (...a) => { d++; return f.apply(null, a) }; try { f(1, 2, 3) } catch (e) { return [d, String(e)] }",
    "let d = 0; const f = () => { d++; return [3, 1, 2].sort(() => f()) }; try { f() } catch (e) { return [d, String(e)] }",
    "let d = 0; const f = () => { d++; return 'ab'.replace(/a/, () => f()) }; try { f() } catch (e) { return [d, String(e)] }",
    "let d = 0; function* g() { d++; yield* g() }; try { [...g()] } catch (e) { return [d, String(e)] }",
    "let d = 0; class A { constructor() { d++; new A() } }; try { new A() } catch (e) { return [d, String(e)] }",
    "let d = 0; const f = async () => { d++; await f() }; try { await f() } catch (e) { return [d, String(e)] }",
    "try { return eval('{'.repeat(100000) + '}'.repeat(100000)) } catch (e) { return String(e) }",
    "try { return eval('if(1)'.repeat(100000) + '1') } catch (e) { return String(e) }",
    "try { return eval('1+'.repeat(100000) + '1') } catch (e) { return String(e) }",
    "let a = []; for (let i = 0; i < 100000; i++) a = [a]; try { return String(a).length } catch (e) { return String(e) }",
    "try { return new RegExp('('.repeat(50000) + 'a' + ')'.repeat(50000)).test('a') } catch (e) { return String(e) }",
    "try { return new RegExp('(?:'.repeat(50000) + 'a' + ')'.repeat(50000)).test('a') } catch (e) { return String(e) }",
    "try { return /(a|b)*c/.test('ab'.repeat(100000)) } catch (e) { return String(e) }",
    "let p = Promise.resolve(); for (let i = 0; i < 100000; i++) p = p.then(() => 1); await p; return 'chained'",
    "let o = {}; for (let i = 0; i < 100000; i++) o = Object.create(o); try { return 'x' in o } catch (e) { return String(e) }",
    "let f = () => 1; for (let i = 0; i < 100000; i++) f = f.bind(null); try { return f() } catch (e) { return String(e) }",
    "let p = new Proxy({}, {}); for (let i = 0; i < 100000; i++) p = new Proxy(p, {}); try { return p.x } catch (e) { return String(e) }",
    "let e = new Error('x'); for (let i = 0; i < 100000; i++) e = new Error('y', { cause: e }); return String(e)",
];
