//! The HTTP side: `POST /v1/embeddings`, `GET /health`, `GET /v1/models`.

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::api::{parse_request, response_body, ApiError, Limits};
use crate::cache::{Cached, VectorCache};
use crate::model::{Embed, Embedded};
use crate::pool::{Pool, PoolError, SubmitError};

/// Default `--cache-entries`: 384 f32 = 1.5 KiB a vector, 1.7 KB with the index (measured), so
/// about 33 MiB when full: room for the catalogs of a 20-server gateway of 500 tools each, twice
/// over (two catalog versions), at a third of the model's own 90 MB.
pub const DEFAULT_CACHE_ENTRIES: usize = 20_000;

/// Server settings (the command line, minus where to listen and where the model is).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The name answered in `model` and the only one accepted in requests.
    pub model_id: String,
    /// Most texts in one request (more: 413).
    pub max_batch: usize,
    /// Inference threads.
    pub workers: usize,
    /// Most requests waiting for an inference thread (more: 503).
    pub queue: usize,
    /// Largest request body accepted (more: 413).
    pub max_body_bytes: usize,
    /// Most vectors kept in the cache; 0 disables it.
    pub cache_entries: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model_id: "all-MiniLM-L6-v2".to_string(),
            max_batch: 64,
            workers: 1,
            queue: 32,
            max_body_bytes: 4 * 1024 * 1024,
            cache_entries: DEFAULT_CACHE_ENTRIES,
        }
    }
}

struct AppState {
    settings: Settings,
    dimensions: usize,
    pool: Pool,
    cache: Option<Arc<VectorCache>>,
}

/// Starts the inference threads and builds the routes.
pub fn router(backend: Arc<dyn Embed>, settings: Settings) -> Result<Router, PoolError> {
    let dimensions = backend.dimensions();
    let cache = (settings.cache_entries > 0)
        .then(|| Arc::new(VectorCache::new(&settings.model_id, settings.cache_entries)));
    let backend: Arc<dyn Embed> = match &cache {
        Some(cache) => Arc::new(Cached::new(backend, Arc::clone(cache))),
        None => backend,
    };
    let pool = Pool::start(backend, settings.workers, settings.queue)?;
    let limit = settings.max_body_bytes;
    let state = Arc::new(AppState {
        settings,
        dimensions,
        pool,
        cache,
    });
    Ok(Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/embeddings", post(embeddings))
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state))
}

/// Serves until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn embeddings(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::invalid(
                format!(
                    "The request body is larger than {} bytes: send fewer or shorter texts.",
                    state.settings.max_body_bytes
                ),
                Some("input"),
            )
            .with_status(StatusCode::PAYLOAD_TOO_LARGE)
            .with_code("request_too_large")
        } else {
            ApiError::invalid(
                format!("Could not read the request body: {}", rejection.body_text()),
                None,
            )
        }
    })?;
    let limits = Limits {
        model_id: &state.settings.model_id,
        dimensions: state.dimensions,
        max_batch: state.settings.max_batch,
    };
    let request = parse_request(&body, &limits)?;
    let (vectors, tokens) = match &state.cache {
        None => {
            let embedded = infer(&state, request.texts).await?;
            (embedded.vectors, embedded.tokens)
        }
        Some(cache) => {
            // Looked up before queueing so that a request of hits alone never waits behind a
            // batch; the inference thread looks the rest up again (cache.rs says why).
            let mut lookup = cache.lookup(&request.texts);
            let missing = lookup.take_missing();
            let embedded = if missing.is_empty() {
                Embedded {
                    vectors: Vec::new(),
                    tokens: 0,
                }
            } else {
                infer(&state, missing).await?
            };
            let vectors = lookup
                .fill(embedded.vectors)
                .map_err(|e| ApiError::internal(e.to_string()))?;
            (vectors, embedded.tokens)
        }
    };
    let body = response_body(vectors, tokens, &state.settings.model_id, request.format)?;
    Ok(json(StatusCode::OK, body))
}

/// Runs `texts` on an inference thread (through the cache when there is one).
async fn infer(state: &AppState, texts: Vec<String>) -> Result<Embedded, ApiError> {
    let reply = state.pool.submit(texts).map_err(|e| {
        let message = match e {
            SubmitError::Full => format!(
                "The embedder is busy ({} requests already wait for {} inference thread(s)): \
                 retry after the delay in retry-after.",
                state.pool.queue(),
                state.pool.workers()
            ),
            SubmitError::Closed => "The embedder is shutting down: retry later.".to_string(),
        };
        let mut error = ApiError::internal(message)
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .with_code("overloaded");
        error.retry_after = Some(1);
        error
    })?;
    reply
        .await
        .map_err(|_| ApiError::internal("The inference thread stopped before answering."))?
        .map_err(|e| ApiError::internal(e.to_string()))
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    // Disabled (`--cache-entries 0`) reads as capacity 0, so the shape never changes.
    let stats = state.cache.as_ref().map(|c| c.stats());
    let body = serde_json::json!({
        "status": "ok",
        "model": state.settings.model_id,
        "dimensions": state.dimensions,
        "cache": {
            "capacity": stats.map_or(0, |s| s.capacity),
            "entries": stats.map_or(0, |s| s.entries),
            "hits": stats.map_or(0, |s| s.hits),
            "misses": stats.map_or(0, |s| s.misses),
        },
    });
    json(StatusCode::OK, body.to_string().into_bytes())
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    let body = serde_json::json!({
        "object": "list",
        "data": [{
            "id": state.settings.model_id,
            "object": "model",
            "created": 0,
            "owned_by": "mcp-tool-search",
        }],
    });
    json(StatusCode::OK, body.to_string().into_bytes())
}

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(
        format!(
            "Unknown request URL: {method} {}. This server answers POST /v1/embeddings, \
             GET /v1/models and GET /health.",
            uri.path()
        ),
        None,
    )
    .with_status(StatusCode::NOT_FOUND)
    .with_code("unknown_url")
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(
        format!(
            "Method {method} is not allowed on {}: use POST /v1/embeddings or GET /health.",
            uri.path()
        ),
        None,
    )
    .with_status(StatusCode::METHOD_NOT_ALLOWED)
    .with_code("method_not_allowed")
}
