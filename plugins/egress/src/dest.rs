//! Where a call would connect: a host read from a URL or from a command's
//! argument as the client reads it, and the operator's lists it is checked
//! against.
//!
//! A URL is read twice: as WHATWG's URL standard reads it (browsers, most
//! HTTP libraries, the `url` crate) and as RFC 3986 does (curl, wget,
//! Python's `urllib`). Where the two disagree on the host (`http://a.com\@b.com`:
//! WHATWG reads `a.com`, curl `b.com`) the URL is ambiguous and refused:
//! whichever host the guard checked, the client might reach the other.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A host, as a client resolves it: a domain in ASCII (IDN as punycode,
/// lower case, no trailing dot) or an IP address (IPv4 in any of its
/// spellings: `2130706433`, `0x7f.1`, `0177.0.0.1` are 127.0.0.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    Domain(String),
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Domain(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Host {
    /// `text` read as a host (a domain, an IPv4 address in any spelling,
    /// `[IPv6]`), or `None` when it is not one.
    pub fn parse(text: &str) -> Option<Host> {
        let text = text.strip_suffix('.').unwrap_or(text);
        if text.is_empty() {
            return None;
        }
        match url::Host::parse(text).ok()? {
            url::Host::Domain(name) => Some(Host::Domain(name.trim_end_matches('.').to_owned())),
            url::Host::Ipv4(ip) => Some(Host::Ip(IpAddr::V4(ip))),
            url::Host::Ipv6(ip) => Some(Host::Ip(unmapped(ip))),
        }
    }

    /// Whether the host is this machine, a private network or a cloud's
    /// metadata service: where a call reaches what the internet cannot.
    pub fn is_internal(&self) -> bool {
        match self {
            Host::Domain(name) => {
                // And the names /etc/hosts gives this machine.
                [
                    "localhost",
                    "localhost.localdomain",
                    "ip6-localhost",
                    "ip6-loopback",
                ]
                .contains(&name.as_str())
                    || name.ends_with(".localhost")
                    || name.ends_with(".internal")
                    || name.ends_with(".local")
                    || name == "metadata"
            }
            Host::Ip(IpAddr::V4(ip)) => is_internal_v4(*ip),
            Host::Ip(IpAddr::V6(ip)) => {
                let first = ip.segments()[0];
                ip.is_loopback()
                    || ip.is_unspecified()
                    || (first & 0xfe00) == 0xfc00 // unique local, fd00:ec2::254 among them
                    || (first & 0xffc0) == 0xfe80 // link-local
            }
        }
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254.169.254, the metadata services'
        || ip.is_unspecified()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is that address.
fn unmapped(ip: Ipv6Addr) -> IpAddr {
    match ip.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(ip),
    }
}

/// A host the operator named: a domain, `*.` and a domain (any of its
/// subdomains, not itself), or an IP address.
#[derive(Clone, Debug)]
pub enum Pattern {
    Exactly(Host),
    Under(String),
}

impl Pattern {
    /// `text` as a pattern, read as hosts are (so `Münich.de` names the
    /// punycode host a client would reach); `None` when it names no host.
    pub fn parse(text: &str) -> Option<Pattern> {
        let text = text.trim();
        match text.strip_prefix("*.") {
            Some(domain) => match Host::parse(domain)? {
                Host::Domain(name) => Some(Pattern::Under(name)),
                Host::Ip(_) => None,
            },
            None => Host::parse(text).map(Pattern::Exactly),
        }
    }

    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (Pattern::Exactly(named), host) => named == host,
            (Pattern::Under(domain), Host::Domain(name)) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            (Pattern::Under(_), Host::Ip(_)) => false,
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Exactly(host) => write!(f, "{host}"),
            Pattern::Under(domain) => write!(f, "*.{domain}"),
        }
    }
}

/// Every URL written in `text` (`scheme://…` up to a space, a quote or a
/// bracket that closes around it).
pub fn urls_in(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let at = from + text.get(from..)?.find("://")?;
            let start = bytes[..at]
                .iter()
                .rposition(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')))
                .map_or(0, |p| p + 1);
            let end = at
                + 3
                + bytes[at + 3..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || b"\"'<>`(){}".contains(b))
                    .unwrap_or(bytes.len() - at - 3);
            from = end.max(at + 3);
            // A scheme starts with a letter.
            if start < at && bytes[start].is_ascii_alphabetic() {
                return Some(&text[start..end]);
            }
        }
    })
}

/// Why a host in a variable or a substitution is refused.
pub const COMPUTED: &str = "its host is computed when the command runs (a `$` variable or substitution), so it cannot be checked; write the host out";

/// The host a URL reaches, `Ok(None)` for a URL with none (`file:///x`,
/// `mailto:`), or why the URL is refused.
pub fn url_host(text: &str) -> Result<Option<Host>, &'static str> {
    if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("it holds a control character or a space");
    }
    let whatwg = url::Url::parse(text).map_err(|_| "it does not parse as a URL")?;
    let Some(read) = whatwg.host() else {
        return Ok(None);
    };
    let host = match read {
        url::Host::Domain(name) => {
            // What DNS cannot hold, no client resolves the same way twice
            // (`127.0.0.1!`, `a%00b`): refused rather than guessed.
            if name.contains(['$', '`']) {
                return Err(COMPUTED);
            }
            if !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
            {
                return Err("its host is not a name DNS can hold");
            }
            Host::parse(name).ok_or("its host does not parse")?
        }
        url::Host::Ipv4(ip) => Host::Ip(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Host::Ip(unmapped(ip)),
    };
    // RFC 3986: the authority runs from `//` to the first `/`, `?` or `#`;
    // the host follows its last `@` and ends at the port's `:`.
    let after = &text[text.find("//").map_or(0, |at| at + 2)..];
    let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let rfc_host = if let Some(v6) = host_port.strip_prefix('[') {
        &host_port[..v6.find(']').map_or(host_port.len(), |end| end + 2)]
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    match Host::parse(rfc_host) {
        Some(other) if other == host => Ok(Some(host)),
        _ => Err("clients read its host differently (a `\\`, an `@` or a `%` in the authority)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> String {
        match url_host(text) {
            Ok(Some(host)) => host.to_string(),
            Ok(None) => "(none)".into(),
            Err(why) => format!("refused: {why}"),
        }
    }

    #[test]
    fn a_url_is_read_as_clients_read_it() {
        assert_eq!(host("https://API.GitHub.com./repos"), "api.github.com");
        assert_eq!(host("https://münchen.de/"), "xn--mnchen-3ya.de");
        assert_eq!(host("http://2130706433/"), "127.0.0.1");
        assert_eq!(host("http://0x7f.1/"), "127.0.0.1");
        assert_eq!(host("http://0177.0.0.1/"), "127.0.0.1");
        assert_eq!(host("http://[::ffff:169.254.169.254]/"), "169.254.169.254");
        assert_eq!(host("https://user:pw@evil.example:8443/x"), "evil.example");
        assert_eq!(host("file:///etc/passwd"), "(none)");
    }

    #[test]
    fn a_userinfo_that_looks_like_the_host_is_not_the_host() {
        assert_eq!(host("https://api.github.com@evil.example/"), "evil.example");
        assert_eq!(
            host("https://api.github.com:443@evil.example/"),
            "evil.example"
        );
    }

    #[test]
    fn a_url_clients_read_two_ways_is_refused() {
        for url in [
            "http://api.github.com\\@evil.example/",
            "http://api.github.com /",
        ] {
            assert!(host(url).starts_with("refused"), "{url}: {}", host(url));
        }
    }

    #[test]
    fn patterns_match_hosts_and_subdomains() {
        let under = Pattern::parse("*.pypi.org").unwrap();
        assert!(under.matches(&Host::parse("files.pypi.org").unwrap()));
        assert!(!under.matches(&Host::parse("pypi.org").unwrap()));
        assert!(!under.matches(&Host::parse("evilpypi.org").unwrap()));
        let exact = Pattern::parse("München.de").unwrap();
        assert!(exact.matches(&Host::parse("xn--mnchen-3ya.de").unwrap()));
    }

    #[test]
    fn internal_hosts_are_known_in_every_spelling() {
        for internal in [
            "localhost",
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "[::1]",
            "[fd00:ec2::254]",
            "0x7f000001",
            "metadata.google.internal",
        ] {
            assert!(Host::parse(internal).unwrap().is_internal(), "{internal}");
        }
        assert!(!Host::parse("8.8.8.8").unwrap().is_internal());
        assert!(!Host::parse("example.com").unwrap().is_internal());
    }

    /// PayloadsAllTheThings' SSRF payloads (bench/egress/payloads.tsv):
    /// every one aimed inside is refused, every one aimed outside passes
    /// unless its host is denied, and the redirects pass: what the README
    /// says the guard cannot see.
    #[test]
    fn every_ssrf_payload_of_payloads_all_the_things_is_decided_as_labelled() {
        let table = include_str!("../../../bench/egress/payloads.tsv");
        let mut wrong = Vec::new();
        let mut counted = 0;
        for line in table.lines().filter(|l| !l.starts_with('#')) {
            let [label, section, url] = line.splitn(3, '\t').collect::<Vec<_>>()[..] else {
                panic!("a row of three: {line}");
            };
            counted += 1;
            let read = url_host(url);
            let refused = match &read {
                Err(_) => true,
                Ok(Some(host)) => host.is_internal(),
                Ok(None) => false,
            };
            let right = match label {
                "internal" => refused,
                "external" | "redirect" => !refused && matches!(read, Ok(Some(_))),
                other => panic!("label {other}"),
            };
            if !right {
                wrong.push(format!("{label} {section}: {url} read as {read:?}"));
            }
        }
        assert!(counted >= 50, "{counted} payloads");
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
