//! A real browser for the tests: Debian's `chromium`, headless, loading a
//! page from a loopback origin of its own (tests/browser/setup.sh installs
//! it; `HOOKBOX_BROWSER=required`, as CI sets it, makes its absence a
//! failure rather than a skip).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::directory::scratch_dir;

/// The Chromium to run (`$HOOKBOX_CHROMIUM`, else `chromium` on `PATH`), or
/// `None` when there is none and none is required.
///
/// # Panics
/// When `HOOKBOX_BROWSER=required` and there is no Chromium.
pub fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("HOOKBOX_CHROMIUM").map(PathBuf::from);
    let found = named.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("HOOKBOX_BROWSER").as_deref() != Ok("required"),
            "HOOKBOX_BROWSER=required and no chromium: run tests/browser/setup.sh (as root) or set HOOKBOX_CHROMIUM"
        );
        eprintln!("skipped: no chromium (tests/browser/setup.sh installs Debian's)");
    }
    found
}

/// Serves `html` to every request on a loopback port of its own (another
/// origin than any server under test) for as long as the test process
/// lives; returns the page's URL.
pub fn serve_page(html: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            // The request head, up to its blank line.
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                &stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    url
}

/// The DOM of `url` after its scripts settle, as headless `chromium`
/// prints it.
///
/// # Panics
/// When Chromium fails or takes more than a minute.
pub fn dump_dom(chromium: &std::path::Path, url: &str) -> String {
    let profile = scratch_dir("chromium-profile");
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let pid = child.id().to_string();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let Ok(out) = finished.recv_timeout(Duration::from_secs(60)) else {
        let _ = Command::new("kill").args(["-9", &pid]).status();
        panic!("chromium took more than a minute on {url}");
    };
    let out = out.unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
