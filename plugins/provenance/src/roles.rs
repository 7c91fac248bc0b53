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

use std::collections::BTreeMap;

/// How much of a tool's result is text others wrote.
#[derive(Debug, PartialEq)]
pub enum Trust<'a> {
    /// All of it is the system's own data.
    Trusted,
    /// All of it.
    Untrusted,
    /// The strings under these members, at any depth; the rest is trusted.
    Members(&'a [String]),
}

/// The roles, as the operator wrote them.
#[derive(Debug, Default, PartialEq)]
pub struct Roles {
    untrusted_tools: Vec<String>,
    untrusted_members: BTreeMap<String, Vec<String>>,
    /// Per sink, the arguments whose values must come from the user or a
    /// trusted result.
    pub sinks: BTreeMap<String, Vec<String>>,
    /// Per sink, the arguments that say how to reach a party its `sinks`
    /// arguments name (an address): besides the user and trusted results,
    /// they may come from untrusted text the run was pointed to.
    pub via: BTreeMap<String, Vec<String>>,
    /// Per tool, the free-text arguments that may not repeat a name only
    /// untrusted text gave.
    pub text: BTreeMap<String, Vec<String>>,
    /// Per tool, the words one of which the user's own request must hold.
    pub asks: BTreeMap<String, Vec<String>>,
    /// Whether the answer may not repeat a name only untrusted text gave.
    pub answer_names: bool,
}

impl Roles {
    /// Reads the settings; a key or value it does not know is an error
    /// naming it, so a typo never leaves a tool unguarded.
    pub fn from_settings(settings: &[(String, String)]) -> Result<Roles, String> {
        let mut roles = Roles::default();
        let list = |value: &str| -> Vec<String> {
            value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        for (key, value) in settings {
            let (kind, tool) = key.split_once('.').unwrap_or((key, ""));
            let table = match (kind, tool.is_empty()) {
                ("untrusted", true) => {
                    for source in list(value) {
                        match source.split_once('.') {
                            Some((tool, member)) => roles
                                .untrusted_members
                                .entry(tool.to_owned())
                                .or_default()
                                .push(member.to_owned()),
                            None => roles.untrusted_tools.push(source),
                        }
                    }
                    continue;
                }
                ("answer", true) => {
                    roles.answer_names = match value.trim() {
                        "names" => true,
                        "any" => false,
                        other => {
                            return Err(format!("`answer` is `names` or `any`, not `{other}`"));
                        }
                    };
                    continue;
                }
                ("sink", false) => &mut roles.sinks,
                ("via", false) => &mut roles.via,
                ("text", false) => &mut roles.text,
                ("asks", false) => &mut roles.asks,
                _ => {
                    return Err(format!(
                        "unknown setting `{key}`: the settings are `untrusted`, `answer`, and \
                         `sink.TOOL`, `via.TOOL`, `text.TOOL`, `asks.TOOL` for a tool"
                    ));
                }
            };
            let items = list(value);
            if items.is_empty() {
                return Err(format!("`{key}` names nothing"));
            }
            let items = if kind == "asks" {
                items.iter().map(|w| w.to_lowercase()).collect()
            } else {
                items
            };
            table.insert(tool.to_owned(), items);
        }
        // An address is let through only for a party the user or a trusted
        // result named: without that party, `via` would trust the page.
        if let Some(tool) = roles.via.keys().find(|t| !roles.sinks.contains_key(*t)) {
            return Err(format!(
                "`via.{tool}` needs `sink.{tool}`: the arguments naming the party whose address \
                 it is, which must come from the user or a trusted result"
            ));
        }
        Ok(roles)
    }

    /// Whether a call of `tool` is checked at all.
    pub fn watches(&self, tool: &str) -> bool {
        self.sinks.contains_key(tool)
            || self.text.contains_key(tool)
            || self.asks.contains_key(tool)
    }

    /// How far `tool`'s result can be trusted.
    pub fn trust(&self, tool: &str) -> Trust<'_> {
        if self.untrusted_tools.iter().any(|t| t == tool) {
            Trust::Untrusted
        } else if let Some(members) = self.untrusted_members.get(tool) {
            Trust::Members(members)
        } else {
            Trust::Trusted
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
        let roles = Roles::from_settings(&settings(&[
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
        ]))
        .unwrap();
        assert_eq!(roles.trust("get_webpage"), Trust::Untrusted);
        assert_eq!(
            roles.trust("search_emails"),
            Trust::Members(&["body".into(), "subject".into()])
        );
        assert_eq!(roles.trust("get_balance"), Trust::Trusted);
        assert_eq!(roles.sinks["send_money"], ["recipient"]);
        assert_eq!(roles.via["invite_user"], ["email"]);
        assert_eq!(roles.text["send_email"], ["subject", "body"]);
        assert_eq!(roles.asks["delete_file"], ["delete", "remove"]);
        assert!(roles.answer_names);
    }

    #[test]
    fn a_setting_it_does_not_know_is_an_error() {
        for bad in [
            ("sinks.send_money", "recipient"),
            ("sink", "send_money"),
            ("answer", "yes"),
            ("sink.x", " , "),
            ("via.invite_user", "email"),
        ] {
            let error = Roles::from_settings(&settings(&[bad])).unwrap_err();
            assert!(error.contains('`'), "{error}");
        }
    }
}
