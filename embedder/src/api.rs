//! The OpenAI embeddings wire format: request validation, response and error bodies.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

/// How the vectors are written in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingFormat {
    /// A JSON array of numbers (the default).
    Float,
    /// Base64 of the little-endian `f32` bytes (what the OpenAI Python SDK asks for).
    Base64,
}

/// A validated `/v1/embeddings` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingRequest {
    /// The texts, in request order (a single string becomes a batch of one).
    pub texts: Vec<String>,
    /// Requested vector encoding.
    pub format: EncodingFormat,
}

/// What the server accepts, checked while parsing.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// The only model name accepted in `model` (which may also be absent).
    pub model_id: &'a str,
    /// Vector length (the only value accepted in `dimensions`).
    pub dimensions: usize,
    /// Most texts in one request.
    pub max_batch: usize,
}

/// An error answered in OpenAI's shape:
/// `{"error":{"message":..,"type":..,"param":..,"code":..}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// What went wrong and what to do about it.
    pub message: String,
    /// `invalid_request_error` (the caller's fault) or `server_error`.
    pub kind: &'static str,
    /// The request field at fault, if any.
    pub param: Option<&'static str>,
    /// A machine-readable code, if any.
    pub code: Option<&'static str>,
    /// Seconds for a `retry-after` header.
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// 400 `invalid_request_error`.
    pub fn invalid(message: impl Into<String>, param: Option<&'static str>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param,
            code: None,
            retry_after: None,
        }
    }

    /// 500 `server_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// The same error with another status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The same error with a code.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body().to_string();
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses and validates a request body.
pub fn parse_request(body: &[u8], limits: &Limits<'_>) -> Result<EmbeddingRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(
            format!(
                "We could not parse the JSON body of your request ({e}). Send a JSON object \
                 like {{\"model\": \"{}\", \"input\": [\"text\"]}}.",
                limits.model_id
            ),
            None,
        )
    })?;
    let Value::Object(fields) = value else {
        return Err(ApiError::invalid(
            format!(
                "The request body must be a JSON object, got {}.",
                type_name(&value)
            ),
            None,
        ));
    };

    match fields.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(model)) if model == limits.model_id => {}
        Some(Value::String(model)) => {
            return Err(ApiError::invalid(
                format!(
                    "The model `{model}` does not exist: this server serves `{}` (or omit `model`).",
                    limits.model_id
                ),
                Some("model"),
            )
            .with_status(StatusCode::NOT_FOUND)
            .with_code("model_not_found"));
        }
        Some(other) => {
            return Err(ApiError::invalid(
                format!("'model' must be a string, got {}.", type_name(other)),
                Some("model"),
            ));
        }
    }

    let texts = match fields.get("input") {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(
                "'input' is required: a string or an array of strings.",
                Some("input"),
            ));
        }
        Some(Value::String(text)) => {
            if text.is_empty() {
                return Err(ApiError::invalid(
                    "'input' must not be an empty string.",
                    Some("input"),
                ));
            }
            vec![text.clone()]
        }
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(ApiError::invalid(
                    "'input' must not be an empty array: send at least one string.",
                    Some("input"),
                ));
            }
            if items.len() > limits.max_batch {
                return Err(ApiError::invalid(
                    format!(
                        "'input' has {} texts; this server embeds at most {} per request \
                         (--max-batch). Split the batch.",
                        items.len(),
                        limits.max_batch
                    ),
                    Some("input"),
                )
                .with_status(StatusCode::PAYLOAD_TOO_LARGE)
                .with_code("too_many_inputs"));
            }
            let mut texts = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(text) if text.is_empty() => {
                        return Err(ApiError::invalid(
                            format!("'input[{i}]' must not be an empty string."),
                            Some("input"),
                        ));
                    }
                    Value::String(text) => texts.push(text.clone()),
                    Value::Number(_) | Value::Array(_) => {
                        return Err(ApiError::invalid(
                            format!(
                                "'input[{i}]' is {}: token-id input is not supported, send text.",
                                type_name(item)
                            ),
                            Some("input"),
                        ));
                    }
                    other => {
                        return Err(ApiError::invalid(
                            format!("'input[{i}]' must be a string, got {}.", type_name(other)),
                            Some("input"),
                        ));
                    }
                }
            }
            texts
        }
        Some(other) => {
            return Err(ApiError::invalid(
                format!(
                    "'input' must be a string or an array of strings, got {}.",
                    type_name(other)
                ),
                Some("input"),
            ));
        }
    };

    let format = match fields.get("encoding_format") {
        None | Some(Value::Null) => EncodingFormat::Float,
        Some(Value::String(f)) if f == "float" => EncodingFormat::Float,
        Some(Value::String(f)) if f == "base64" => EncodingFormat::Base64,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("'encoding_format' must be \"float\" or \"base64\", got {other}."),
                Some("encoding_format"),
            ));
        }
    };

    match fields.get("dimensions") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64() == Some(limits.dimensions as u64) => {}
        Some(other) => {
            return Err(ApiError::invalid(
                format!(
                    "'dimensions' must be {} for `{}` (it cannot be shortened), got {other}.",
                    limits.dimensions, limits.model_id
                ),
                Some("dimensions"),
            ));
        }
    }

    Ok(EmbeddingRequest { texts, format })
}

#[derive(Serialize)]
#[serde(untagged)]
enum Vector {
    Float(Vec<f32>),
    Base64(String),
}

#[derive(Serialize)]
struct Item {
    object: &'static str,
    index: usize,
    embedding: Vector,
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: usize,
    total_tokens: usize,
}

#[derive(Serialize)]
struct EmbeddingResponse<'a> {
    object: &'static str,
    data: Vec<Item>,
    model: &'a str,
    usage: Usage,
}

fn base64_f32(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The success body.
pub fn response_body(
    vectors: Vec<Vec<f32>>,
    tokens: usize,
    model_id: &str,
    format: EncodingFormat,
) -> Result<Vec<u8>, ApiError> {
    let data = vectors
        .into_iter()
        .enumerate()
        .map(|(index, v)| Item {
            object: "embedding",
            index,
            embedding: match format {
                EncodingFormat::Float => Vector::Float(v),
                EncodingFormat::Base64 => Vector::Base64(base64_f32(&v)),
            },
        })
        .collect();
    serde_json::to_vec(&EmbeddingResponse {
        object: "list",
        data,
        model: model_id,
        usage: Usage {
            prompt_tokens: tokens,
            total_tokens: tokens,
        },
    })
    .map_err(|e| ApiError::internal(format!("could not serialize the response: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits<'static> = Limits {
        model_id: "all-MiniLM-L6-v2",
        dimensions: 384,
        max_batch: 3,
    };

    fn parse(body: &str) -> Result<EmbeddingRequest, ApiError> {
        parse_request(body.as_bytes(), &LIMITS)
    }

    fn err(body: &str) -> ApiError {
        parse(body).unwrap_err()
    }

    #[test]
    fn accepts_the_openai_shapes() {
        let one = parse(r#"{"model":"all-MiniLM-L6-v2","input":"hi"}"#).unwrap();
        assert_eq!(one.texts, vec!["hi"]);
        assert_eq!(one.format, EncodingFormat::Float);
        let many = parse(r#"{"input":["a","b"],"encoding_format":"float","user":"x"}"#).unwrap();
        assert_eq!(many.texts, vec!["a", "b"]);
        let b64 = parse(r#"{"input":"a","encoding_format":"base64","dimensions":384}"#).unwrap();
        assert_eq!(b64.format, EncodingFormat::Base64);
        assert!(parse(r#"{"input":"a","model":null}"#).is_ok());
    }

    #[test]
    fn rejects_bad_requests_with_400() {
        for body in [
            "not json",
            "[1,2]",
            "{}",
            r#"{"input":null}"#,
            r#"{"input":""}"#,
            r#"{"input":[]}"#,
            r#"{"input":["a",""]}"#,
            r#"{"input":5}"#,
            r#"{"input":[1,2,3]}"#,
            r#"{"input":[[1,2]]}"#,
            r#"{"input":["a",{"x":1}]}"#,
            r#"{"input":"a","model":7}"#,
            r#"{"input":"a","encoding_format":"int8"}"#,
            r#"{"input":"a","dimensions":128}"#,
        ] {
            let e = err(body);
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(e.kind, "invalid_request_error", "{body}");
        }
        assert_eq!(err(r#"{"input":""}"#).param, Some("input"));
        assert_eq!(err("{}").param, Some("input"));
    }

    #[test]
    fn too_many_inputs_is_413_and_unknown_model_404() {
        let e = err(r#"{"input":["a","b","c","d"]}"#);
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.param, Some("input"));
        let e = err(r#"{"input":"a","model":"text-embedding-3-small"}"#);
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert_eq!(e.code, Some("model_not_found"));
        let body = e.body();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["code"], "model_not_found");
        assert_eq!(body["error"]["param"], "model");
    }

    #[test]
    fn base64_is_little_endian_f32() {
        let body = response_body(vec![vec![1.0, -0.5]], 3, "m", EncodingFormat::Base64).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        let text = v["data"][0]["embedding"].as_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        let mut want = 1.0f32.to_le_bytes().to_vec();
        want.extend((-0.5f32).to_le_bytes());
        assert_eq!(bytes, want);
        assert_eq!(v["usage"]["prompt_tokens"], 3);
        assert_eq!(v["object"], "list");
        assert_eq!(v["data"][0]["object"], "embedding");
    }
}
