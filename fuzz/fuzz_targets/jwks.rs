//! Signed agent cards' key sets (JWKS) and JWS protected headers: read or refused, never a
//! panic; a key set read has at most the keys the cap allows, each with a unique kid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use orrery_crds::jwks::{MAX_KEYS, parse_jwks, parse_protected_header, to_base64url};

fuzz_target!(|data: &[u8]| {
    if let Ok(set) = parse_jwks(data) {
        assert!(!set.keys.is_empty() && set.keys.len() <= MAX_KEYS);
        for (i, key) in set.keys.iter().enumerate() {
            assert!(set.keys[..i].iter().all(|k| k.kid != key.kid));
        }
    }
    let _ = parse_protected_header(&to_base64url(data));
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_protected_header(text);
    }
});
