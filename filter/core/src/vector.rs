//! Vectors for semantic ranking: normalization and cosine similarity over unit vectors.

/// Scales `v` to unit length in place; `None` (and `v` untouched) for a zero or non-finite
/// vector, which no cosine could be computed against.
pub fn normalize(v: &mut [f32]) -> Option<()> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    Some(())
}

/// The dot product; the cosine when both are unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_compares() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert!((dot(&v, &v) - 1.0).abs() < 1e-6);
        assert!(normalize(&mut [0.0, 0.0]).is_none());
        assert!(normalize(&mut [f32::NAN, 1.0]).is_none());
    }
}

/// The vectors of a catalog's tools, by catalog position (`None`: not embedded yet).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ToolVectors {
    pub by_position: Vec<Option<Vec<f32>>>,
}

impl ToolVectors {
    pub fn get(&self, position: usize) -> Option<&[f32]> {
        self.by_position.get(position).and_then(|v| v.as_deref())
    }

    /// How many tools have a vector.
    pub fn count(&self) -> usize {
        self.by_position.iter().filter(|v| v.is_some()).count()
    }
}
