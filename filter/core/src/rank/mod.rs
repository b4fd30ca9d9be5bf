//! Ranking a query against an index: BM25, vectors from an embeddings service, or both; and
//! how a result's score came about.

pub mod embeddings;
pub mod explain;
pub mod mixed;
pub mod parts;
pub mod search;
