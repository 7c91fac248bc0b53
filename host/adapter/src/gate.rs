//! Who may reach a hookbox server over HTTP (`hookbox serve`, `hookbox mcp
//! --listen`): the one rule both keep, so a browser cannot use either.
//!
//! A server on loopback without tokens is reachable by every web page the
//! machine's browser opens: a cross-origin `text/plain` POST needs no CORS
//! preflight, and after DNS rebinding a page's own name resolves to
//! 127.0.0.1, so it reads the answers too. Agents and MCP clients are not
//! browsers: they send no `Origin`, and a `Host` naming this machine. So a
//! request is let in only when
//!
//! | `Host` (its name; any port) | `Origin` | tokens | answer |
//! |---|---|---|---|
//! | another name than `localhost`, an IP literal or an allowed one | any | any | [`Refused::Host`] (DNS rebinding: a page's name resolved to this machine) |
//! | none (HTTP/1.0), `localhost`, an IP literal, or allowed ([`Gate::allow_hosts`]) | none | none configured | in, as client 0 |
//! | as above | `null` (a sandboxed frame, a file) | any | [`Refused::Origin`] |
//! | as above | the request's own (`http://` or `https://` and its `Host`), or allowed ([`Gate::allow_origins`]) | none configured | in, as client 0 |
//! | as above | any other | any | [`Refused::Origin`] (another site's page) |
//! | as above | none, own or allowed | configured | in as the client whose token `Authorization: Bearer TOKEN` shows; without one of them [`Refused::Token`] |
//!
//! A door answers a refusal in its client's terms: an HTTP status with the
//! refusal's text, or an agent's hook its own block (which it honours, as
//! it would not a 403). [`Gate::admit`] is a pure function of the three
//! headers; tokens are compared in full and in constant time.

use std::fmt;
use std::net::IpAddr;

/// The client a request came from: the place of the token it showed, from
/// 1 (0 when the server needs none). Runs and sessions belong to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Client(pub usize);

/// The headers [`Gate::admit`] reads, as the request carries them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Asked<'a> {
    /// `Host` (or HTTP/2's `:authority`).
    pub host: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// `Authorization`.
    pub authorization: Option<&'a str>,
}

impl<'a> Asked<'a> {
    /// The three headers as `header(name)` finds them (names in lower
    /// case; `Err` for a value that is not visible ASCII). Such a value is
    /// read as one no rule lets in, never as a header that is absent.
    pub fn from_headers(
        mut header: impl FnMut(&'static str) -> Option<Result<&'a str, ()>>,
    ) -> Asked<'a> {
        let mut read = |name| header(name).map(|value| value.unwrap_or("\u{fffd}"));
        Asked {
            host: read("host"),
            origin: read("origin"),
            authorization: read("authorization"),
        }
    }
}

/// Why a request may not come in; its text says what would let it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its `Host` names neither this machine nor a name the operator allows.
    Host(String),
    /// It comes from a web page (its `Origin`) other than the server's own.
    Origin(String),
    /// Tokens are needed and it shows none of them.
    Token {
        /// Where the server's tokens come from, for the message.
        source: &'static str,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Host(host) => write!(
                f,
                "Host `{host}` is not a name of this server (a web page's own name resolved to \
                 this machine is how DNS rebinding reaches a local server); a proxy or name that \
                 serves it is allowed with --allow-host NAME"
            ),
            Refused::Origin(origin) => write!(
                f,
                "requests from web pages (Origin `{origin}`) are refused: this server is for \
                 agents and MCP clients, which send no Origin; a page that must reach it is \
                 allowed with --allow-origin ORIGIN"
            ),
            Refused::Token { source } => write!(
                f,
                "this server needs `Authorization: Bearer TOKEN` (a token of {source})"
            ),
        }
    }
}

impl std::error::Error for Refused {}

/// The server's rule for who comes in (module docs).
#[derive(Clone, Debug)]
pub struct Gate {
    tokens: Vec<String>,
    source: &'static str,
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl Gate {
    /// Lets in requests that show one of `tokens` (any when it is empty),
    /// from no web page, to a `Host` naming this machine. `source` says
    /// where the tokens are configured (an environment variable), for the
    /// refusal's text.
    pub fn new(tokens: Vec<String>, source: &'static str) -> Gate {
        Gate {
            tokens,
            source,
            hosts: Vec::new(),
            origins: Vec::new(),
        }
    }

    /// Also lets in a `Host` of one of these names (a reverse proxy's, a
    /// DNS name of this machine), with any port; case does not matter.
    pub fn allow_hosts(mut self, names: impl IntoIterator<Item = String>) -> Gate {
        self.hosts
            .extend(names.into_iter().map(|name| normal_name(&name)));
        self
    }

    /// Also lets in requests from these web origins (`scheme://host[:port]`,
    /// as a browser sends them).
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = String>) -> Gate {
        self.origins.extend(
            origins
                .into_iter()
                .map(|origin| origin.trim_end_matches('/').to_ascii_lowercase()),
        );
        self
    }

    /// Whether tokens are needed.
    pub fn needs_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Whether a request with these headers may come in from a browser's
    /// point of view: its `Host` and `Origin` (the first three rows).
    ///
    /// # Errors
    /// [`Refused::Host`] or [`Refused::Origin`].
    pub fn browser(&self, asked: &Asked<'_>) -> Result<(), Refused> {
        if let Some(host) = asked.host
            && !self.host_allowed(host)
        {
            return Err(Refused::Host(host.to_owned()));
        }
        let Some(origin) = asked.origin else {
            return Ok(());
        };
        let lower = origin.trim_end_matches('/').to_ascii_lowercase();
        let own = asked.host.is_some_and(|host| {
            let host = host.to_ascii_lowercase();
            lower.strip_prefix("http://") == Some(host.as_str())
                || lower.strip_prefix("https://") == Some(host.as_str())
        });
        if own || self.origins.contains(&lower) {
            Ok(())
        } else {
            Err(Refused::Origin(origin.to_owned()))
        }
    }

    /// The client a request with these headers is, or why it may not come
    /// in (the module's table).
    ///
    /// # Errors
    /// [`Refused`], the first that applies.
    pub fn admit(&self, asked: &Asked<'_>) -> Result<Client, Refused> {
        self.browser(asked)?;
        self.client(asked.authorization).ok_or(Refused::Token {
            source: self.source,
        })
    }

    /// The client whose token `authorization` (`Bearer TOKEN`) shows.
    fn client(&self, authorization: Option<&str>) -> Option<Client> {
        use subtle::ConstantTimeEq;
        if self.tokens.is_empty() {
            return Some(Client(0));
        }
        let shown = authorization?.strip_prefix("Bearer ")?.trim().as_bytes();
        // Every token compared in full, so timing tells nothing of which
        // one, or how much of it, matched.
        let mut found = None;
        for (i, token) in self.tokens.iter().enumerate() {
            if bool::from(token.as_bytes().ct_eq(shown)) {
                found = Some(Client(i + 1));
            }
        }
        found
    }

    fn host_allowed(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        let name = normal_name(name);
        name == "localhost"
            || name
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok()
            || self.hosts.contains(&name)
    }
}

/// The name part of a `Host` value (`name`, `name:port`, `[v6]:port`), or
/// `None` when it is not one.
fn host_name(host: &str) -> Option<&str> {
    if host.starts_with('[') {
        let end = host.find(']')?;
        let rest = &host[end + 1..];
        return (rest.is_empty() || is_port(rest.strip_prefix(':')?)).then(|| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) && !name.contains(':') => Some(name),
        Some(_) => None,
        None => Some(host),
    }
    .filter(|name| !name.is_empty())
}

fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

/// A host name as compared: lower case, without a final dot.
fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked<'a>(host: Option<&'a str>, origin: Option<&'a str>) -> Asked<'a> {
        Asked {
            host,
            origin,
            authorization: None,
        }
    }

    fn open() -> Gate {
        Gate::new(Vec::new(), "HOOKBOX_TEST_TOKENS")
    }

    /// Row 1: a name that is not this machine's is DNS rebinding, whatever
    /// else the request shows.
    #[test]
    fn a_foreign_host_is_refused() {
        let gate = Gate::new(vec!["t".into()], "HOOKBOX_TEST_TOKENS");
        for host in [
            "evil.example",
            "evil.example:8787",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8787",
            "",
            "localhost:port",
            "[::1",
        ] {
            let request = Asked {
                host: Some(host),
                origin: None,
                authorization: Some("Bearer t"),
            };
            assert_eq!(
                gate.admit(&request),
                Err(Refused::Host(host.into())),
                "{host}"
            );
        }
    }

    /// Row 2: what an agent sends.
    #[test]
    fn this_machine_with_no_origin_is_let_in() {
        for host in [
            None,
            Some("localhost"),
            Some("LocalHost.:8787"),
            Some("127.0.0.1:8787"),
            Some("10.1.2.3"),
            Some("[::1]:8787"),
            Some("[::1]"),
        ] {
            assert_eq!(open().admit(&asked(host, None)), Ok(Client(0)), "{host:?}");
        }
        let allowed = open().allow_hosts(["Hooks.Internal".to_owned()]);
        assert_eq!(
            allowed.admit(&asked(Some("hooks.internal:443"), None)),
            Ok(Client(0))
        );
    }

    /// Row 3: an opaque origin is a page all the same.
    #[test]
    fn a_null_origin_is_refused() {
        assert_eq!(
            open().admit(&asked(Some("127.0.0.1:8787"), Some("null"))),
            Err(Refused::Origin("null".into()))
        );
    }

    /// Row 4: the server's own origin, or one the operator allows.
    #[test]
    fn the_own_or_an_allowed_origin_is_let_in() {
        let gate = open().allow_origins(["http://localhost:6274".to_owned()]);
        for (host, origin) in [
            ("127.0.0.1:8787", "http://127.0.0.1:8787"),
            ("localhost:8787", "https://LOCALHOST:8787/"),
            ("127.0.0.1:8787", "http://localhost:6274"),
        ] {
            assert_eq!(
                gate.admit(&asked(Some(host), Some(origin))),
                Ok(Client(0)),
                "{origin}"
            );
        }
    }

    /// Row 5: another site's page, a local one on another port too.
    #[test]
    fn another_origin_is_refused() {
        for origin in [
            "http://evil.example",
            "http://localhost",
            "http://127.0.0.1:3000",
            "http://127.0.0.1:8787.evil.example",
        ] {
            assert_eq!(
                open().admit(&asked(Some("127.0.0.1:8787"), Some(origin))),
                Err(Refused::Origin(origin.into())),
                "{origin}"
            );
        }
        // With no Host to be the same as, no origin is the server's own.
        assert!(
            open()
                .admit(&asked(None, Some("http://127.0.0.1:8787")))
                .is_err()
        );
    }

    /// A header that is not visible ASCII is not an absent one.
    #[test]
    fn an_unreadable_header_is_refused_not_ignored() {
        let asked = Asked::from_headers(|name| (name == "origin").then_some(Err(())));
        assert_eq!(asked.host, None);
        assert!(matches!(open().admit(&asked), Err(Refused::Origin(_))));
    }

    /// Row 6: with tokens, the token names the client.
    #[test]
    fn with_tokens_the_token_shown_is_the_client() {
        let gate = Gate::new(vec!["alice".into(), "bob".into()], "HOOKBOX_TEST_TOKENS");
        let with = |authorization| Asked {
            host: Some("127.0.0.1:8787"),
            origin: None,
            authorization,
        };
        assert_eq!(gate.admit(&with(Some("Bearer bob"))), Ok(Client(2)));
        assert_eq!(gate.admit(&with(Some("Bearer alice "))), Ok(Client(1)));
        for shown in [None, Some("Bearer bo"), Some("bob"), Some("Basic Ym9i")] {
            let refused = gate.admit(&with(shown)).unwrap_err();
            assert_eq!(
                refused,
                Refused::Token {
                    source: "HOOKBOX_TEST_TOKENS"
                }
            );
            assert!(refused.to_string().contains("HOOKBOX_TEST_TOKENS"));
        }
    }
}
