use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{
    qjs, Context, Ctx, Exception, Function, Object, Persistent, Promise, Runtime, Value,
};

use crate::memory::Metered;
use crate::{Host, Limit, Limits, Outcome, Reply, ScriptError, Step, ToolCall, MAX_STACK_BYTES};

const PRELUDE: &str = include_str!("prelude.js");

/// The name the engine gives the script in error stacks (`at f (script:3:7)`).
const FILENAME: &str = "script";

/// The script is the body of an async function, opened on its first line so that the engine's
/// line numbers are the script's own.
const OPEN: &str = "(async () => {";
const CLOSE: &str = "\n})()";

/// What QuickJS throws when the stack passes `JS_SetMaxStackSize`. (A refused allocation is
/// known from the heap itself: `memory::Metered`.)
const STACK_OVERFLOW: &str = "RangeError: Maximum call stack size exceeded";

/// What the host functions and the interrupt handler share with the run.
struct Shared {
    host: Box<dyn Host>,
    limits: Limits,
    calls: u32,
    next_id: u32,
    /// Calls made since the last step, for the host to send.
    outgoing: Vec<ToolCall>,
    /// Calls in flight: their promise's resolve and reject functions.
    waiting: Vec<Waiting>,
    log: String,
    /// The limit that ended the script, which the interrupt handler also reads.
    ended: Rc<Cell<Option<Limit>>>,
}

struct Waiting {
    id: u32,
    resolve: Persistent<Function<'static>>,
    reject: Persistent<Function<'static>>,
}

/// One script, from start to its [`Outcome`]. Drop it to abandon the script (the host's request
/// ended): the engine and everything the script held go with it.
pub struct Run {
    // Fields drop in this order: what holds engine values before the context, the context
    // before the runtime (QuickJS frees a runtime only when nothing in it is referenced).
    shared: Rc<RefCell<Shared>>,
    promise: Option<Persistent<Promise<'static>>>,
    ended: Rc<Cell<Option<Limit>>>,
    /// Where the time limit falls during the current step (monotonic nanoseconds).
    deadline: Rc<Cell<u64>>,
    /// Nanoseconds of JavaScript run in earlier steps.
    ran_ns: u64,
    finished: bool,
    context: Context,
    /// Kept only to be dropped last: the context and every value belong to it.
    _runtime: Runtime,
}

impl Run {
    /// Starts `script` and runs it until it settles or waits for its first tool calls.
    pub fn start(script: &str, host: Box<dyn Host>, limits: Limits) -> (Option<Run>, Step) {
        let ended = Rc::new(Cell::new(None));
        let shared = Rc::new(RefCell::new(Shared {
            host,
            limits: limits.clone(),
            calls: 0,
            next_id: 0,
            outgoing: Vec::new(),
            waiting: Vec::new(),
            log: String::new(),
            ended: ended.clone(),
        }));
        let deadline = Rc::new(Cell::new(u64::MAX));
        let must_end = must_end(&shared, &ended, &deadline);
        let heap = Metered::new(limits.memory_bytes, ended.clone(), must_end.clone());
        let engine = Runtime::new_with_alloc(heap)
            .and_then(|runtime| Context::full(&runtime).map(|c| (runtime, c)));
        let (runtime, context) = match engine {
            Ok(engine) => engine,
            Err(e) => {
                let outcome = Outcome {
                    result: Err(ScriptError::Engine(e.to_string())),
                    log: String::new(),
                    calls: 0,
                };
                return (None, Step::Done(outcome));
            }
        };
        // Zero would turn QuickJS's stack check off.
        runtime.set_max_stack_size(limits.stack_bytes.clamp(1, MAX_STACK_BYTES));
        // An uncatchable interrupt: the script cannot go on after a limit, even inside `try`.
        runtime.set_interrupt_handler(Some(Box::new(move || must_end())));
        let mut run = Run {
            shared,
            promise: None,
            ended,
            deadline,
            ran_ns: 0,
            finished: false,
            context,
            _runtime: runtime,
        };
        let step = run.step(|run| run.evaluate(script));
        (Some(run), step)
    }

    /// Hands the reply to call `id` to the script and runs it until it settles or waits again.
    /// A reply to a call the run does not wait for (already answered, or never made) changes
    /// nothing.
    pub fn resume(&mut self, id: u32, reply: Reply) -> Step {
        if self.finished {
            return Step::Waiting { calls: Vec::new() };
        }
        if reply == Reply::TimedOut {
            self.ended.set(Some(Limit::CallTime));
            return self.settle();
        }
        self.step(|run| run.deliver(id, reply))
    }

    /// Whether the script has ended (its [`Step::Done`] was returned).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Runs `first` and then the engine's jobs until none is left, timing it against the limit.
    fn step(&mut self, first: impl FnOnce(&mut Run) -> Result<(), ScriptError>) -> Step {
        let (started, budget) = {
            let s = self.shared.borrow();
            let budget = s.limits.time_ms.saturating_mul(1_000_000);
            (s.host.now_ns(), budget)
        };
        self.deadline
            .set(started.saturating_add(budget.saturating_sub(self.ran_ns)));
        self.measure_stack_from_here();
        let outcome = first(self).and_then(|()| self.run_jobs());
        let now = self.shared.borrow().host.now_ns();
        self.ran_ns = self.ran_ns.saturating_add(now.saturating_sub(started));
        self.deadline.set(u64::MAX);
        match outcome {
            Ok(()) => self.settle(),
            Err(error) => self.finish(Err(error)),
        }
    }

    /// QuickJS measures `stack_bytes` from the stack top it recorded when the runtime was made;
    /// a host resumes the script from other callbacks, at other depths, so each step records it
    /// again.
    fn measure_stack_from_here(&self) {
        self.context.with(|ctx| {
            // SAFETY: the context is alive for the closure, and its runtime with it; recording
            // the stack top reads only the current frame's address.
            unsafe { qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(ctx.as_raw().as_ptr())) }
        });
    }

    fn evaluate(&mut self, script: &str) -> Result<(), ScriptError> {
        let shared = self.shared.clone();
        let promise = self.context.with(|ctx| -> Result<_, ScriptError> {
            let install = || -> rquickjs::Result<()> {
                let prelude: Function = ctx.eval(PRELUDE)?;
                prelude.call::<_, ()>((natives(&ctx, &shared)?,))
            };
            install().map_err(|e| self.thrown(&ctx, e))?;
            let mut options = EvalOptions::default();
            options.filename = Some(FILENAME.to_owned());
            options.backtrace_barrier = true;
            let source = [OPEN, script, CLOSE].concat();
            let promise: Promise = ctx
                .eval_with_options(source, options)
                .map_err(|e| self.thrown(&ctx, e))?;
            Ok(Persistent::save(&ctx, promise))
        })?;
        self.promise = Some(promise);
        Ok(())
    }

    fn deliver(&mut self, id: u32, reply: Reply) -> Result<(), ScriptError> {
        let waiting = {
            let mut s = self.shared.borrow_mut();
            let Some(at) = s.waiting.iter().position(|w| w.id == id) else {
                return Ok(());
            };
            s.waiting.swap_remove(at)
        };
        self.context.with(|ctx| {
            let delivered = match reply {
                Reply::Result(json) => waiting
                    .resolve
                    .restore(&ctx)
                    .and_then(|resolve| resolve.call::<_, ()>((json,))),
                Reply::Error(message) => waiting.reject.restore(&ctx).and_then(|reject| {
                    let error = Exception::from_message(ctx.clone(), &message)?;
                    reject.call::<_, ()>((error,))
                }),
                // `resume` ends the run on a timeout before it gets here.
                Reply::TimedOut => Ok(()),
            };
            delivered.map_err(|e| self.thrown(&ctx, e))
        })
    }

    fn run_jobs(&mut self) -> Result<(), ScriptError> {
        let ended = self.ended.clone();
        // `Ctx::execute_pending_job`, not the runtime's: that one wraps the job's context in a
        // `Context` it does not own (QuickJS lends it), and frees it a second time on drop.
        self.context.with(|ctx| {
            while ended.get().is_none() && ctx.execute_pending_job() {
                // A job's own exceptions become rejections: one is left behind only when the
                // engine interrupts the script or runs out of memory.
                let thrown = ctx.catch();
                if thrown.type_of() != rquickjs::Type::Uninitialized && ended.get().is_none() {
                    return Err(self.limit_or(error_from_value(&thrown)));
                }
            }
            Ok(())
        })
    }

    /// Where the script stands after a step.
    fn settle(&mut self) -> Step {
        if let Some(limit) = self.ended.get() {
            return self.finish(Err(self.limit_error(limit)));
        }
        let Some(promise) = self.promise.clone() else {
            return self.finish(Err(ScriptError::Stalled));
        };
        let state = self
            .context
            .with(|ctx| -> Result<Option<String>, ScriptError> {
                let promise = promise.restore(&ctx).map_err(|e| self.thrown(&ctx, e))?;
                match promise.state() {
                    PromiseState::Pending => Ok(None),
                    PromiseState::Resolved => {
                        let value: Value = match promise.result() {
                            Some(Ok(value)) => value,
                            Some(Err(e)) => return Err(self.thrown(&ctx, e)),
                            None => return Ok(None),
                        };
                        match ctx.json_stringify(value) {
                            Ok(Some(json)) => json
                                .to_string()
                                .map(Some)
                                .map_err(|e| ScriptError::NotJson(e.to_string())),
                            Ok(None) => Ok(Some("null".to_owned())),
                            Err(_) => Err(ScriptError::NotJson(message_of(&ctx.catch()))),
                        }
                    }
                    PromiseState::Rejected => match promise.result::<Value>() {
                        Some(Err(e)) => Err(self.thrown(&ctx, e)),
                        _ => Err(ScriptError::Stalled),
                    },
                }
            });
        match state {
            Ok(Some(json)) => self.finish(Ok(json)),
            Err(error) => self.finish(Err(error)),
            Ok(None) => {
                let mut s = self.shared.borrow_mut();
                if s.outgoing.is_empty() && s.waiting.is_empty() {
                    drop(s);
                    return self.finish(Err(ScriptError::Stalled));
                }
                Step::Waiting {
                    calls: std::mem::take(&mut s.outgoing),
                }
            }
        }
    }

    fn finish(&mut self, result: Result<String, ScriptError>) -> Step {
        self.finished = true;
        let mut s = self.shared.borrow_mut();
        let result = match result {
            Ok(json) if json.len().saturating_add(s.log.len()) > s.limits.output_bytes => {
                Err(ScriptError::limit(Limit::Output, &s.limits))
            }
            other => other,
        };
        // The engine's values go now, while the runtime is alive.
        s.waiting.clear();
        s.outgoing.clear();
        let outcome = Outcome {
            result,
            log: std::mem::take(&mut s.log),
            calls: s.calls,
        };
        drop(s);
        self.promise = None;
        Step::Done(outcome)
    }

    /// The error a failed engine call left: a limit if one ended the script, otherwise what
    /// the script threw.
    fn thrown(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> ScriptError {
        if let Some(limit) = self.ended.get() {
            let _ = ctx.catch();
            return self.limit_error(limit);
        }
        match error {
            rquickjs::Error::Exception => self.limit_or(error_from_value(&ctx.catch())),
            // The heap refused nothing, so the VM's own memory could not grow.
            rquickjs::Error::Allocation => self.limit_error(Limit::Memory),
            other => ScriptError::Thrown {
                message: other.to_string(),
                line: None,
            },
        }
    }

    /// The engine's own error for its stack limit, as that limit: the script may catch it, but
    /// one that ends the script is the limit's doing.
    fn limit_or(&self, error: ScriptError) -> ScriptError {
        match &error {
            ScriptError::Thrown { message, .. } if message == STACK_OVERFLOW => {
                self.limit_error(Limit::Stack)
            }
            _ => error,
        }
    }

    fn limit_error(&self, limit: Limit) -> ScriptError {
        ScriptError::limit(limit, &self.shared.borrow().limits)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Persistent values must go before the runtime they live in.
        if let Ok(mut s) = self.shared.try_borrow_mut() {
            s.waiting.clear();
        }
        self.promise = None;
    }
}

/// Whether the script must end: a limit was hit, or its time is up (which it records). The
/// interrupt handler asks it every 1,000 calls and loop iterations, and the heap every 256
/// allocations, for work inside built-in functions, which never poll. It may be asked from
/// inside a host function, where `shared` is borrowed: then the next question decides.
fn must_end(
    shared: &Rc<RefCell<Shared>>,
    ended: &Rc<Cell<Option<Limit>>>,
    deadline: &Rc<Cell<u64>>,
) -> Rc<dyn Fn() -> bool> {
    let (shared, ended, deadline) = (Rc::downgrade(shared), ended.clone(), deadline.clone());
    Rc::new(move || {
        if ended.get().is_some() {
            return true;
        }
        let now = shared
            .upgrade()
            .and_then(|s| s.try_borrow().ok().map(|s| s.host.now_ns()));
        if now.is_some_and(|now| now > deadline.get()) {
            ended.set(Some(Limit::Time));
            return true;
        }
        false
    })
}

/// The run's shared state, for a host function: while the run lives. The functions hold it
/// weakly, because an object QuickJS leaks on an error path (see `memory.rs`) keeps its
/// function's closure, and with a strong reference the host and the log, for good.
fn upgrade(ctx: &Ctx<'_>, shared: &Weak<RefCell<Shared>>) -> rquickjs::Result<Rc<RefCell<Shared>>> {
    shared
        .upgrade()
        .ok_or_else(|| Exception::throw_internal(ctx, "the run has ended"))
}

/// The host functions the prelude wraps.
fn natives<'js>(ctx: &Ctx<'js>, shared: &Rc<RefCell<Shared>>) -> rquickjs::Result<Object<'js>> {
    let natives = Object::new(ctx.clone())?;
    let s = Rc::downgrade(shared);
    natives.set(
        "search",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, query: String, namespace: Option<String>, limit: Option<f64>| {
                let limit = limit.map(|l| l.clamp(0.0, f64::from(u32::MAX)) as u32);
                let answer = upgrade(&ctx, &s)?.borrow_mut().host.search(
                    &query,
                    namespace.as_deref(),
                    limit,
                );
                answer.map_err(|message| Exception::throw_message(&ctx, &message))
            },
        )?,
    )?;
    let s = Rc::downgrade(shared);
    natives.set(
        "describe",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, names: Vec<String>| {
            let answer = upgrade(&ctx, &s)?.borrow_mut().host.describe(&names);
            answer.map_err(|message| Exception::throw_message(&ctx, &message))
        })?,
    )?;
    let s = Rc::downgrade(shared);
    natives.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, arguments: String| {
                call(&ctx, &upgrade(&ctx, &s)?, name, arguments)
            },
        )?,
    )?;
    let s = Rc::downgrade(shared);
    natives.set(
        "log",
        Function::new(ctx.clone(), move |line: String| {
            let Some(s) = s.upgrade() else {
                return;
            };
            let mut s = s.borrow_mut();
            if s.log.len().saturating_add(line.len()).saturating_add(1) > s.limits.output_bytes {
                s.ended.set(Some(Limit::Output));
                return;
            }
            s.log.push_str(&line);
            s.log.push('\n');
        })?,
    )?;
    Ok(natives)
}

/// `tools.call`: a promise the host settles with [`Run::resume`]. A call over the limit ends
/// the script; a call the policy refuses rejects at once and never leaves.
fn call<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<RefCell<Shared>>,
    name: String,
    arguments: String,
) -> rquickjs::Result<Promise<'js>> {
    let (promise, resolve, reject) = ctx.promise()?;
    let mut s = shared.borrow_mut();
    if s.calls >= s.limits.calls {
        s.ended.set(Some(Limit::Calls));
        return Err(Exception::throw_internal(ctx, &Limit::Calls.to_string()));
    }
    if let Err(message) = s.host.authorize(&name, &arguments) {
        drop(s);
        reject.call::<_, ()>((Exception::from_message(ctx.clone(), &message)?,))?;
        return Ok(promise);
    }
    s.calls += 1;
    let id = s.next_id;
    s.next_id = s.next_id.wrapping_add(1);
    s.outgoing.push(ToolCall {
        id,
        name,
        arguments,
    });
    s.waiting.push(Waiting {
        id,
        resolve: Persistent::save(ctx, resolve),
        reject: Persistent::save(ctx, reject),
    });
    Ok(promise)
}

/// The message and script line of a thrown value.
fn error_from_value(thrown: &Value<'_>) -> ScriptError {
    let line = thrown
        .as_object()
        .and_then(|o| o.get::<_, Option<String>>("stack").ok().flatten())
        .and_then(|stack| script_line(&stack));
    ScriptError::Thrown {
        message: message_of(thrown),
        line,
    }
}

/// `name: message` for an Error, the value's text for anything else thrown.
fn message_of(thrown: &Value<'_>) -> String {
    if let Some(exception) = thrown.as_exception() {
        let message = exception.message().unwrap_or_default();
        let name = exception
            .get::<_, Option<String>>("name")
            .ok()
            .flatten()
            .unwrap_or_else(|| "Error".to_owned());
        return format!("{name}: {message}");
    }
    let text = thrown
        .clone()
        .try_into_string()
        .ok()
        .and_then(|s| s.to_string().ok());
    text.unwrap_or_else(|| format!("{thrown:?}"))
}

/// The first line of the script in an engine stack (`    at f (script:3:7)`).
fn script_line(stack: &str) -> Option<u32> {
    let marker = format!("({FILENAME}:");
    let at = stack.find(&marker)?;
    let rest = stack.get(at + marker.len()..)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
