//! The guest→host boundary: a guest whose answer is whatever bytes the
//! fuzzer gives (the flow's memory image: its tag, and pointers and lengths
//! into the guest's memory), lifted by the host. Every answer is a decision
//! the event honours or a fail-closed naming the guest; never a panic, never
//! a flow the event cannot take.
//!
//! The guest reads the bytes, hex-encoded, from its `answer` config entry,
//! copies them to 16384 and returns that address as its flow.

use std::sync::{Arc, OnceLock};

use hookbox::{
    HookStack, Limits, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent, ToolCall,
    ToolResult,
};

const GUEST: &str = r#"(module
  (import "hookbox:hook/config@0.1.0" "get" (func $get (param i32 i32 i32)))
  (memory (export "memory") 2)
  (global $bump (mut i32) (i32.const 65536))
  (data (i32.const 1024) "\00\01\02\03\04\05\06\07\08")
  (data (i32.const 2048) "\00\04\00\00\09\00\00\00")
  (data (i32.const 2100) "answer")
  (data (i32.const 3072) "\00")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get 2))))
    (global.set $bump (i32.add (local.get $ptr) (local.get 3)))
    (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
      (then (if (i32.lt_s (memory.grow (i32.add (i32.shr_u (local.get 3) (i32.const 16)) (i32.const 1)))
                          (i32.const 0))
              (then unreachable))))
    (local.get $ptr))
  (func (export "subscriptions") (result i32) (i32.const 2048))
  (func $nibble (param i32) (result i32)
    (if (result i32) (i32.le_u (local.get 0) (i32.const 57))
      (then (i32.sub (local.get 0) (i32.const 48)))
      (else (i32.sub (local.get 0) (i32.const 87)))))
  (func (export "on-event") (param i32) (result i32)
    (local $src i32) (local $n i32) (local $i i32)
    (call $get (i32.const 2100) (i32.const 6) (i32.const 4000))
    (if (i32.eqz (i32.load8_u (i32.const 4000))) (then (return (i32.const 3072))))
    (local.set $src (i32.load (i32.const 4004)))
    (local.set $n (i32.shr_u (i32.load (i32.const 4008)) (i32.const 1)))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store8 (i32.add (i32.const 16384) (local.get $i))
          (i32.or
            (i32.shl (call $nibble (i32.load8_u (i32.add (local.get $src) (i32.shl (local.get $i) (i32.const 1)))))
                     (i32.const 4))
            (call $nibble (i32.load8_u (i32.add (local.get $src)
                                                (i32.add (i32.shl (local.get $i) (i32.const 1)) (i32.const 1)))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (i32.const 16384))
)"#;

/// At most this many answer bytes (the guest copies them below its heap).
const MAX_ANSWER: usize = 16 << 10;

fn component() -> Vec<u8> {
    let mut module = wat::parse_str(GUEST).expect("the guest is valid WAT");
    let mut resolve = wit_parser::Resolve::default();
    let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
    let (package, _) = resolve.push_dir(&wit).expect("the contract parses");
    let world = resolve
        .select_world(&[package], Some("hook"))
        .expect("the hook world");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module encodes")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

fn base() -> &'static Plugin {
    static BASE: OnceLock<Plugin> = OnceLock::new();
    BASE.get_or_init(|| {
        let runtime = Runtime::new(RuntimeConfig {
            max_instances: 8,
            ..Default::default()
        })
        .expect("runtime");
        Plugin::from_bytes(&runtime, "fuzzed", &component(), PluginOptions::default())
            .expect("the guest loads")
    })
}

fn events() -> [StepEvent; 2] {
    [
        StepEvent::ToolCall(ToolCall {
            tool_name: "shell".into(),
            tool_call_id: Some("call-1".into()),
            internal_call_id: "i-1".into(),
            args: r#"{"command":"ls"}"#.into(),
        }),
        StepEvent::ToolResult(ToolResult {
            tool_name: "shell".into(),
            tool_call_id: Some("call-1".into()),
            internal_call_id: "i-1".into(),
            result: "file.txt".into(),
            ..Default::default()
        }),
    ]
}

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let data = &data[..data.len().min(MAX_ANSWER)];
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let options = PluginOptions {
        config: [("answer".to_string(), hex)].into(),
        limits: Some(Limits {
            deadline: std::time::Duration::from_secs(5),
            ..Default::default()
        }),
    };
    let plugin = base().with_options(options).expect("the guest starts");
    let mut stack = HookStack::new();
    stack.push_plugin(Arc::new(plugin));
    for event in events() {
        let kind = event.kind();
        let mut run = stack.start_run("fuzz");
        match run.step(&event) {
            Ok(decision) => assert!(
                kind.honours(&decision.flow),
                "{kind} does not honour {:?}",
                decision.flow
            ),
            Err(failure) => assert_eq!(&*failure.plugin, "fuzzed", "{failure}"),
        }
    }
}
