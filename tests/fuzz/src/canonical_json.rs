//! The one canonical JSON form every guard and tool sees: the fast path
//! writes exactly what a `serde_json::Value` writes, and the form is a
//! fixed point.

use serde_json::Value;

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(canonical) = hookbox::json::canonical(text) else {
        return;
    };
    assert_eq!(
        hookbox::json::canonical(&canonical).as_deref(),
        Some(canonical.as_str()),
        "the canonical form of {text:?} is not canonical"
    );
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        assert_eq!(canonical, value.to_string(), "for {text:?}");
    }
}
