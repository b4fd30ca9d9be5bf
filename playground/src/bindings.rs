//! The page's API: each function takes and returns strings (JSON), so the JavaScript side
//! stays plain and the Rust side is the native-tested functions of the crate.

use crate::{check_config, Error, Playground};
use wasm_bindgen::prelude::*;

fn js(e: Error) -> JsError {
    JsError::new(&e.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, JsError> {
    serde_json::to_string(value).map_err(|e| JsError::new(&e.to_string()))
}

/// `check_config` as JSON; the error is the parser's own message.
#[wasm_bindgen(js_name = checkConfig)]
pub fn check_config_js(text: &str) -> Result<String, JsError> {
    to_json(&check_config(text).map_err(js)?)
}

/// One catalog under one configuration (see `Playground`).
#[wasm_bindgen]
pub struct Session(Playground);

#[wasm_bindgen]
impl Session {
    #[wasm_bindgen(constructor)]
    pub fn new(
        config: &str,
        list: &str,
        namespace: &str,
        vectors: &str,
    ) -> Result<Session, JsError> {
        Playground::new(config, list, namespace, vectors)
            .map(Session)
            .map_err(js)
    }

    #[wasm_bindgen(js_name = agentView)]
    pub fn agent_view(&self, caller: &str) -> Result<String, JsError> {
        to_json(&self.0.agent_view(caller).map_err(js)?)
    }

    pub fn search(&self, caller: &str, arguments: &str) -> Result<String, JsError> {
        to_json(&self.0.search(caller, arguments).map_err(js)?)
    }

    pub fn insights(&self, text: &str) -> Result<String, JsError> {
        to_json(&self.0.insights(text).map_err(js)?)
    }
}
