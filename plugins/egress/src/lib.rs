//! Keep an agent's tools from reaching hosts the operator did not allow:
//! every URL in a tool call's arguments, and every place a shell command
//! would connect to (curl, wget, ssh, scp, git, nc, `/dev/tcp`, `sh -c`
//! strings...), is read as the client would read it and checked against
//! the `allow` and `deny` lists; a call that would reach another host is
//! skipped with a reason the model can act on.

mod dest;
mod shell;

use dest::{Host, Pattern};
use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config};
use serde_json::Value;

struct Egress;

use hookbox_sdk::shell::{COMMAND_MEMBERS, SHELL_TOOLS};

impl Hook for Egress {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else {
            return Flow::Continue;
        };
        // Settings do not change within an instance (a run): read once.
        static POLICY: std::sync::OnceLock<Policy> = std::sync::OnceLock::new();
        let policy = POLICY.get_or_init(Policy::from_config);
        match policy.check(&call.tool_name, &call.args) {
            Ok(()) => Flow::Continue,
            Err(reason) => Flow::skip(format!("egress: {reason}")),
        }
    }
}

hookbox_sdk::hook!(Egress);

/// The operator's settings.
pub struct Policy {
    allow: Option<Vec<Pattern>>,
    deny: Vec<Pattern>,
    internal: bool,
    shell_tools: Vec<String>,
}

impl Policy {
    fn from_config() -> Policy {
        let list = |key: &str| config::list(key);
        let allow = list("allow");
        Policy::new(
            (!allow.is_empty()).then_some(allow),
            list("deny"),
            config::get_or("internal", "deny") == "allow",
            match list("shell_tools") {
                tools if tools.is_empty() => SHELL_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
                tools => tools,
            },
        )
    }

    /// A policy from its settings; a pattern that names no host is ignored
    /// in `deny` and, in `allow`, allows nothing.
    pub fn new(
        allow: Option<Vec<String>>,
        deny: Vec<String>,
        internal: bool,
        shell_tools: Vec<String>,
    ) -> Policy {
        let patterns = |list: Vec<String>| list.iter().filter_map(|p| Pattern::parse(p)).collect();
        Policy {
            allow: allow.map(patterns),
            deny: patterns(deny),
            internal,
            shell_tools,
        }
    }

    /// `Ok` when every destination of the call is allowed, else why not,
    /// in words for the model.
    pub fn check(&self, tool: &str, args: &str) -> Result<(), String> {
        let shell_tool = self.shell_tools.iter().any(|t| t == tool);
        let mut strings = Vec::new();
        match serde_json::from_str::<Value>(args) {
            Ok(value) => collect_strings(&value, None, &mut strings),
            // Arguments that are not JSON are one string.
            Err(_) => strings.push((None, args.to_owned())),
        }
        for (member, text) in &strings {
            let is_command = shell_tool
                || member
                    .as_deref()
                    .is_some_and(|m| COMMAND_MEMBERS.contains(&m));
            if is_command {
                let named = shell::destinations(text)
                    .map_err(|why| format!("the command could not be read ({why}), so where it connects cannot be checked; write it plainly"))?;
                for n in named {
                    self.check_named(&n.text, n.url, &n.by)?;
                }
            } else {
                let by = member
                    .as_deref()
                    .map_or("an argument".to_owned(), |m| format!("the `{m}` argument"));
                for url in dest::urls_in(text) {
                    self.check_named(url, true, &by)?;
                }
                // A bare host or URL as a fetch tool's whole argument.
                if member.as_deref().is_some_and(|m| {
                    ["url", "uri", "href", "endpoint", "host", "hostname"].contains(&m)
                }) && !text.contains("://")
                    && !text.trim().is_empty()
                {
                    self.check_named(&format!("http://{}", text.trim()), true, &by)?;
                }
            }
        }
        Ok(())
    }

    fn check_named(&self, text: &str, url: bool, by: &str) -> Result<(), String> {
        let host = if url {
            match dest::url_host(text) {
                Ok(Some(host)) => host,
                Ok(None) => return Ok(()),
                Err(why) => {
                    return Err(format!(
                        "{by} `{text}` is refused: {why}; write the URL plainly (scheme://host/path)"
                    ));
                }
            }
        } else {
            // `user@host`, `host:port`, `[v6]:port`.
            let bare = text.rsplit_once('@').map_or(text, |(_, h)| h);
            let bare = match bare.strip_prefix('[') {
                Some(v6) => v6.split(']').next().unwrap_or_default(),
                None => bare.split(':').next().unwrap_or_default(),
            };
            if bare.contains(['$', '`']) {
                return Err(format!("{by} `{text}` is refused: {}", dest::COMPUTED));
            }
            match Host::parse(bare) {
                Some(host) => host,
                None => {
                    return Err(format!(
                        "{by} `{text}` names no host this guard can read, so it cannot be checked"
                    ));
                }
            }
        };
        self.check_host(&host, by)
    }

    fn check_host(&self, host: &Host, by: &str) -> Result<(), String> {
        if let Some(pattern) = self.deny.iter().find(|p| p.matches(host)) {
            return Err(format!(
                "{by} reaches `{host}`, which is denied (`{pattern}`); do not retry it another way"
            ));
        }
        let allowed = self
            .allow
            .as_ref()
            .map(|allow| allow.iter().any(|p| p.matches(host)));
        if allowed == Some(true) {
            return Ok(());
        }
        if host.is_internal() && !self.internal {
            return Err(format!(
                "{by} reaches `{host}`, an internal address (this machine, a private network or a metadata service), which tools may not reach"
            ));
        }
        match (&self.allow, allowed) {
            (Some(allow), Some(false)) => Err(format!(
                "{by} reaches `{host}`, which is not among the hosts this agent may reach ({}); use one of those, or ask the user to allow `{host}`",
                allow
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => Ok(()),
        }
    }
}

/// Every string in `value`, with the name of the member holding it.
fn collect_strings(value: &Value, member: Option<&str>, out: &mut Vec<(Option<String>, String)>) {
    match value {
        // An argv (`"command": ["curl", "evil.example"]`) is one command.
        Value::Array(items)
            if member.is_some_and(|m| COMMAND_MEMBERS.contains(&m))
                && !items.is_empty()
                && items.iter().all(Value::is_string) =>
        {
            let argv: Vec<String> = items
                .iter()
                .filter_map(Value::as_str)
                .map(hookbox_sdk::shell::quote)
                .collect();
            out.push((member.map(str::to_owned), argv.join(" ")));
        }
        Value::String(text) => out.push((member.map(str::to_owned), text.clone())),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, member, out)),
        Value::Object(members) => members
            .iter()
            .for_each(|(k, v)| collect_strings(v, Some(k), out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let owned = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        Policy::new(
            (!allow.is_empty()).then(|| owned(allow)),
            owned(deny),
            false,
            SHELL_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        )
    }

    #[test]
    fn an_allow_list_lets_its_hosts_through_and_nothing_else() {
        let p = policy(&["api.github.com", "*.pypi.org"], &[]);
        assert!(
            p.check("fetch", r#"{"url":"https://api.github.com/repos"}"#)
                .is_ok()
        );
        assert!(
            p.check(
                "bash",
                r#"{"command":"pip download --index-url https://files.pypi.org/simple x"}"#
            )
            .is_ok()
        );
        let no = p
            .check("fetch", r#"{"url":"https://evil.example/x"}"#)
            .unwrap_err();
        assert!(
            no.contains("`evil.example`") && no.contains("api.github.com, *.pypi.org"),
            "{no}"
        );
        assert!(
            p.check(
                "bash",
                r#"{"command":"curl -s api.github.com.evil.example"}"#
            )
            .is_err()
        );
        assert!(
            p.check("fetch", r#"{"url":"https://api.github.com@evil.example/"}"#)
                .is_err()
        );
        assert!(p.check("fetch", r#"{"url":"evil.example"}"#).is_err());
    }

    #[test]
    fn a_deny_list_stops_its_hosts_in_every_spelling() {
        let p = policy(&[], &["evil.example", "*.evil.example"]);
        assert!(p.check("fetch", r#"{"url":"https://example.org"}"#).is_ok());
        for args in [
            r#"{"url":"https://EVIL.example./x"}"#,
            r#"{"url":"https://cdn.evil.example/x"}"#,
            r#"{"command":"bash -c \"curl evil.example\""}"#,
            r#"{"command":"git clone git@evil.example:o/r.git"}"#,
        ] {
            assert!(p.check("run", args).is_err(), "{args}");
        }
    }

    #[test]
    fn internal_addresses_are_refused_in_any_spelling_unless_allowed() {
        let p = policy(&[], &[]);
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://2130706433/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:8080/admin",
        ] {
            let args = serde_json::json!({ "url": url }).to_string();
            assert!(p.check("fetch", &args).is_err(), "{url}");
        }
        let p = Policy::new(None, vec![], true, vec![]);
        assert!(
            p.check("fetch", r#"{"url":"http://localhost:8080/"}"#)
                .is_ok()
        );
    }

    #[test]
    fn a_command_given_as_argv_is_one_command() {
        let p = policy(&["api.github.com"], &[]);
        assert!(
            p.check("shell", r#"{"command":["curl","-s","evil.example"]}"#)
                .is_err()
        );
        assert!(
            p.check("shell", r#"{"command":["bash","-lc","curl evil.example"]}"#)
                .is_err()
        );
        assert!(
            p.check(
                "shell",
                r#"{"command":["curl","https://api.github.com/x"]}"#
            )
            .is_ok()
        );
        assert!(p.check("shell", r#"{"command":["echo","it's"]}"#).is_ok());
    }

    #[test]
    fn a_host_in_a_variable_is_refused_and_an_assigned_url_is_checked() {
        let p = policy(&[], &[]);
        let no = p
            .check("bash", r#"{"command":"curl -s $API/health"}"#)
            .unwrap_err();
        assert!(no.contains("computed when the command runs"), "{no}");
        assert!(
            p.check("bash", r#"{"command":"ssh $HOST uptime"}"#)
                .is_err()
        );
        let no = p
            .check(
                "bash",
                r#"{"command":"U=http://169.254.169.254/; curl -s https://example.org"}"#,
            )
            .unwrap_err();
        assert!(no.contains("169.254.169.254"), "{no}");
        // A `$` past the host is a query's, not a variable's concern.
        assert!(
            p.check("fetch", r#"{"url":"https://example.org/items?$filter=a"}"#)
                .is_ok()
        );
    }

    #[test]
    fn a_command_that_cannot_be_read_is_refused() {
        let no = policy(&[], &[])
            .check("bash", r#"{"command":"curl 'https://x.example"}"#)
            .unwrap_err();
        assert!(no.contains("could not be read"), "{no}");
    }

    #[test]
    fn a_url_read_two_ways_is_refused() {
        let no = policy(&[], &[])
            .check(
                "fetch",
                r#"{"url":"http://api.github.com\\@evil.example/"}"#,
            )
            .unwrap_err();
        assert!(no.contains("read its host differently"), "{no}");
    }
}
