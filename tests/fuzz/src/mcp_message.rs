//! MCP messages as `hookbox mcp` reads them from a client or a server: any
//! line is a message, a batch or refused, never a panic; an id reads the
//! same however it is spelled; and a message that reads is read the same
//! after it is written back compact.

use hookbox_mcp::message::{self, Line};

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    match message::read(line) {
        Line::Message(envelope) => {
            let key = envelope.id_key();
            let method = envelope.method.as_deref().map(str::to_owned);
            let _ = envelope.is_response();
            // Written back without its blanks, it reads the same.
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
                let compact = value.to_string();
                if let Line::Message(again) = message::read(&compact) {
                    assert_eq!(again.id_key(), key, "{line}");
                    assert_eq!(again.method.as_deref().map(str::to_owned), method, "{line}");
                }
            }
        }
        Line::Batch(items) => {
            for item in items {
                let _ = message::read(item.get());
            }
        }
        Line::Invalid(why) => assert!(!why.is_empty()),
    }
}
