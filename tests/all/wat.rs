//! Guests written as core WAT and made into components of the hook world:
//! the simplest way to misbehave precisely.

/// A core module implementing the hook world: subscribes to every kind and
/// runs `on_event_body` (which must leave an `i32` pointer to the flow).
/// `extra` adds module fields (functions, tables, a start function ...).
/// Memory layout: the subscription list at 1024, its (ptr, len) at 2048, a
/// continue flow at 3072, the allocator's heap from 8192.
pub fn hook(on_event_body: &str, extra: &str) -> Vec<u8> {
    module(on_event_body, "(i32.const 2048)", extra)
}

/// Like [`hook`], with the body of `subscriptions` given too.
pub fn hook_with_subscriptions(on_event_body: &str, subscriptions_body: &str) -> Vec<u8> {
    module(on_event_body, subscriptions_body, "")
}

fn module(on_event_body: &str, subscriptions_body: &str, extra: &str) -> Vec<u8> {
    let core = format!(
        r#"(module
  (memory (export "memory") 4)
  (global $bump (mut i32) (i32.const 8192))
  (data (i32.const 1024) "\00\01\02\03\04\05\06\07\08")
  (data (i32.const 2048) "\00\04\00\00\09\00\00\00")
  (data (i32.const 3072) "\00")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get 2))))
    (global.set $bump (i32.add (local.get $ptr) (local.get 3)))
    (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (local.get 3) (i32.const 16)) (i32.const 1))))))
    (local.get $ptr))
  (func (export "subscriptions") (result i32) {subscriptions_body})
  (func (export "on-event") (param i32) (result i32) {on_event_body})
  {extra}
)"#
    );
    hookbox_tests::component_from_core_wat(&core).expect("WAT guest encodes as a component")
}

/// Bytes of a WAT text (a core module or a component).
pub fn parse(text: &str) -> Vec<u8> {
    ::wat::parse_str(text).expect("valid WAT")
}
