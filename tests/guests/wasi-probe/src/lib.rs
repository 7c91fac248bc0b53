//! A wasm32-wasip2 guest that reaches for every ambient capability WASI
//! offers and reports what it found, as the reason of a terminate flow:
//! `files=... env=... args=... net=... time=... elapsed=...`. It also prints a line to
//! stdout and stderr, which the host must route to its log. Called for the
//! tool `newline-flood`, it prints 200,000 empty lines instead.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent};

struct Probe;

impl Hook for Probe {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        if let StepEvent::ToolCall(call) = &event
            && call.tool_name == "newline-flood"
        {
            print!("{}", "\n".repeat(200_000));
            return Flow::Continue;
        }
        let files = ["/", ".", "/etc/passwd", "/proc/self/environ"]
            .iter()
            .filter(|p| std::fs::metadata(p).is_ok() || std::fs::read_dir(p).is_ok())
            .count();
        let env = std::env::vars().count();
        let args = std::env::args().count();
        let net = std::net::TcpStream::connect("127.0.0.1:80").is_ok() as u8
            + std::net::UdpSocket::bind("0.0.0.0:0").is_ok() as u8;
        let started = std::time::Instant::now();
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(u64::MAX, |d| d.as_secs());
        let elapsed = started.elapsed().as_nanos();
        println!("wasi-probe: hello from stdout");
        eprintln!("wasi-probe: hello from stderr");
        Flow::terminate(format!(
            "files={files} env={env} args={args} net={net} time={time} elapsed={elapsed}"
        ))
    }
}

hookbox_sdk::hook!(Probe);
