//! The operator's tool roles, from the plugin's settings: which results hold
//! text others wrote, which calls act on the world and with which values.
//!
//! ```toml
//! untrusted = "get_webpage, read_file, get_received_emails.body"
//! "sink.send_money" = "recipient"
//! "sink.invite_user" = "user"
//! "via.invite_user" = "email"
//! "text.send_email" = "subject, body"
//! "asks.delete_file" = "delete, remove"
//! answer = "names"
//! ```

/// How much of a tool's result is text others wrote.
#[derive(Debug, PartialEq)]
pub enum Trust<'a> {
    /// All of it is the system's own data.
    Trusted,
    /// All of it.
    Untrusted,
    /// The strings under these members, at any depth; the rest is trusted.
    Members(Vec<&'a str>),
}

/// The kinds of per-tool setting (`KIND.TOOL`).
const PER_TOOL: [&str; 4] = ["sink", "via", "text", "asks"];

/// The roles: the settings as the operator wrote them, checked once, and
/// looked up where an event needs them. Nothing is built from them: a run
/// starts with them, and an agent's run asks about a few tools, not every
/// one the settings name.
#[derive(Debug)]
pub struct Roles<'a> {
    settings: &'a [(String, String)],
    /// Whether the answer may not repeat a name only untrusted text gave.
    pub answer_names: bool,
    /// Whether any `via.` is set.
    pub any_via: bool,
}

/// A setting's comma-separated list.
fn items(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl<'a> Roles<'a> {
    /// Checks the settings; a key or value it does not know is an error
    /// naming it, so a typo never leaves a tool unguarded.
    pub fn from_settings(settings: &'a [(String, String)]) -> Result<Roles<'a>, String> {
        let mut roles = Roles {
            settings,
            answer_names: false,
            any_via: false,
        };
        for (key, value) in settings {
            match key.split_once('.') {
                None if key == "untrusted" => {}
                None if key == "answer" => {
                    roles.answer_names = match value.trim() {
                        "names" => true,
                        "any" => false,
                        other => {
                            return Err(format!("`answer` is `names` or `any`, not `{other}`"));
                        }
                    };
                }
                Some((kind, tool)) if PER_TOOL.contains(&kind) && !tool.is_empty() => {
                    if items(value).next().is_none() {
                        return Err(format!("`{key}` names nothing"));
                    }
                    // An address is let through only for a party the user
                    // or a trusted result named: without that party, `via`
                    // would trust the page.
                    if kind == "via" && roles.list("sink", tool).is_none() {
                        return Err(format!(
                            "`via.{tool}` needs `sink.{tool}`: the arguments naming the party \
                             whose address it is, which must come from the user or a trusted result"
                        ));
                    }
                    roles.any_via |= kind == "via";
                }
                _ => {
                    return Err(format!(
                        "unknown setting `{key}`: the settings are `untrusted`, `answer`, and \
                         `sink.TOOL`, `via.TOOL`, `text.TOOL`, `asks.TOOL` for a tool"
                    ));
                }
            }
        }
        Ok(roles)
    }

    /// The list `KIND.TOOL` sets, if it is set: the arguments a sink's
    /// values must come from the user or a trusted result for (`sink`),
    /// that may also come from untrusted text the run was pointed to
    /// (`via`), that may not repeat an untrusted-only name (`text`); the
    /// verbs one of which the user's request must hold (`asks`, any case).
    pub fn list(&self, kind: &str, tool: &str) -> Option<Vec<&'a str>> {
        self.settings
            .iter()
            .find(|(key, _)| {
                key.strip_prefix(kind)
                    .and_then(|rest| rest.strip_prefix('.'))
                    == Some(tool)
            })
            .map(|(_, value)| items(value).collect())
    }

    /// Whether a call of `tool` is checked at all.
    pub fn watches(&self, tool: &str) -> bool {
        ["sink", "text", "asks"]
            .iter()
            .any(|kind| self.list(kind, tool).is_some())
    }

    /// How far `tool`'s result can be trusted: `untrusted` names a tool
    /// whole, or its members (`tool.member`).
    pub fn trust(&self, tool: &str) -> Trust<'a> {
        let Some((_, untrusted)) = self.settings.iter().find(|(key, _)| key == "untrusted") else {
            return Trust::Trusted;
        };
        let mut members = Vec::new();
        for source in items(untrusted) {
            match source.split_once('.') {
                None if source == tool => return Trust::Untrusted,
                Some((of, member)) if of == tool => members.push(member),
                _ => {}
            }
        }
        if members.is_empty() {
            Trust::Trusted
        } else {
            Trust::Members(members)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn reads_every_role() {
        let settings = settings(&[
            (
                "untrusted",
                "get_webpage, search_emails.body, search_emails.subject",
            ),
            ("sink.send_money", "recipient"),
            ("sink.invite_user", "user"),
            ("via.invite_user", "email"),
            ("text.send_email", "subject, body"),
            ("asks.delete_file", "Delete, remove"),
            ("answer", "names"),
        ]);
        let roles = Roles::from_settings(&settings).unwrap();
        assert_eq!(roles.trust("get_webpage"), Trust::Untrusted);
        assert_eq!(
            roles.trust("search_emails"),
            Trust::Members(vec!["body", "subject"])
        );
        assert_eq!(roles.trust("get_balance"), Trust::Trusted);
        // A tool named like the start of another is not it.
        assert_eq!(roles.trust("get_web"), Trust::Trusted);
        assert_eq!(roles.list("sink", "send_money").unwrap(), ["recipient"]);
        assert_eq!(roles.list("via", "invite_user").unwrap(), ["email"]);
        assert_eq!(
            roles.list("text", "send_email").unwrap(),
            ["subject", "body"]
        );
        assert_eq!(
            roles.list("asks", "delete_file").unwrap(),
            ["Delete", "remove"]
        );
        assert_eq!(roles.list("sink", "send"), None);
        assert_eq!(roles.list("sin", "k.send_money"), None);
        assert!(roles.watches("delete_file") && !roles.watches("get_balance"));
        assert!(roles.answer_names && roles.any_via);
    }

    #[test]
    fn a_setting_it_does_not_know_is_an_error() {
        for bad in [
            ("sinks.send_money", "recipient"),
            ("sink", "send_money"),
            ("answer", "yes"),
            ("sink.x", " , "),
            ("via.invite_user", "email"),
            ("sink.", "x"),
            ("untrusted.x", "y"),
        ] {
            let settings = settings(&[bad]);
            let error = Roles::from_settings(&settings).unwrap_err();
            assert!(error.contains('`'), "{error}");
        }
    }
}
