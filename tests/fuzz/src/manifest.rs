//! `hookbox.toml` from a plugin directory someone else may have written:
//! parse or refuse with a reason, never panic; what parses yields names,
//! limits and config.

use hookbox::Limits;
use hookbox::manifest::Manifest;

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Manifest::parse(text) {
        Ok(manifest) => {
            for entry in &manifest.plugins {
                let _ = (entry.name(), entry.config_text());
                let _ = entry.limits.apply(&Limits::default());
            }
        }
        Err(reason) => assert!(!reason.is_empty()),
    }
}
