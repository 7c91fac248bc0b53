//! Reading a file by the plugin directory's rules, which every read of
//! it keeps (plugins, trusted keys, the store of pulled guards): nothing
//! resolving outside the directory, a regular file only, bounded.

use std::path::Path;

/// Why [`read_regular_within`] read nothing.
#[derive(Debug)]
pub(crate) enum Unread {
    /// There is nothing there.
    Missing(std::io::Error),
    /// It is past the bound: its size, as far as it was read.
    TooLarge(u64),
    /// It is not a regular file inside the directory, or cannot be read.
    Refused(String),
}

/// Reads `relative` from `dir` by the plugin directory's rules, which
/// every read of it keeps (plugins, keys, the store of pulled guards):
/// nothing that resolves outside `dir`; a regular file only (a FIFO, a
/// device or a directory is refused without waiting on it: it is opened
/// without blocking and checked once open); at most `max_bytes`, checked
/// before reading and while reading, so a file that grows meanwhile is
/// cut off rather than read without end.
pub(crate) fn read_regular_within(
    dir: &Path,
    relative: &Path,
    max_bytes: usize,
) -> Result<Vec<u8>, Unread> {
    use std::io::Read as _;
    let root = dir
        .canonicalize()
        .map_err(|e| Unread::Refused(format!("cannot resolve the directory: {e}")))?;
    let resolved = match root.join(relative).canonicalize() {
        Ok(resolved) => resolved,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unread::Missing(e)),
        Err(e) => return Err(Unread::Refused(format!("cannot open it: {e}"))),
    };
    if !resolved.starts_with(&root) {
        return Err(Unread::Refused(format!(
            "it resolves to {}, outside the plugin directory",
            resolved.display()
        )));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Opening a FIFO for reading would wait for a writer.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = options
        .open(&resolved)
        .map_err(|e| Unread::Refused(format!("cannot open it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| Unread::Refused(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(Unread::Refused("not a regular file".into()));
    }
    if meta.len() > max_bytes as u64 {
        return Err(Unread::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Unread::Refused(format!("cannot read it: {e}")))?;
    if bytes.len() > max_bytes {
        return Err(Unread::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}
