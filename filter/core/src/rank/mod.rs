//! Ranking a query against an index: BM25, vectors from an embeddings service, or both.

pub mod embeddings;
pub mod explain;
pub mod search;
