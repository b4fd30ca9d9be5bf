//! An OpenAI-compatible embeddings sidecar for mcp-tool-search: `POST /v1/embeddings` answered
//! by all-MiniLM-L6-v2 (384 dimensions, mean pooling, L2-normalized) on the CPU, with a fixed
//! set of inference threads behind a bounded queue and a bounded cache of vectors.

pub mod api;
pub mod bert;
pub mod cache;
pub mod cli;
pub mod model;
pub mod pool;
pub mod server;

pub use cache::{CacheStats, Cached, VectorCache};
pub use model::{Embed, EmbedError, Embedded, LoadError, SentenceEncoder};
pub use server::{router, serve, Settings, DEFAULT_CACHE_ENTRIES};
