//! Where a path a command names is: in the workspace, in a temporary
//! directory, or outside; and whether it is a file the shell, cron or ssh
//! run later, or a history file.

/// Whether `path`, as written in a command, is outside the workspace: a
/// home path (`~`, `$HOME`), an absolute path not under `workspace` (and
/// not a temporary or standard-stream file), or a relative one that climbs
/// out with `..`. Paths whose place is computed (`$DIR/x`, `$(…)`) are not
/// judged.
pub fn outside(path: &str, workspace: Option<&str>) -> bool {
    if is_home(path) {
        return true;
    }
    if path.starts_with('$') || path.starts_with('`') || path.is_empty() {
        return false;
    }
    if path.starts_with('/') {
        if is_temporary(path) {
            return false;
        }
        let normal = normalise(path);
        return match workspace {
            Some(ws) => !(normal == ws || normal.starts_with(&format!("{ws}/"))),
            None => true,
        };
    }
    // Relative: `a/../../x` climbs out.
    let mut depth: i32 = 0;
    for part in path.split('/') {
        match part {
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            "" | "." => {}
            _ => depth += 1,
        }
    }
    false
}

/// `~`, `~/x`, `~user`, `$HOME`, `${HOME}`, `/root`, `/home/x`.
pub fn is_home(path: &str) -> bool {
    path.starts_with('~')
        || path.starts_with("$HOME")
        || path.starts_with("${HOME}")
        || path == "/root"
        || path.starts_with("/root/")
        || path.starts_with("/home/")
}

/// Temporary directories and the standard streams, which any command may
/// write.
fn is_temporary(path: &str) -> bool {
    const FREE: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];
    const STREAMS: &[&str] = &[
        "/dev/null",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/zero",
    ];
    let normal = normalise(path);
    STREAMS.contains(&normal.as_str())
        || normal.starts_with("/dev/fd/")
        || normal.starts_with("/dev/tty")
        || normal.starts_with("/dev/pts/")
        || normal.starts_with("/proc/self/fd/")
        || FREE
            .iter()
            .any(|dir| normal.starts_with(&format!("{dir}/")) && normal.len() > dir.len() + 1)
}

/// `path` with `.`, `..` and repeated `/` resolved (lexically).
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Files the shell, the login, cron, ssh, systemd or the dynamic loader run
/// later: writing one plants a command that outlives the session.
pub fn runs_later(path: &str) -> bool {
    const NAMES: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".zlogin",
        ".zlogout",
        ".cshrc",
        ".tcshrc",
        ".kshrc",
        ".mkshrc",
        ".login",
        ".logout",
        ".xinitrc",
        ".xprofile",
        ".xsession",
        "config.fish",
        "authorized_keys",
        "authorized_keys2",
        "sitecustomize.py",
        "usercustomize.py",
        "ld.so.preload",
        "rc.local",
        "rc.common",
    ];
    const PLACES: &[&str] = &[
        "/etc/profile",
        "/etc/bash",
        "/etc/zsh",
        "/etc/environment",
        "/etc/cron",
        "/var/spool/cron",
        "/etc/init.d/",
        "/etc/rc",
        "/etc/systemd/",
        "/lib/systemd/",
        "/usr/lib/systemd/",
        "/etc/update-motd.d/",
        "/etc/xdg/autostart/",
        "/etc/sudoers",
        "/etc/ld.so.",
        "/etc/pam.d/",
        "/etc/security/",
    ];
    const HOME_PLACES: &[&str] = &[
        ".config/autostart/",
        ".config/systemd/",
        ".ssh/rc",
        ".ssh/config",
        ".git/hooks/",
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    NAMES.contains(&name)
        || PLACES.iter().any(|p| path.starts_with(p))
        || HOME_PLACES.iter().any(|p| path.contains(p))
}

/// A shell's or a tool's history file.
pub fn is_history(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        ".bash_history"
            | ".zsh_history"
            | ".sh_history"
            | ".history"
            | ".zhistory"
            | ".python_history"
            | ".mysql_history"
            | ".psql_history"
            | ".sqlite_history"
            | ".lesshst"
            | ".node_repl_history"
    ) || path.starts_with("/var/log/")
        || matches!(
            path,
            "/var/log" | "/var/run/utmp" | "/var/log/wtmp" | "/var/log/btmp"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_relative_paths_and_the_directory_set() {
        for path in [
            "src/main.rs",
            "./build",
            "a/../b",
            "$OUT/x",
            "/tmp/x",
            "/dev/null",
        ] {
            assert!(!outside(path, None), "{path}");
        }
        for path in [
            "/",
            "/etc/passwd",
            "~",
            "~/.ssh",
            "$HOME/x",
            "../x",
            "a/../../x",
            "/tmp",
            "/tmp/../etc",
        ] {
            assert!(outside(path, None), "{path}");
        }
        assert!(!outside("/srv/app/target", Some("/srv/app")));
        assert!(outside("/srv/app/../x", Some("/srv/app")));
        assert!(outside("/srv/apple", Some("/srv/app")));
    }

    #[test]
    fn start_up_files_and_history_are_known() {
        assert!(
            runs_later("~/.bashrc")
                && runs_later("/etc/cron.d/x")
                && runs_later("/root/.ssh/authorized_keys")
        );
        assert!(!runs_later("src/profile.rs"));
        assert!(is_history("~/.bash_history") && is_history("/var/log/auth.log"));
    }
}
