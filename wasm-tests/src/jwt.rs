//! HS256 JSON Web Tokens for end-to-end tests of Envoy's `jwt_authn` filter, and the matching
//! `oct` JWKS to inline in its config. Pure Rust (HMAC over `sha2`, RFC 2104), no OpenSSL.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// `jwt_authn` provider name, issuer and audience the tests use.
pub const ISSUER: &str = "https://issuer.mcp-tool-search.test";
pub const AUDIENCE: &str = "mcp-tool-search";
pub const KEY_ID: &str = "e2e-hs256";

/// Base64url without padding (RFC 7515 §2).
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    let sextet = |v: u32, shift: u32| -> char {
        let i = ((v >> shift) & 63) as usize;
        ALPHABET.get(i).map(|&b| char::from(b)).unwrap_or('A')
    };
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let v = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(sextet(v, 18));
        out.push(sextet(v, 12));
        if chunk.len() > 1 {
            out.push(sextet(v, 6));
        }
        if chunk.len() > 2 {
            out.push(sextet(v, 0));
        }
    }
    out
}

/// HMAC-SHA256 (RFC 2104; block size 64).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        let digest = Sha256::digest(key);
        for (slot, b) in block.iter_mut().zip(digest.iter()) {
            *slot = *b;
        }
    } else {
        for (slot, b) in block.iter_mut().zip(key.iter()) {
            *slot = *b;
        }
    }
    let pad = |x: u8| -> Vec<u8> { block.iter().map(|b| b ^ x).collect() };
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner);
    outer.finalize().into()
}

/// A signing key and its JWKS.
#[derive(Debug, Clone)]
pub struct Hs256Key {
    pub secret: Vec<u8>,
    pub kid: String,
}

impl Hs256Key {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            secret: secret.to_vec(),
            kid: KEY_ID.to_owned(),
        }
    }

    /// `{"keys":[{"kty":"oct","alg":"HS256","kid":..,"k":..}]}` (RFC 7518 §6.4).
    pub fn jwks(&self) -> String {
        json!({"keys": [{
            "kty": "oct",
            "alg": "HS256",
            "use": "sig",
            "kid": self.kid,
            "k": base64url(&self.secret),
        }]})
        .to_string()
    }

    /// A compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "HS256", "typ": "JWT", "kid": self.kid});
        let signing_input = format!(
            "{}.{}",
            base64url(header.to_string().as_bytes()),
            base64url(claims.to_string().as_bytes())
        );
        let signature = hmac_sha256(&self.secret, signing_input.as_bytes());
        format!("{signing_input}.{}", base64url(&signature))
    }

    /// A token for `sub` with these `roles`, valid for an hour, for [`ISSUER`] and [`AUDIENCE`].
    pub fn token(&self, sub: &str, roles: &[&str]) -> String {
        let now = now();
        self.sign(&json!({
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": sub,
            "roles": roles,
            "iat": now,
            "exp": now + 3600,
        }))
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn base64url_vectors() {
        // RFC 4648 §10, in the URL alphabet without padding.
        for (input, want) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64url(input.as_bytes()), want);
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn hmac_rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn rfc7515_a1_signature() {
        // RFC 7515 Appendix A.1: the HS256 example, signing input and key as given there.
        let k = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow";
        let key = decode(k);
        let input = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
        assert_eq!(
            base64url(&hmac_sha256(&key, input.as_bytes())),
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        );
    }

    fn decode(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0);
        for c in s.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                _ => 63,
            };
            acc = (acc << 6) | u32::from(v);
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        out
    }
}
