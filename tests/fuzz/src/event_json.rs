//! Events as clients post them (`serve`, `replay`, the MCP proxy): any bytes
//! either decode or are refused, and what decodes writes back to a form that
//! reads back the same.

use hookbox::StepEvent;

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let Ok(event) = serde_json::from_slice::<StepEvent>(data) else {
        return;
    };
    let _ = (event.kind(), event.payload_len());
    let text = serde_json::to_string(&event).expect("a decoded event always encodes");
    let again: StepEvent = serde_json::from_str(&text).expect("an encoded event decodes");
    assert_eq!(event, again, "{text}");
}
