//! Flows in their JSON form (replay files, `serve` answers read back by
//! clients): decode or refuse, and round-trip exactly.

use hookbox::{EventKind, Flow};

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let Ok(flow) = serde_json::from_slice::<Flow>(data) else {
        return;
    };
    let text = serde_json::to_string(&flow).expect("a decoded flow always encodes");
    let again: Flow = serde_json::from_str(&text).expect("an encoded flow decodes");
    assert_eq!(flow, again, "{text}");
    for kind in EventKind::ALL {
        let _ = kind.honours(&flow);
    }
}
