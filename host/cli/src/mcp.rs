//! `hookbox mcp`: the stack between an MCP client (on this process's stdio)
//! and the MCP server it starts, or a remote one over streamable HTTP.

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hookbox_mcp::ProxyConfig;

/// `hookbox mcp`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// The plugin directory.
    #[arg(long = "plugins")]
    dir: std::path::PathBuf,
    /// A tool not to offer: left out of tools/list, and a call to it
    /// answered as to a tool that does not exist. Repeat for more.
    #[arg(long = "hide-tool", value_name = "NAME")]
    hide_tools: Vec<String>,
    /// A remote MCP server to guard (the streamable HTTP transport),
    /// instead of starting one.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Serve MCP clients over the streamable HTTP transport on this
    /// address (endpoint `/mcp`) instead of stdio: each client session
    /// gets its own server (or upstream session) and run, on the
    /// directory's stack when it began (the directory reloads). Clients
    /// show a bearer token of HOOKBOX_MCP_TOKENS (comma-separated, one
    /// per client; required unless the address is loopback).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// With --listen: client sessions at once, at most (each has a
    /// server of its own).
    #[arg(long, value_name = "N", requires = "listen")]
    max_sessions: Option<usize>,
    /// With --listen: end a session nobody posted to for this many
    /// seconds, and answer a request the server leaves unanswered as
    /// long with an error (default 1800).
    #[arg(long, value_name = "SECS", requires = "listen")]
    idle_secs: Option<u64>,
    #[command(flatten)]
    browsers: crate::BrowserArgs,
    /// The server takes MCP 2026-07-28 (`server/discover` and requests
    /// naming their revision): pass them through. Without it the proxy
    /// initializes the server itself on a 2026-07-28 client's first
    /// request and bridges the session, since a server from before the
    /// revision may exit on `server/discover`.
    #[arg(long, value_name = "REVISION", value_parser = ["2026-07-28"])]
    server_revision: Option<String>,
    /// The MCP server to start, and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl McpArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        let config = hookbox_mcp::ProxyConfig {
            hidden_tools: self.hide_tools.into_iter().collect(),
            server_takes_2026: self.server_revision.is_some(),
            ..hookbox_mcp::ProxyConfig::default()
        };
        let defaults = hookbox_mcp::listen::Limits::default();
        let limits = hookbox_mcp::listen::Limits {
            sessions: self.max_sessions.unwrap_or(defaults.sessions),
            idle: self.idle_secs.map_or(defaults.idle, Duration::from_secs),
        };
        mcp(
            &self.dir,
            config,
            (
                self.upstream.as_deref(),
                self.listen.map(|addr| (addr, limits)),
            ),
            &self.browsers,
            &self.command,
        )
    }
}

/// How long the server may take to exit once its input is closed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

pub(crate) fn mcp(
    dir: &Path,
    config: ProxyConfig,
    (upstream, listen): (
        Option<&str>,
        Option<(std::net::SocketAddr, hookbox_mcp::listen::Limits)>,
    ),
    browsers: &crate::BrowserArgs,
    command: &[String],
) -> Result<ExitCode> {
    let server = match (upstream, command.split_first()) {
        (Some(url), None) => Upstream::Http(url),
        (None, Some((program, args))) => Upstream::Command(program, args),
        (Some(_), Some(_)) => bail!("either --upstream URL or a command after `--`, not both"),
        (None, None) => bail!(
            "name the MCP server: a command to start after `--` (hookbox mcp --plugins DIR -- COMMAND [ARGS...]), or --upstream URL"
        ),
    };
    if listen.is_none() && !(browsers.hosts.is_empty() && browsers.origins.is_empty()) {
        bail!(
            "--allow-host and --allow-origin are for --listen ADDR; on stdio no browser can reach the proxy"
        );
    }
    let runtime = crate::runtime()?;
    if let Some((addr, limits)) = listen {
        if limits.sessions == 0 || limits.idle.is_zero() {
            bail!("--max-sessions and --idle-secs must be at least 1");
        }
        let tokens = crate::serve::bearer_tokens("HOOKBOX_MCP_TOKENS", addr)?;
        let gate = browsers.gate(tokens, "HOOKBOX_MCP_TOKENS");
        return serve_http(&runtime, dir, config, (addr, gate, limits), server);
    }
    let loaded = hookbox::directory::load(&runtime, dir)?;
    for (status, error) in loaded.failures() {
        tracing::error!(plugin = status.name, "{error}");
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let code = match server {
        Upstream::Command(program, args) => {
            tokio.block_on(command_server(&loaded.stack, &config, program, args))?
        }
        Upstream::Http(url) => tokio.block_on(async {
            let server_io = hookbox_mcp::http_upstream::connect(url, config.max_line_bytes)
                .map_err(anyhow::Error::msg)?;
            let client = (
                tokio::io::BufReader::new(tokio::io::stdin()),
                tokio::io::stdout(),
            );
            match hookbox_mcp::proxy(&loaded.stack, &config, client, server_io).await {
                Ok(_) => Ok::<u8, anyhow::Error>(0),
                Err(e) => {
                    crate::terminal::tell!("hookbox mcp: {e}");
                    Ok(1)
                }
            }
        })?,
    };
    // The runtime's thread reading stdin may be blocked in read(2): do not
    // wait for it.
    tokio.shutdown_background();
    Ok(ExitCode::from(code))
}

/// `--listen`: MCP clients over HTTP, a session each.
fn serve_http(
    runtime: &hookbox::Runtime,
    dir: &Path,
    config: ProxyConfig,
    (addr, gate, limits): (
        std::net::SocketAddr,
        hookbox_adapter::gate::Gate,
        hookbox_mcp::listen::Limits,
    ),
    server: Upstream<'_>,
) -> Result<ExitCode> {
    let watcher = std::sync::Arc::new(hookbox::watch::DirWatcher::start(
        runtime,
        dir,
        Duration::from_millis(100),
    )?);
    let server = match server {
        Upstream::Command(program, args) => Owned::Command(program.clone(), args.to_vec()),
        Upstream::Http(url) => Owned::Http(url.to_owned()),
    };
    let connect: hookbox_mcp::listen::Connect = std::sync::Arc::new(move || {
        let (watcher, server) = (watcher.clone(), server.clone());
        Box::pin(async move {
            let stack = watcher.snapshot().stack.clone();
            let io: hookbox_mcp::listen::UpstreamIo = match server {
                Owned::Http(url) => {
                    let (read, write) = hookbox_mcp::http_upstream::connect(&url, 16 << 20)?;
                    (Box::new(read), Box::new(write))
                }
                Owned::Command(program, args) => {
                    let mut child = tokio::process::Command::new(&program)
                        .args(&args)
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::inherit())
                        .kill_on_drop(true)
                        .spawn()
                        .map_err(|e| format!("cannot start the MCP server `{program}`: {e}"))?;
                    let (Some(out), Some(input)) = (child.stdout.take(), child.stdin.take()) else {
                        return Err("the MCP server's stdio could not be connected".to_owned());
                    };
                    // The server ends when its input closes, with the session.
                    tokio::spawn(async move {
                        let _ = child.wait().await;
                    });
                    (Box::new(tokio::io::BufReader::new(out)), Box::new(input))
                }
            };
            Ok((stack, io))
        })
    });
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        crate::terminal::tell!(
            "hookbox mcp: {} on http://{}/mcp",
            dir.display(),
            listener.local_addr().unwrap_or(addr)
        );
        hookbox_mcp::listen::serve(listener, connect, config, (gate, limits))
            .await
            .context("serving")?;
        Ok(ExitCode::SUCCESS)
    })
}

#[derive(Clone)]
enum Owned {
    Command(String, Vec<String>),
    Http(String),
}

enum Upstream<'a> {
    Command(&'a String, &'a [String]),
    Http(&'a str),
}

/// Starts the server and proxies to it; its exit code.
async fn command_server(
    stack: &hookbox::HookStack,
    config: &ProxyConfig,
    program: &str,
    args: &[String],
) -> Result<u8> {
    {
        let mut server = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start the MCP server `{program}`"))?;
        let (Some(server_in), Some(server_out)) = (server.stdout.take(), server.stdin.take())
        else {
            bail!("the MCP server's stdio could not be connected");
        };
        let client = (
            tokio::io::BufReader::new(tokio::io::stdin()),
            tokio::io::stdout(),
        );
        let server_io = (tokio::io::BufReader::new(server_in), server_out);
        let ended = hookbox_mcp::proxy(stack, config, client, server_io).await;
        let status = match tokio::time::timeout(EXIT_GRACE, server.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                tracing::warn!(
                    "the MCP server did not exit {EXIT_GRACE:?} after its input closed; killing it"
                );
                let _ = server.kill().await;
                None
            }
        };
        match ended {
            Ok(_) => Ok(status
                .and_then(|s| s.code())
                .map_or(1, |c| c.clamp(0, 255) as u8)),
            Err(e) => {
                crate::terminal::tell!("hookbox mcp: {e}");
                Ok(1)
            }
        }
    }
}
