//! all-MiniLM-L6-v2 (or any BERT sentence encoder in the same layout) on the CPU with candle:
//! tokenize, run the encoder, mean-pool over the attention mask, L2-normalize.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bert::{Bert, Config};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{Encoding, Tokenizer};

/// Weights file expected in the model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// Tokenizer file expected in the model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// Optional: the Hugging Face `config.json`; without it the all-MiniLM-L6-v2 shape is assumed.
pub const CONFIG_FILE: &str = "config.json";
/// Where `make model` puts the files, relative to the repository root.
pub const DEFAULT_MODEL_DIR: &str = ".cache/models/all-MiniLM-L6-v2";
/// sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2: longer texts are truncated.
pub const MAX_TOKENS: usize = 256;
/// Most texts in one forward pass (a request's texts are sorted by length and grouped).
pub const FORWARD_ROWS: usize = 16;

/// Something that turns texts into unit vectors. The HTTP server only knows this trait, so its
/// queueing and error paths can be tested with a stand-in.
pub trait Embed: Send + Sync + 'static {
    /// Length of every vector returned.
    fn dimensions(&self) -> usize;
    /// One vector per text, in order, plus the number of tokens consumed.
    fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError>;
}

/// The result of one [`Embed::embed`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// One L2-normalized vector per input text, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens actually fed to the model (special tokens included, padding and truncated
    /// tokens excluded), summed over the texts.
    pub tokens: usize,
}

/// Loading the model failed.
#[derive(Debug)]
pub enum LoadError {
    /// A required file is not there.
    Missing { path: PathBuf },
    /// A file is there but could not be read or parsed.
    Invalid { path: PathBuf, reason: String },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Missing { path } => write!(
                f,
                "model file {} not found: run `make model` in the repository root to fetch \
                 all-MiniLM-L6-v2, or pass --model-dir DIR with {WEIGHTS_FILE} and {TOKENIZER_FILE}",
                path.display()
            ),
            LoadError::Invalid { path, reason } => write!(
                f,
                "model file {} is unusable ({reason}): delete it and run `make model` again",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Embedding a batch failed (after a successful load this points at a bug or a resource
/// problem, never at the caller's input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedError {
    /// The tokenizer rejected the batch.
    Tokenize(String),
    /// The forward pass or pooling failed.
    Inference(String),
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Tokenize(e) => write!(f, "tokenization failed: {e}"),
            EmbedError::Inference(e) => write!(f, "inference failed: {e}"),
        }
    }
}

impl std::error::Error for EmbedError {}

fn infer(e: candle_core::Error) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

/// A BERT sentence encoder with mean pooling and L2 normalization.
pub struct SentenceEncoder {
    model: Bert,
    tokenizer: Tokenizer,
    dimensions: usize,
    pad_id: u32,
    device: Device,
}

impl fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing {
            path: path.to_path_buf(),
        },
        _ => LoadError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    })
}

impl SentenceEncoder {
    /// Loads `model.safetensors`, `tokenizer.json` and (if present) `config.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        let weights_path = dir.join(WEIGHTS_FILE);
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let config_path = dir.join(CONFIG_FILE);
        // Check both required files before the slow part, so one run names what is missing.
        for path in [&weights_path, &tokenizer_path] {
            if !path.is_file() {
                return Err(LoadError::Missing { path: path.clone() });
            }
        }

        let config = if config_path.is_file() {
            let bytes = read(&config_path)?;
            serde_json::from_slice::<Config>(&bytes).map_err(|e| LoadError::Invalid {
                path: config_path.clone(),
                reason: e.to_string(),
            })?
        } else {
            Config::minilm_l6()
        };

        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| LoadError::Invalid {
                path: tokenizer_path.clone(),
                reason: e.to_string(),
            })?;
        // The shipped tokenizer.json pads every text to 128 and truncates at 128. Padding is
        // done here per forward pass instead (to the longest text of the pass), and truncation
        // where sentence-transformers does it (256).
        let pad_id = tokenizer
            .get_padding()
            .map(|p| p.pad_id)
            .or_else(|| tokenizer.token_to_id("[PAD]"))
            .unwrap_or(config.pad_token_id as u32);
        tokenizer.with_padding(None);
        let max_length = MAX_TOKENS.min(config.max_position_embeddings);
        let mut truncation = tokenizer.get_truncation().cloned().unwrap_or_default();
        truncation.max_length = max_length;
        tokenizer
            .with_truncation(Some(truncation))
            .map_err(|e| LoadError::Invalid {
                path: tokenizer_path.clone(),
                reason: e.to_string(),
            })?;

        let device = Device::Cpu;
        let weights = read(&weights_path)?;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                LoadError::Invalid {
                    path: weights_path.clone(),
                    reason: e.to_string(),
                }
            })?;
        let model = Bert::load(vb, &config).map_err(|e| LoadError::Invalid {
            path: weights_path.clone(),
            reason: format!("not a BERT model matching {}: {e}", config_path.display()),
        })?;
        Ok(Self {
            model,
            tokenizer,
            dimensions: config.hidden_size,
            pad_id,
            device,
        })
    }

    /// Loads like [`SentenceEncoder::load`] and reports how long it took.
    pub fn load_timed(dir: &Path) -> Result<(Self, Duration), LoadError> {
        let start = Instant::now();
        let encoder = Self::load(dir)?;
        Ok((encoder, start.elapsed()))
    }

    /// Embeds `texts`: tokenized once, sorted by length and run in forward passes of at most
    /// [`FORWARD_ROWS`] texts, each padded to its own longest text. Sorting keeps one long
    /// text from padding a whole request to 256 tokens; the vectors do not depend on the
    /// grouping (padding is masked out of attention and pooling).
    pub fn embed_batch(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        if encodings.len() != texts.len() {
            return Err(EmbedError::Tokenize(format!(
                "{} encodings for {} texts",
                encodings.len(),
                texts.len()
            )));
        }
        let mut order: Vec<(usize, &Encoding)> = encodings.iter().enumerate().collect();
        order.sort_by_key(|(_, e)| e.len());
        let mut vectors = vec![Vec::new(); texts.len()];
        let mut tokens = 0;
        for group in order.chunks(FORWARD_ROWS) {
            let rows: Vec<&Encoding> = group.iter().map(|(_, e)| *e).collect();
            let (pooled, used) = self.forward(&rows)?;
            tokens += used;
            for ((i, _), vector) in group.iter().zip(pooled) {
                if let Some(slot) = vectors.get_mut(*i) {
                    *slot = vector;
                }
            }
        }
        if vectors.iter().any(|v| v.len() != self.dimensions) {
            return Err(EmbedError::Inference(format!(
                "the model did not return {} dimensions for every text",
                self.dimensions
            )));
        }
        Ok(Embedded { vectors, tokens })
    }

    /// One forward pass over `rows` padded to the longest: unit vectors and real token count.
    fn forward(&self, rows: &[&Encoding]) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let batch = rows.len();
        let seq = rows.iter().map(|e| e.len()).max().unwrap_or(0);
        if batch == 0 || seq == 0 {
            return Ok((vec![Vec::new(); batch], 0));
        }
        let mut ids = Vec::with_capacity(batch * seq);
        let mut types = Vec::with_capacity(batch * seq);
        let mut mask = Vec::with_capacity(batch * seq);
        let mut tokens = 0;
        for row in rows {
            let pad = seq - row.len();
            ids.extend_from_slice(row.get_ids());
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            types.extend_from_slice(row.get_type_ids());
            types.extend(std::iter::repeat_n(0u32, pad));
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            mask.extend(std::iter::repeat_n(0u32, pad));
            tokens += row.len();
        }

        let ids = Tensor::from_vec(ids, (batch, seq), &self.device).map_err(infer)?;
        let types = Tensor::from_vec(types, (batch, seq), &self.device).map_err(infer)?;
        let mask = Tensor::from_vec(mask, (batch, seq), &self.device).map_err(infer)?;
        // [batch, seq, hidden]
        let hidden = self.model.forward(&ids, &types, &mask).map_err(infer)?;

        // Mean over the real tokens only: padding positions get weight 0.
        let weights = mask
            .to_dtype(DType::F32)
            .map_err(infer)?
            .unsqueeze(2)
            .map_err(infer)?;
        let summed = hidden
            .broadcast_mul(&weights)
            .map_err(infer)?
            .sum(1)
            .map_err(infer)?;
        let counts = weights.sum(1).map_err(infer)?;
        let mean = summed.broadcast_div(&counts).map_err(infer)?;
        let norms = mean
            .sqr()
            .map_err(infer)?
            .sum_keepdim(1)
            .map_err(infer)?
            .sqrt()
            .map_err(infer)?
            .clamp(1e-12f32, f32::MAX)
            .map_err(infer)?;
        let unit = mean.broadcast_div(&norms).map_err(infer)?;
        let vectors = unit.to_vec2::<f32>().map_err(infer)?;
        Ok((vectors, tokens))
    }
}

impl Embed for SentenceEncoder {
    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        self.embed_batch(texts)
    }
}
