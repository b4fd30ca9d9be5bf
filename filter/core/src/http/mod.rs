//! The hallway every request walks: one [`Context`] per HTTP stream, with exactly proxy-wasm's
//! callbacks (request headers, body, trailers; response headers, body, trailers; the answer
//! to a call), and one [`Root`] per VM (configuration, tick, background calls). They speak to
//! the host through two traits of primitives: [`crate::plugin::Host`] (shared data, clock,
//! log, counters, outgoing calls) and [`HttpHost`] (one stream's headers, bodies, replies).
//! Envoy provides both through the glue crate; [`MemoryHost`] provides both natively, and
//! [`exchange`] drives a stream as Envoy does, for tests, fuzzing, benchmarks and the
//! playground.

mod context;
mod host;
mod memory;
mod root;

pub use context::{Context, ACCESS_PROPERTY, METADATA_KEY};
pub use host::{Action, Body, Direction, Headers, HttpHost};
pub use memory::{
    exchange, CallSource, Exchanged, MemoryHost, MemoryStream, Request, Response, Serve,
};
pub use root::StartError;

use crate::plugin::Plugin;
use std::cell::RefCell;
use std::rc::Weak;

/// One VM's filter: its plugin (configuration, catalogs, embedding) and the requests waiting on
/// another worker's catalog fetch, which its tick resumes (`root`).
pub struct Root {
    pub plugin: Plugin,
    waiting: RefCell<Vec<Waiter>>,
}

/// A request waiting on another worker's fetch of `namespace`.
struct Waiter {
    context_id: u32,
    namespace: String,
    state: Weak<RefCell<context::State>>,
}
