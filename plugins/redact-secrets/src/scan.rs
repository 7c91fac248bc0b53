//! Secrets in text: gitleaks' rules ([`crate::rules`]) and what a tool's
//! output has that a source scanner's input seldom does, anywhere on a
//! line, as many times as it occurs:
//!
//! | shape | redacted |
//! |---|---|
//! | `NAME=value`, `NAME := value`, `NAME => value` (NAME quoted or not) | the value |
//! | `"NAME": value`, `'NAME': value` (JSON or a dict inside text) | the value |
//! | `NAME: value` at the start of a line (YAML, a header, `.env`) | the value |
//! | `name: NAME` and then `value: value` on the next line (a YAML `env` entry) | the value |
//! | `--NAME value`, `--NAME=value`, `-NAME value` (a command line) | the value |
//! | `Bearer TOKEN`, `Authorization: [Basic \| Token \| Digest] TOKEN` | the token |
//! | `scheme://user:PASSWORD@host`, `scheme://:PASSWORD@host` | the password (after no user, not a word in capitals: a placeholder) |
//! | `-----BEGIN ... PRIVATE KEY-----` to its `-----END ...-----` (or the end) | the block, `[REDACTED PRIVATE KEY]` |
//! | a PEM private key in base64 (`client-key-data`, `tls.key`) | the run, `[REDACTED PRIVATE KEY]` |
//! | `local@domain.tld`, with `emails` on | `[REDACTED EMAIL]` |
//!
//! and the shapes of credential files, commands and headers the plugin's
//! README lists after these (XML elements, call arguments, `.netrc`,
//! `curl -u`, `-passin pass:`, cookies, URL signatures, `auth` in base64,
//! `.pgpass`, hashes, PuTTY keys, a key's tail), in the text as it reads
//! and in its decoded readings ([`View`]: percent-encoding, look-alike
//! letters),
//!
//! where NAME ends with a secret word ([`SECRET_NAME`]: `DB_PASSWORD`,
//! `x-api-key`, `client_secret`, `id_token`, not `max_tokens` or
//! `TOKEN_URL`). A value is a quoted string (redacted inside its quotes)
//! or a run of characters up to a space, a quote or `,;&()[]{}<>`;
//! placeholders gitleaks' global allowlist lets through (`${VAR}`, `true`,
//! `null`, `****`) are left alone, as is a bare value that is a program's
//! (a call, a keyword, a type name: `token: String,`; a reference to a
//! variable named like a secret: `password=password`, `opts.Password`). A URL's user name has
//! no brackets (`scheme://[[USER]:PASSWORD@]HOST` is syntax written out).

use std::sync::OnceLock;

use regex::bytes::{Regex, RegexBuilder};

use crate::rules;

/// Byte offsets into the text, start to end.
pub(crate) type Span = (usize, usize);

/// What was found, in the order one wins over another where they overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Email,
    Secret,
    PrivateKey,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Email => "[REDACTED EMAIL]",
            Kind::Secret => "[REDACTED]",
            Kind::PrivateKey => "[REDACTED PRIVATE KEY]",
        }
    }
}

/// A secret found in the text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    span: Span,
    kind: Kind,
}

impl Found {
    pub(crate) fn secret(span: Span) -> Found {
        Found {
            span,
            kind: Kind::Secret,
        }
    }
}

/// Names whose values are secrets: an identifier ending with one of these
/// words (ASCII case ignored, `-` or `_` or nothing between the parts).
///
/// The words are matched with look-alike digits and signs as well
/// (`PASSW0RD`, `pa55word`, `s3cret`); `pass` and `pwd` count as a word of
/// their own (`DB_PASS`, `MYSQL_PWD`, not `bypass` or `allPass`).
pub(crate) const SECRET_NAME: &str = r"(?:[A-Za-z0-9_.-]*(?i:s[e3]cr[e3]t|p[a4@][s5$][s5$](?:w[o0]rd|phrase)|passwd|t[o0]k[e3]n|api[_-]?key|apikey|private[_-]?key|access[_-]?key|auth[_-]?key|credentials?)|(?:[A-Za-z0-9_.-]*[_.-])?(?i:pass|pwd))";

/// Names that end like a secret's but name no secret: pagination and
/// progress tokens, CSRF tokens, files and URLs of tokens.
const NOT_SECRET_NAME: &str =
    r"(?i)(?:progress|page|next|continuation|sync|cancel|csrf|xsrf|public)[_.-]?token$";

/// A value: a double-quoted string, a single-quoted one, or a bare run
/// (`${VAR}` included) that ends, too, at an escaped line end, tab or
/// quote (`\n` in text that holds escaped JSON).
const VALUE: &str = r#"(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<bare>\$\{[^}\s]*\}|(?:[^\s"'`,;&()\[\]{}<>\\]|\\[^nrt"'\\])+))"#;

/// [`VALUE`] after a flag: a bare value does not start with `-` (that is
/// the next flag).
const FLAG_VALUE: &str = r#"(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s"'`,;&()\[\]{}<>\\-](?:[^\s"'`,;&()\[\]{}<>\\]|\\[^nrt"'\\])*))"#;

/// What a shape waits for: one of the words of [`triggers`] in its group.
const NAME: u16 = 1;
const BEARER: u16 = 1 << 1;
const AUTH: u16 = 1 << 2;
const URL: u16 = 1 << 3;
const COOKIE: u16 = 1 << 4;
const SIG: u16 = 1 << 5;
const USER: u16 = 1 << 6;
const MYSQL: u16 = 1 << 7;
const SECURE: u16 = 1 << 8;

/// A shape: its pattern, the words it waits for, its regex once compiled.
/// A fresh instance compiles only the shapes whose words its texts have
/// (a run is a fresh instance: what it never needs, it never builds).
struct Shape {
    words: u16,
    pattern: String,
    regex: OnceLock<Regex>,
}

impl Shape {
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| ascii(&self.pattern))
    }
}

/// The rows of the module's table but the last two: a secret's `name` and
/// its value, or a `token`.
fn shapes() -> &'static [Shape] {
    static SHAPES: OnceLock<Vec<Shape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let name = format!("(?P<name>{SECRET_NAME})");
        [
            (NAME, format!(
                r#"(?:^|[^A-Za-z0-9_.-])["']?{name}["']?[ \t]*(?P<op>={{1,3}}|:=|=>|\?=)[ \t]*{VALUE}"#
            )),
            (NAME, format!(r#"["']{name}["'][ \t]*:[ \t]*{VALUE}"#)),
            (NAME, format!(r"(?m)^[ \t]*(?:-[ \t]+)?{name}[ \t]*:[ \t]+{VALUE}")),
            // A YAML `env` entry: the secret's name, then its value.
            (NAME, format!(
                r#"(?m)^[ \t]*(?:-[ \t]+)?name[ \t]*:[ \t]*["']?{name}["']?[ \t]*\r?\n[ \t]*value[ \t]*:[ \t]+{VALUE}"#
            )),
            (NAME, format!(r#"(?:^|[\s"'=])--?{name}(?:=|[ \t]+){FLAG_VALUE}"#)),
            // A token never starts with `-`: `--oauth2-bearer --proxy-user` is flags.
            (BEARER, r"(?i)\bbearer[ \t]+(?P<token>[A-Za-z0-9._~+/][A-Za-z0-9._~+/-]{7,}=*)".to_owned()),
            (AUTH, r#"(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:(?:basic|token|digest|bearer)[ \t]+)?(?P<token>[A-Za-z0-9._~+/-]{8,}=*)"#.to_owned()),
            // A user name has no brackets: `redis://[[USER]:PASSWORD@]HOST`
            // is a URL's syntax written out, not a URL. A password runs to
            // the last `@` before the host (it may hold `/` and `@`), never
            // into the query.
            (URL, r#"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@"'\[\]{}<>]+:(?P<token>[^\s"'<>?#]+)@[a-z0-9.-]+(?::[0-9]+)?(?:[/?#"'\s<>),;]|$)"#.to_owned()),
            // No user at all, as Redis URLs are written
            // (`redis://:PASSWORD@HOST`).
            (URL, r#"(?i)\b[a-z][a-z0-9+.-]*://:(?P<userless>[^\s@/"']+)@"#.to_owned()),
            // An XML or HTML element named like a secret.
            (NAME, format!(r#"<{name}(?:[ \t][^>\n]*)?>(?P<text>[^<\n]+)</"#)),
            // A quoted name and a quoted value as a call's first two arguments
            // (`define('DB_PASSWORD', '...')`, `config.set("token", "...")`).
            (NAME, format!(
                r#"\([ \t]*["']{name}["'][ \t]*,[ \t]*(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)')"#
            )),
            // A flag and its value as two items of a YAML list (`args:`).
            (NAME, format!(
                r#"(?m)^[ \t]*-[ \t]+["']?--?{name}["']?[ \t]*\r?\n[ \t]*-[ \t]+{FLAG_VALUE}"#
            )),
            // `.netrc`: `login USER password PASSWORD`, on a line or two.
            (NAME, r"\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<token>\S+)".to_owned()),
            (NAME, r"(?m)^[ \t]*login[ \t]+\S+[ \t]*\r?\n[ \t]*password[ \t]+(?P<token>\S+)".to_owned()),
            // A user and password given to curl and its kind.
            (USER, r#"(?:^|[\s"'])(?:-u|--user|--proxy-user)(?:[ \t]+|=)["']?[^\s:"'@]+:(?P<token>[^\s"'@]+)"#.to_owned()),
            // OpenSSL's pass phrase arguments (`-passin pass:SECRET`).
            (NAME, r#"(?:^|\s)-{1,2}pass(?:in|out|word)?[ \t]+pass:(?P<token>[^\s"']+)"#.to_owned()),
            // keytool's and jarsigner's store and key passwords.
            (NAME, format!(r#"(?:^|[\s"'=])-{{1,2}}(?:src|dest)?(?:store|key)pass(?:=|[ \t]+){FLAG_VALUE}"#)),
            // A password given to MySQL's clients (`-pSECRET`) and sshpass.
            (MYSQL, r#"\b(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb)\b[^\n|;&`]*?[ \t]-p(?P<token>[^\s"'`,;)-][^\s"'`]*)"#.to_owned()),
            (NAME, r#"\bsshpass[ \t]+(?:-[a-oq-z][ \t]+\S+[ \t]+)*-p[ \t]*(?P<token>[^\s"']+)"#.to_owned()),
            // PowerShell's secure string made from plain text.
            (SECURE, r#"(?i)ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?["'](?P<token>[^"'\n]+)["'][^\n]*-AsPlainText"#.to_owned()),
            // Cookies: a Set-Cookie's value, and every value of a Cookie.
            (COOKIE, r#"(?i)\bset-cookie[ \t]*:[ \t]*[^=\s;]+=(?P<token>[^;\s"']+)"#.to_owned()),
            (COOKIE, r#"(?i)(?:^|[\s"'])cookie[ \t]*:[ \t]*(?P<cookies>[^\r\n"']+)"#.to_owned()),
            // A URL's signature or session token (Azure SAS, S3 and GCS
            // presigned URLs).
            (SIG, r#"(?i)[?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature)=(?P<token>[^&\s"'#]+)"#.to_owned()),
            // Credentials in base64 under an `auth` name (`.npmrc`'s
            // `_auth`, a Docker config's `auth`).
            (AUTH, r#"(?P<auth>[A-Za-z0-9_.-]*(?i:auth))["']?[ \t]*[:=][ \t]*["']?(?P<encoded>[A-Za-z0-9+/]{8,}={0,2})"#.to_owned()),
        ]
        .into_iter()
        .map(|(words, pattern): (u16, String)| Shape {
            words,
            pattern,
            regex: OnceLock::new(),
        })
        .collect()
    })
}

/// Formats with no word to wait for, tried on every text: tokens gitleaks
/// finds only beside their service's name though they are their own (a
/// Telegram bot's, a Discord bot's), and the lines of `.pgpass` and of
/// password hash files.
fn formats() -> &'static Regex {
    static FORMATS: OnceLock<Regex> = OnceLock::new();
    // One regex, so a text is read once for all of them.
    FORMATS.get_or_init(|| {
        ascii(concat!(
            r"(?:^|[^A-Za-z0-9_-])(?P<token>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)",
            r"|(?:^|[^A-Za-z0-9_.-])(?P<token2>[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_.-]|$)",
            // `.pgpass`: `host:port:database:user:password`.
            r"|(?m:^[^:\s#]+:(?:[0-9]+|\*):[^:\s]+:[^:\s]+:(?P<token3>\S+)$)",
            // A password's hash after its user (`.htpasswd`, `/etc/shadow`).
            r"|(?m:^[^:\s]+:(?P<token4>\$(?:apr1|2[aby]|[156y])\$[^\s:]+))",
        ))
    })
}

fn ascii(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .expect("the shapes compile")
}

/// Whether `name` (a JSON member's, say) is a secret's name.
pub(crate) fn is_secret_name(name: &str) -> bool {
    static NAME: OnceLock<Regex> = OnceLock::new();
    let secret = NAME.get_or_init(|| ascii(&format!("^(?:{SECRET_NAME})$")));
    secret.is_match(name.as_bytes()) && !names_no_secret(name)
}

/// Whether `name` ends like a secret's but names none ([`NOT_SECRET_NAME`]:
/// `nextPageToken`, `csrf_token`).
pub(crate) fn names_no_secret(name: &str) -> bool {
    static NOT: OnceLock<Regex> = OnceLock::new();
    NOT.get_or_init(|| ascii(NOT_SECRET_NAME))
        .is_match(name.as_bytes())
}

/// Whether `text` (an object member's name, say) looks like random data:
/// 20 characters or more of base64 (or URL-safe base64) with more entropy
/// than 4 bits a character, or holding a run of 20 hex digits or more with
/// more than 3, as detect-secrets' high-entropy detectors read them.
pub(crate) fn looks_random(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 20
        || !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=_-".contains(b))
    {
        return false;
    }
    let longest_hex = bytes
        .split(|b| !b.is_ascii_hexdigit())
        .max_by_key(|run| run.len())
        .unwrap_or_default();
    // Random base64 mixes letters of both cases or letters and digits; a
    // name of words (`redhat_bugzilla_product_version`, `NSS_BUFLEN_PASSWD`)
    // has one kind, however many letters it uses.
    let kinds = [
        bytes.iter().any(u8::is_ascii_lowercase),
        bytes.iter().any(u8::is_ascii_uppercase),
        bytes.iter().any(u8::is_ascii_digit),
    ]
    .iter()
    .filter(|&&k| k)
    .count();
    (longest_hex.len() >= 20 && rules::entropy(longest_hex) > 3.0)
        || (kinds >= 2 && rules::entropy(bytes) > 4.0)
}

/// Whether the string `value` of the member `name` is a secret as
/// gitleaks reads the pair written out (`name = "value"`): its generic
/// rule needs the name beside the value (`{"key": "sk-live-..."}`), which
/// scanning the value alone does not give it.
pub(crate) fn is_secret_member(name: &str, value: &str) -> bool {
    if value.len() < 8 || !may_name_a_secret(name) {
        return false;
    }
    let pair = format!("{name} = \"{value}\"");
    let start = name.len() + 4;
    let mut found = Vec::new();
    rules::find(&pair, &mut found);
    found
        .iter()
        .any(|f| f.span.0 < start + value.len() && f.span.1 > start)
}

/// Whether `name` has a word in it that a secret's name has (what
/// [`is_secret_member`] needs before it looks further).
pub(crate) fn may_name_a_secret(name: &str) -> bool {
    !triggers(name).0.is_empty()
}

/// Whether `value` is a placeholder, not a secret (gitleaks' global
/// allowlist: `${VAR}`, `true`, `null`, `****` ...).
pub(crate) fn is_placeholder(value: &str) -> bool {
    rules::globally_allowed(value.trim().as_bytes())
}

/// Words that are a program's, not a secret, as a bare value.
const CODE_WORDS: [&[u8]; 10] = [
    b"None",
    b"nil",
    b"undefined",
    b"NULL",
    b"self",
    b"this",
    b"range",
    b"new",
    b"await",
    b"typeof",
];

/// Type names, which a bare value after `NAME:` is in a program's field
/// or parameter (`token: String,`, `password: string;`), never a secret.
const TYPE_WORDS: [&[u8]; 27] = [
    b"String", b"string", b"str", b"bool", b"boolean", b"number", b"int", b"float", b"bytes",
    b"any", b"unknown", b"object", b"char", b"usize", b"isize", b"u8", b"u16", b"u32", b"u64",
    b"u128", b"i8", b"i16", b"i32", b"i64", b"i128", b"f32", b"f64",
];

/// Keywords that make `NAME = value` a declaration in a program, where a
/// bare value is an expression (a secret in a program is a string).
const DECLARATIONS: [&[u8]; 8] = [
    b"let", b"mut", b"var", b"const", b"val", b"my", b"local", b"auto",
];

/// Whether a bare `value` at `end` of `line_before` + name is a program's
/// expression rather than a secret: a call, a generic type or an index
/// follows it, it is a keyword, a negation, a path (`mio::Token`,
/// `secret.bytes`), a ternary's condition, a PowerShell command
/// (`New-Object`), a variable passed on (`f(token=token_val)`, `{key:
/// defaultKey,}`) or assigned (`secret = stdout`), or the name is being
/// declared. A variable does not look random: `connect(password=Xk9mQ2vLp8)`
/// is a secret.
fn is_code(bytes: &[u8], name_start: usize, value: (usize, usize)) -> bool {
    let (start, end) = value;
    let text = &bytes[start..end];
    if matches!(bytes.get(end), Some(b'(' | b'<' | b'[' | b'{')) {
        return true;
    }
    if names_a_variable(text) || text.starts_with(b"!") || find(text, b"::").is_some() {
        return true;
    }
    let dotted = text.contains(&b'.')
        && text.split(|&b| b == b'.').all(|part| {
            part.first()
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
                && part.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        });
    let identifier = text
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && text.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let digit_groups = text
        .split(|b| !b.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .count();
    let after = bytes[end..].trim_ascii_start();
    let passed_on = identifier
        && digit_groups < 3
        && (after.starts_with(b",") || after.starts_with(b")") || after.starts_with(b"?"));
    // `name = value` with spaces, as programs assign: a variable or a
    // constant (`stdout`, `PKCS11_DEFAULT_PROMPT`), not a word with digits.
    let spaced = bytes[..start].ends_with(b"= ") || bytes[..start].ends_with(b"=\t");
    let assigned = spaced
        && identifier
        && (text.iter().all(|b| b.is_ascii_lowercase() || *b == b'_')
            || (text.contains(&b'_')
                && text
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')));
    let command = text.first().is_some_and(u8::is_ascii_uppercase)
        && text.iter().filter(|&&b| b == b'-').count() == 1
        && text.split(|&b| b == b'-').all(|part| {
            part.first().is_some_and(u8::is_ascii_uppercase)
                && part.iter().all(u8::is_ascii_alphabetic)
        });
    if (dotted && !text.ends_with(b".")) || passed_on || assigned || command {
        return true;
    }
    if CODE_WORDS.contains(&&bytes[start..end]) || TYPE_WORDS.contains(&&bytes[start..end]) {
        return true;
    }
    let line_start = bytes[..name_start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let before = bytes[line_start..name_start].trim_ascii_end();
    let last_word = before
        .rsplit(|b| !b.is_ascii_alphanumeric() && *b != b'_')
        .next()
        .unwrap_or_default();
    DECLARATIONS.contains(&last_word)
}

/// Whether a bare value is a reference to where a secret is kept, not the
/// secret: an identifier, or a dotted path of them, whose last part names a
/// secret (`password=password`, `self.token = token`, `Password:
/// opts.Password,`, `password = var.db_password`, `process.env.API_KEY`).
fn names_a_variable(value: &[u8]) -> bool {
    let identifier = |part: &[u8]| {
        part.first()
            .is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'$'))
            && part
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
    };
    let mut parts = value.split(|&b| b == b'.');
    let last = parts.next_back().unwrap_or_default();
    // A name spelled with digits (`s3cr3t`) is a value's spelling.
    parts.all(identifier)
        && identifier(last)
        && !last.iter().any(u8::is_ascii_digit)
        && std::str::from_utf8(last).is_ok_and(is_secret_name)
}

/// Builds every regex and automaton a scan may use, with its search cache,
/// so that a pre-initialised build starts each run with them built.
pub(crate) fn prepare() {
    crate::rules::prepare();
    for shape in shapes() {
        shape.regex().is_match(b"");
    }
    formats().is_match(b"");
    triggers("");
    // The scans with a regex of their own, on texts that reach it.
    is_secret_name("token");
    names_no_secret("token");
    let mut found = Vec::new();
    private_keys("-----BEGIN PRIVATE KEY-----", &mut found);
    email_addresses("a@example.com", &mut found);
    // Each regex's lazy DFA keeps the states it met: meeting the kinds of
    // text tool results hold now saves each run building them again.
    for text in WARM_UP {
        redact(text, true);
    }
}

/// Texts of the shapes tool results have, each with a secret, scanned once
/// at build time (the tokens are made up, in their formats' alphabets).
const WARM_UP: &[&str] = &[
    "DATABASE_URL=postgres://app:Xq7vR2mPz9@db.internal:5432/app\nOPENAI_API_KEY=sk-proj-Qm3vT8xW2nL5kR9pZ4yB7cF1hJ6dG0sA\nAWS_ACCESS_KEY_ID=AKIAQX7MZ2LWPV4RT9NB\nAWS_SECRET_ACCESS_KEY=t8Vq2Lm9Xz4Rw7Kp3Nb6Yc1Hd5Gf0Js8Ae2Ui4Oo\nGITHUB_TOKEN=ghp_R8vL2mQ9xZ4tW7kP3nB6yC1hD5gF0jS8aE2u\nmaintainer: alice@example.com\n",
    r#"{"apiVersion":"v1","kind":"Secret","data":{"password":"cDRzc3cwcmQtZXhhbXBsZQ=="},"spec":{"containers":[{"env":[{"name":"DB_PASSWORD","value":"Zt6pX2qL9mVw"}]}],"auth":{"token":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.Qm3vT8xW2nL5kR9pZ4yB7cF1hJ6dG0sA"}}}"#,
    "$ curl -H 'Authorization: Bearer xoxb-2148293748-9384729384-Qm3vT8xW2nL5kR9pZ4yB7cF1' https://api.example.com/v1/items?sig=Qm3vT8xW2nL5kR9p\n$ mysql -u root -pHunter2Secret app\nexport STRIPE_KEY=sk_live_51Hq8vL2mQ9xZ4tW7kP3nB6yC1\n",
    "password: Zt6pX2qL9mVw\nsecret_key = \"9f8e7d6c5b4a39281716f5e4d3c2b1a0\"\n<password>Zt6pX2qL9mVw</password>\nCookie: session=Qm3vT8xW2nL5kR9pZ4yB7cF1; theme=dark\n",
];

/// `text` with every secret found in it replaced, or `None` when it has
/// none.
pub(crate) fn redact(text: &str, emails: bool) -> Option<String> {
    let mut found = Vec::new();
    find_all(text, emails, &mut found);
    let percent = text.contains('%').then(|| View::of(text, percent_decoded));
    let look_alike = text
        .bytes()
        .any(|b| matches!(b, 0xCE | 0xCF | 0xD0 | 0xD1 | 0xD4))
        .then(|| View::of(text, latin_look_alike));
    for view in [percent, look_alike].into_iter().flatten().flatten() {
        let mut seen = Vec::new();
        find_all(&view.text, false, &mut seen);
        found.extend(seen.into_iter().map(|f| view.original(f)));
    }
    replace(text, found)
}

/// Every secret in `text` as it reads.
fn find_all(text: &str, emails: bool, found: &mut Vec<Found>) {
    let (windows, groups, key_blocks) = triggers(text);
    if key_blocks {
        private_keys(text, found);
        encoded_private_keys(text, found);
        der_private_keys(text, found);
    }
    rules::find(text, found);
    // The shapes span two lines at most: they are read around each line
    // with a word of theirs, with the line before and the one after, not
    // over the whole text.
    let wanted: Vec<&Regex> = if windows.is_empty() {
        Vec::new()
    } else {
        shapes()
            .iter()
            .filter(|shape| shape.words & groups != 0)
            .map(Shape::regex)
            .collect()
    };
    for (start, end) in windows {
        let mut seen = Vec::new();
        shaped(&wanted, &text[start..end], &mut seen);
        found.extend(seen.into_iter().map(|f| Found {
            span: (f.span.0 + start, f.span.1 + start),
            kind: f.kind,
        }));
    }
    // Each format has a `:` or two `.` (and is not compiled before a text
    // that could hold one).
    if text.contains(':') || text.bytes().filter(|&b| b == b'.').nth(1).is_some() {
        shaped(&[formats()], text, found);
    }
    if emails && text.contains('@') {
        email_addresses(text, found);
    }
}

/// Where in `text` the words any of [`shapes`] needs are (each as the
/// lines from the one before its line to the one after, merged), which
/// groups of them it has, and whether it has a private key's start: most
/// strings of a JSON document have none, and are then past in one pass of
/// an automaton instead of one per shape.
fn triggers(text: &str) -> (Vec<Span>, u16, bool) {
    static WORDS: OnceLock<aho_corasick::AhoCorasick> = OnceLock::new();
    // Every word of SECRET_NAME has one of the NAME words in it.
    const WORDS_OF_SHAPES: [(&str, u16); 24] = [
        ("secret", NAME),
        ("s3cr", NAME),
        ("secr3", NAME),
        ("pass", NAME),
        ("pa55", NAME),
        ("pa$$", NAME),
        ("p4ss", NAME),
        ("p@ss", NAME),
        ("pwd", NAME),
        ("token", NAME),
        ("t0k", NAME),
        ("tok3", NAME),
        ("key", NAME),
        ("credential", NAME),
        ("bearer", BEARER),
        ("auth", AUTH),
        ("://", URL),
        ("cookie", COOKIE),
        ("sig=", SIG),
        ("signature=", SIG),
        ("-u", USER),
        ("mysql", MYSQL),
        ("mariadb", MYSQL),
        ("securestring", SECURE),
    ];
    let words = WORDS.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(WORDS_OF_SHAPES.iter().map(|(word, _)| *word).chain([
                "-----begin",
                "-----end",
                "putty-user-key-file",
                ENCODED_BEGIN,
                // How a private key's DER starts in base64 (RSA and PKCS #8
                // keys of every size, EC and Ed25519 keys).
                "MII",
                "MHcCAQEE",
                "MC4CAQAw",
                "MIG",
            ]))
            .expect("the words build an automaton")
    });
    let bytes = text.as_bytes();
    let line_end = |at: usize| {
        bytes[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| at + p + 1)
    };
    let mut windows: Vec<Span> = Vec::new();
    let mut groups = 0;
    let mut key_blocks = false;
    // The line of the last word found: each line is looked at once, so a
    // long line with many words costs no more than one with one.
    let mut line: Span = (0, 0);
    // Overlapping: a key's marker holds shape words (`PuTTY-User-Key`).
    for hit in words.find_overlapping_iter(text) {
        let Some((_, group)) = WORDS_OF_SHAPES.get(hit.pattern().as_usize()) else {
            key_blocks = true;
            continue;
        };
        groups |= group;
        if hit.start() >= line.0 && hit.end() <= line.1 {
            continue;
        }
        let from = line.1.min(hit.start());
        let own = bytes[from..hit.start()]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(from, |p| from + p + 1);
        line = (own, line_end(hit.end()));
        let start = bytes[..own.saturating_sub(1)]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let end = line_end(line.1);
        match windows.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => windows.push((start, end)),
        }
    }
    (windows, groups, key_blocks)
}

/// What `regexes` (shapes or formats) find in `text`.
fn shaped(regexes: &[&Regex], text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    for regex in regexes {
        for captures in regex.captures_iter(bytes) {
            if let Some(list) = captures.name("cookies") {
                cookie_values(list.start(), list.as_bytes(), found);
                continue;
            }
            if let Some(encoded) = captures.name("encoded") {
                if is_encoded_credentials(encoded.as_bytes()) {
                    found.push(Found::secret((encoded.start(), encoded.end())));
                }
                continue;
            }
            // A comparison, not an assignment.
            if captures
                .name("op")
                .is_some_and(|op| op.len() > 1 && op.as_bytes().iter().all(|&b| b == b'='))
            {
                continue;
            }
            let userless = captures.name("userless");
            // After no user, a word in capitals is documentation's
            // placeholder (`redis://:PASSWORD@HOST`), not a password.
            if userless.is_some_and(|p| is_capitals(p.as_bytes())) {
                continue;
            }
            let token = ["token", "token2", "token3", "token4"]
                .iter()
                .find_map(|g| captures.name(g));
            let (secret, name) = match token.or(userless) {
                // A user id (`-u 1000:1000`), not a password; nor a port
                // before the `\@` of a URL written to be read two ways
                // (`http://127.1.1.1:80\@127.2.2.2/`).
                Some(token)
                    if token
                        .as_bytes()
                        .trim_ascii_end()
                        .iter()
                        .rposition(|b| !matches!(b, b'\\' | b'@' | b':'))
                        .is_some_and(|last| {
                            token.as_bytes()[..=last].iter().all(u8::is_ascii_digit)
                        }) =>
                {
                    continue;
                }
                Some(token) => (token, None),
                None => {
                    let Some(value) = ["dq", "sq", "bare", "text"]
                        .iter()
                        .find_map(|g| captures.name(g))
                    else {
                        continue;
                    };
                    (value, captures.name("name"))
                }
            };
            if secret.is_empty() || rules::globally_allowed(secret.as_bytes()) {
                continue;
            }
            // After `Bearer` or `Authorization`, a word of prose (`Bearer
            // authorization is ...`) or an expression (`module.params[...]`).
            if token.is_some()
                && (secret
                    .as_bytes()
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || *b == b'_')
                    || matches!(bytes.get(secret.end()), Some(b'(' | b'[')))
            {
                continue;
            }
            if let Some(name) = name {
                let (Ok(name_text), Ok(value_text)) = (
                    std::str::from_utf8(name.as_bytes()),
                    std::str::from_utf8(secret.as_bytes()),
                ) else {
                    continue;
                };
                let bare = captures.name("bare").is_some();
                if !is_secret_name(name_text)
                    || !may_be_secret(name_text, value_text)
                    || (bare && is_code(bytes, name.start(), (secret.start(), secret.end())))
                {
                    continue;
                }
            }
            found.push(Found::secret((secret.start(), secret.end())));
        }
    }
}

/// A word in capitals (`PASSWORD`, `YOUR_TOKEN`): letters, digits and
/// `_`, starting with a letter, no lowercase.
fn is_capitals(word: &[u8]) -> bool {
    word.first().is_some_and(u8::is_ascii_uppercase)
        && word
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// Whether `value`, found under the secret name `name`, can be a secret:
/// not a version (`"pbkdf2-password": "1.2.1"` in a package.json), not
/// shorter than four characters (`"X-Auth-Token": "1"`), not the name or a
/// secret's word again (`secret_key = "secret_key"`), not a directory
/// after `PWD` (the shell's working directory).
pub(crate) fn may_be_secret(name: &str, value: &str) -> bool {
    let value = value.trim();
    let bare = value.trim_start_matches(['v', '^', '~', '=']);
    let version = bare.contains('.')
        && bare.starts_with(|c: char| c.is_ascii_digit())
        && bare.chars().all(|c| c.is_ascii_digit() || c == '.');
    let plain = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let word = plain(value);
    let echoes = word == plain(name)
        || [
            "password",
            "secret",
            "token",
            "apikey",
            "secretkey",
            "passwd",
        ]
        .contains(&word.as_str());
    let directory = name.to_ascii_lowercase().ends_with("pwd")
        && (value.starts_with(['/', '~', '.'])
            || value.as_bytes().get(1..3) == Some(b":\\".as_slice()));
    let templated = ["{{", "{%", "${", "$(", "%s", "%(", "{}"]
        .iter()
        .any(|t| value.contains(t));
    // A variable (`$certPassword`, `@PASSWORD` in a template), a
    // constant's name (`NOT_LOGGING_PASSWORD`), a number in hex, a path.
    let identifier = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let reference = value.strip_prefix('$').is_some_and(identifier)
        || value
            .strip_prefix('@')
            .is_some_and(|v| identifier(v) && !v.chars().any(|c| c.is_ascii_lowercase()));
    let constant = value.matches('_').count() >= 2
        && identifier(value)
        && !value.chars().any(|c| c.is_ascii_lowercase());
    let hex = value
        .strip_prefix("0x")
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    let path = value.starts_with('/') && value[1..].contains('/');
    // A placeholder word (`test`, `admin`, `plain`): lower-case letters
    // with no more entropy than 2.5 bits a letter.
    let word =
        value.chars().all(|c| c.is_ascii_lowercase()) && rules::entropy(value.as_bytes()) <= 2.5;
    // A file (`--ask-vault-pass test_vault.yml`), not its content.
    let file = value.rsplit_once('.').is_some_and(|(stem, ext)| {
        FILE_EXTENSIONS.contains(&ext)
            && !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
    });
    // Another name (`('ansible_ssh_pass', 'ansible_password')`) or a flag.
    let a_name = value.contains('_')
        && value.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        && is_secret_name(value);
    value.chars().count() >= 4
        && !version
        && !echoes
        && !directory
        && !templated
        && !reference
        && !constant
        && !hex
        && !path
        && !word
        && !file
        && !a_name
        && !value
            .strip_prefix("--")
            .is_some_and(|flag| flag.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// Extensions of files a value names instead of holding a secret.
const FILE_EXTENSIONS: [&str; 20] = [
    "yml", "yaml", "json", "txt", "cfg", "conf", "ini", "toml", "pem", "key", "crt", "py", "sh",
    "js", "ts", "rs", "go", "log", "csv", "xml",
];

/// Each value of a Cookie header's `name=value; ...` list at `start`:
/// session ids and the like; short ones (`lang=en`) stay.
fn cookie_values(start: usize, list: &[u8], found: &mut Vec<Found>) {
    let mut at = 0;
    for pair in list.split(|&b| b == b';') {
        if let Some(eq) = pair.iter().position(|&b| b == b'=') {
            let value = &pair[eq + 1..];
            let lead = value.len() - value.trim_ascii_start().len();
            let value = value.trim_ascii();
            if value.len() >= 8 {
                let from = start + at + eq + 1 + lead;
                found.push(Found::secret((from, from + value.len())));
            }
        }
        at += pair.len() + 1;
    }
}

/// Whether `encoded` is base64 of `user:password` (printable, both
/// parts there), as HTTP Basic, `.npmrc`'s `_auth` and Docker's `auth`
/// carry credentials.
pub(crate) fn is_encoded_credentials(encoded: &[u8]) -> bool {
    let mut padded = encoded.to_vec();
    while !padded.len().is_multiple_of(4) {
        padded.push(b'=');
    }
    let decoded = decode_base64(&padded);
    let decoded: &[u8] = {
        // Padding decodes to zero bytes at the end.
        let end = decoded.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        &decoded[..end]
    };
    decoded.len() >= 3
        && decoded.iter().all(|b| (0x20..0x7f).contains(b))
        && decoded
            .iter()
            .position(|&b| b == b':')
            .is_some_and(|colon| colon > 0 && colon + 1 < decoded.len())
}

/// `-----BEGIN` in base64, as every base64 of a PEM block starts.
const ENCODED_BEGIN: &str = "LS0tLS1CRUdJTi";

/// PEM private keys in base64 (a kubeconfig's `client-key-data`, a TLS
/// Secret's `tls.key`): each run of base64 that starts as `-----BEGIN`
/// does and decodes to a private key's header, whole. gitleaks' generic
/// rule finds these and then drops them: its stopwords include `crud`,
/// which the lower-cased base64 of `-----BEGIN` holds.
fn encoded_private_keys(text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], ENCODED_BEGIN.as_bytes()) {
        let start = from + at;
        let end = start + bytes[start..].iter().take_while(|b| is_base64(b)).count();
        // The header is in the first 100 characters (75 bytes).
        let head = decode_base64(&bytes[start..end.min(start + 100)]);
        if find(&head, b"PRIVATE KEY").is_some() {
            found.push(Found {
                span: (start, end),
                kind: Kind::PrivateKey,
            });
        }
        from = end.max(start + 1);
    }
}

/// Whether `b` is of standard base64's alphabet (padding included).
fn is_base64(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

/// Standard base64 `encoded` decoded as far as it is whole quartets of the
/// alphabet (padding and anything after it ignored).
fn decode_base64(encoded: &[u8]) -> Vec<u8> {
    let value = |b: u8| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(encoded.len() / 4 * 3);
    for quartet in encoded.as_chunks::<4>().0 {
        let Some(sextets) = quartet
            .iter()
            .map(|&b| value(b))
            .collect::<Option<Vec<u8>>>()
        else {
            break;
        };
        let n = sextets.iter().fold(0u32, |n, &s| (n << 6) | u32::from(s));
        out.extend_from_slice(&n.to_be_bytes()[1..]);
    }
    out
}

/// PEM private keys, each from its BEGIN line to its END line (or the
/// end of the text); a key's body whose BEGIN line is not in the text
/// (the tail of a file shown from line 2) from its first line of base64 to
/// its END line; and a PuTTY key's private lines and MAC.
fn private_keys(text: &str, found: &mut Vec<Found>) {
    static MARKERS: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (begin, end_marker) = MARKERS.get_or_init(|| {
        (
            ascii(r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"),
            ascii(r"(?i)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"),
        )
    });
    let bytes = text.as_bytes();
    let first = found.len();
    let mut from = 0;
    while let Some(start) = begin.find_at(bytes, from) {
        let after = start.end();
        let end = find(&bytes[after..], b"-----END")
            .and_then(|at| {
                let marker = after + at + b"-----END".len();
                find(&bytes[marker..], b"-----").map(|close| marker + close + 5)
            })
            .unwrap_or(bytes.len());
        found.push(Found {
            span: (start.start(), end),
            kind: Kind::PrivateKey,
        });
        from = end;
    }
    for end in end_marker.find_iter(bytes) {
        if found[first..]
            .iter()
            .any(|f| f.span.0 <= end.start() && end.end() <= f.span.1)
        {
            continue;
        }
        // Back over the lines of base64 before the END line.
        let mut start = end.start();
        while start > 0 {
            let line_start = bytes[..start - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let line = bytes[line_start..start - 1].trim_ascii();
            if line.len() < 16 || !line.iter().all(is_base64) {
                break;
            }
            start = line_start;
        }
        if start < end.start() {
            found.push(Found {
                span: (start, end.end()),
                kind: Kind::PrivateKey,
            });
        }
    }
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], b"PuTTY-User-Key-File-") {
        let key = from + at;
        let Some(private) = find(&bytes[key..], b"Private-Lines:") else {
            break;
        };
        let start = key + private;
        // To the end of the MAC's line (or of the text).
        let end = find(&bytes[start..], b"Private-MAC:")
            .map(|mac| start + mac)
            .and_then(|mac| {
                find(&bytes[mac..], b"\n")
                    .map(|nl| mac + nl)
                    .or(Some(bytes.len()))
            })
            .unwrap_or(bytes.len());
        found.push(Found {
            span: (start, end),
            kind: Kind::PrivateKey,
        });
        from = end.max(key + 1);
    }
}

/// A private key's body shown with neither its BEGIN nor its END line
/// (`sed -n 2,20p key.pem`): lines of base64, 64 characters or more in all,
/// whose DER is a private key's: a SEQUENCE whose first element is the
/// version 0 or 1 and whose second is an INTEGER (RSA, DSA), a SEQUENCE
/// (PKCS #8) or an OCTET STRING (EC). A certificate, a public key or a CSR
/// starts with a SEQUENCE in a SEQUENCE and stays.
fn der_private_keys(text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(m) = bytes[at..].iter().position(|&b| b == b'M') {
        let start = at + m;
        at = start + 1;
        if start > 0 && is_base64(&bytes[start - 1]) {
            continue;
        }
        // The run, across line ends while each line is all base64.
        let mut end = start;
        let mut encoded = Vec::new();
        loop {
            let run = bytes[end..].iter().take_while(|b| is_base64(b)).count();
            encoded.extend_from_slice(&bytes[end..end + run]);
            end += run;
            let next = match bytes.get(end) {
                Some(b'\n') => end + 1,
                Some(b'\r') if bytes.get(end + 1) == Some(&b'\n') => end + 2,
                _ => break,
            };
            let line = bytes[next..].iter().take_while(|b| is_base64(b)).count();
            if line < 16 || run < 16 {
                break;
            }
            end = next;
        }
        if encoded.len() >= 64 && is_private_key_der(&decode_base64(&encoded[..24])) {
            found.push(Found {
                span: (start, end),
                kind: Kind::PrivateKey,
            });
        }
        at = at.max(end);
    }
}

/// Whether `der` starts as a private key's DER does (see
/// [`der_private_keys`]).
fn is_private_key_der(der: &[u8]) -> bool {
    let body = match der {
        [0x30, 0x82, _, _, rest @ ..] | [0x30, 0x81, _, rest @ ..] => rest,
        [0x30, len, rest @ ..] if *len < 0x80 => rest,
        _ => return false,
    };
    matches!(body, [0x02, 0x01, 0x00 | 0x01, 0x02 | 0x30 | 0x04, ..])
}

/// Another reading of a text, in which secrets hide from a reading of
/// its bytes: percent-decoded (`password%3D...` in a logged form body or
/// URL) or with look-alike letters read as the Latin ones they mimic
/// (`DB_РASSWORD`, a Cyrillic Р). `origin[i]` is where byte `i` of `text`
/// comes from in the original (one more entry for the end).
struct View {
    text: String,
    origin: Vec<usize>,
}

impl View {
    /// `text` read with each character `read` turns into another (and its
    /// length in `text`) replaced; `None` when nothing was.
    fn of(text: &str, read: impl Fn(&[u8]) -> Option<(char, usize)>) -> Option<View> {
        let bytes = text.as_bytes();
        let mut view = View {
            text: String::with_capacity(text.len()),
            origin: Vec::with_capacity(text.len() + 1),
        };
        let mut changed = false;
        let mut at = 0;
        while at < bytes.len() {
            if let Some((c, len)) = read(&bytes[at..]) {
                for _ in 0..c.len_utf8() {
                    view.origin.push(at);
                }
                view.text.push(c);
                at += len;
                changed = true;
            } else {
                let c = text[at..].chars().next().expect("at is a char boundary");
                for i in 0..c.len_utf8() {
                    view.origin.push(at + i);
                }
                view.text.push(c);
                at += c.len_utf8();
            }
        }
        view.origin.push(bytes.len());
        changed.then_some(view)
    }

    /// A span of the view as the span of the original it comes from.
    fn original(&self, found: Found) -> Found {
        Found {
            span: (self.origin[found.span.0], self.origin[found.span.1]),
            kind: found.kind,
        }
    }
}

/// `%XX` of a printable ASCII character, decoded.
fn percent_decoded(bytes: &[u8]) -> Option<(char, usize)> {
    let [b'%', high, low, ..] = *bytes else {
        return None;
    };
    let hex = |b: u8| (b as char).to_digit(16);
    let byte = hex(high)? * 16 + hex(low)?;
    (0x20..0x7f)
        .contains(&byte)
        .then_some((byte as u8 as char, 3))
}

/// A Cyrillic or Greek letter that looks like a Latin one, as that one.
fn latin_look_alike(bytes: &[u8]) -> Option<(char, usize)> {
    const LOOK_ALIKES: &str =
        "аaеeоoрpсcхxуyіiѕsјjԁdАAВBЕEКKМMНHОOРPСCТTХXЅSІIοoρpνvΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΧXΥY";
    if !matches!(bytes.first(), Some(0xCE | 0xCF | 0xD0 | 0xD1 | 0xD4)) {
        return None;
    }
    let c = std::str::from_utf8(&bytes[..2.min(bytes.len())])
        .ok()?
        .chars()
        .next()?;
    let mut pairs = LOOK_ALIKES.chars();
    while let (Some(from), Some(to)) = (pairs.next(), pairs.next()) {
        if from == c {
            return Some((to, c.len_utf8()));
        }
    }
    None
}

fn email_addresses(text: &str, found: &mut Vec<Found>) {
    static EMAIL: OnceLock<Regex> = OnceLock::new();
    let email =
        EMAIL.get_or_init(|| ascii(r"(?i)[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b"));
    for m in email.find_iter(text.as_bytes()) {
        found.push(Found {
            span: (m.start(), m.end()),
            kind: Kind::Email,
        });
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `text` with each found span (overlapping ones as one, the stronger
/// kind's label) replaced by its label; `None` when there are none.
fn replace(text: &str, mut found: Vec<Found>) -> Option<String> {
    if found.is_empty() {
        return None;
    }
    found.sort_unstable_by_key(|f| f.span);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut current: Option<Found> = None;
    let flush = |f: Found, out: &mut String, copied: &mut usize| {
        let (start, end) = (floor(text, f.span.0), ceil(text, f.span.1));
        let start = start.max(*copied);
        out.push_str(&text[*copied..start]);
        out.push_str(f.kind.label());
        *copied = end.max(start);
    };
    for f in found {
        match &mut current {
            Some(c) if f.span.0 < c.span.1 => {
                c.span.1 = c.span.1.max(f.span.1);
                c.kind = c.kind.max(f.kind);
            }
            _ => {
                if let Some(c) = current.take() {
                    flush(c, &mut out, &mut copied);
                }
                current = Some(f);
            }
        }
    }
    if let Some(c) = current {
        flush(c, &mut out, &mut copied);
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// The char boundary at or before `at`.
fn floor(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The char boundary at or after `at`.
fn ceil(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> String {
        redact(text, true).unwrap_or_else(|| text.to_owned())
    }

    /// What the pre-initialised build runs at build time builds every
    /// regex, and a scan after it finds what it found before.
    #[test]
    fn prepare_builds_everything_and_scans_go_on_the_same() {
        prepare();
        assert_eq!(redacted("DB_PASSWORD=hunter2"), "DB_PASSWORD=[REDACTED]");
    }

    #[test]
    fn a_port_before_a_urls_backslash_at_is_no_password() {
        for url in [
            r"http://127.1.1.1:80\@127.2.2.2:80/",
            r"http://127.1.1.1:80\@@127.2.2.2:80/",
            r"http://127.1.1.1:80:\@@127.2.2.2:80/",
        ] {
            assert_eq!(redacted(url), url);
        }
        assert!(!redacted("https://deploy:s3cr3tPw@git.example/x").contains("s3cr3tPw"));
    }

    #[test]
    fn a_flag_after_bearer_is_no_token() {
        let flags = "curl --oauth2-bearer --proxy-user x --data y";
        assert_eq!(redacted(flags), flags);
        assert_eq!(
            redacted("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc"),
            "Authorization: Bearer [REDACTED]"
        );
    }

    /// One test per row of the module's table.
    #[test]
    fn assignments_anywhere_on_a_line_lose_their_values() {
        assert_eq!(
            redacted("DB_PASSWORD=hunter2 API_TOKEN := 'ab3cd' and x => \"q\" a_secret=\"s p q\";"),
            "DB_PASSWORD=[REDACTED] API_TOKEN := '[REDACTED]' and x => \"q\" a_secret=\"[REDACTED]\";"
        );
        assert_eq!(
            redacted("TOKEN_URL=https://x max_tokens=5 PWD=/x"),
            "TOKEN_URL=https://x max_tokens=5 PWD=/x"
        );
        // In escaped text, a value ends at an escaped line end.
        assert_eq!(
            redacted(r#""A=1\nAPI_KEY=ab3cd\nB=2 C:\x" password=C:\pass\word"#),
            r#""A=1\nAPI_KEY=[REDACTED]\nB=2 C:\x" password=[REDACTED]"#
        );
    }

    #[test]
    fn quoted_names_with_a_colon_lose_their_values() {
        assert_eq!(
            redacted(r#"log: {"user":"bob","password":"hunter2","n":1} {'api_key': 'k-12'}"#),
            r#"log: {"user":"bob","password":"[REDACTED]","n":1} {'api_key': '[REDACTED]'}"#
        );
    }

    #[test]
    fn a_name_starting_a_line_with_a_colon_loses_its_value() {
        assert_eq!(
            redacted("x-api-key: abc123\n  - password: p4ss\nReset your password: use the link"),
            "x-api-key: [REDACTED]\n  - password: [REDACTED]\nReset your password: use the link"
        );
    }

    /// A PEM private key in base64, as a kubeconfig or a TLS Secret holds
    /// it, goes whole; a base64 certificate (no private key) stays.
    #[test]
    fn a_private_key_in_base64_goes_whole() {
        let encode = |text: &str| {
            const ALPHABET: &[u8] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut out = String::new();
            for chunk in text.as_bytes().chunks(3) {
                let mut n = [0u8; 3];
                n[..chunk.len()].copy_from_slice(chunk);
                let v = u32::from_be_bytes([0, n[0], n[1], n[2]]);
                for i in 0..=chunk.len() {
                    out.push(ALPHABET[(v >> (18 - 6 * i) & 63) as usize] as char);
                }
                out.extend(std::iter::repeat_n('=', 3 - chunk.len()));
            }
            out
        };
        let key = encode(
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oOmlVxuoXjf4oAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n",
        );
        let certificate = encode(
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUX\n-----END CERTIFICATE-----\n",
        );
        let kubeconfig = format!(
            "users:\n- name: admin\n  user:\n    client-certificate-data: {certificate}\n    client-key-data: {key}\n"
        );
        let out = redacted(&kubeconfig);
        assert!(!out.contains(&key), "{out}");
        assert!(
            out.contains("client-key-data: [REDACTED PRIVATE KEY]"),
            "{out}"
        );
        assert!(out.contains(&certificate), "{out}");
    }

    /// A key's body with neither marker goes by its DER; a certificate's
    /// stays.
    #[test]
    fn a_private_key_s_body_goes_by_its_der() {
        let line = |der: &[u8]| {
            const ALPHABET: &[u8] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut bytes = der.to_vec();
            bytes.resize(96, 0x5a);
            bytes
                .chunks(3)
                .flat_map(|c| {
                    let v = u32::from_be_bytes([0, c[0], c[1], c[2]]);
                    (0..4).map(move |i| ALPHABET[(v >> (18 - 6 * i) & 63) as usize] as char)
                })
                .collect::<String>()
        };
        let rsa = line(&[
            0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01,
        ]);
        let certificate = line(&[0x30, 0x82, 0x03, 0x10, 0x30, 0x82, 0x02, 0xf8]);
        let text = format!("$ sed -n 2,4p key.pem\n{rsa}\n{rsa}\nok");
        assert_eq!(
            redacted(&text),
            "$ sed -n 2,4p key.pem\n[REDACTED PRIVATE KEY]\nok"
        );
        let text = format!("{certificate}\n{certificate}\n");
        assert_eq!(redacted(&text), text);
    }

    /// Source code a model reads and edits keeps its references to where
    /// a secret is kept; a value that is a secret still goes.
    #[test]
    fn a_reference_to_a_secret_s_variable_is_code_not_a_secret() {
        for line in [
            "db = connect(host=host, password=password)",
            "        self.token = token",
            "\tPassword: opts.Password,",
            "  password = var.db_password",
            "const apiKey = process.env.API_KEY;",
        ] {
            assert_eq!(redacted(line), line);
        }
        assert_eq!(
            redacted("connect(password=Xk9mQ2vLp8zR4w) DB_PASSWORD=hunter2"),
            "connect(password=[REDACTED]) DB_PASSWORD=[REDACTED]"
        );
    }

    /// One row per shape the dedicated scanners catch (the README's
    /// table after the URL rows): what goes and what stays around it.
    #[test]
    fn the_formats_of_credential_files_and_commands_lose_their_secret() {
        for (text, expected) in [
            (
                "<password>Xk9mQ2vLp8</password>",
                "<password>[REDACTED]</password>",
            ),
            (
                "define('DB_PASSWORD', 'Xk9mQ2vLp8');",
                "define('DB_PASSWORD', '[REDACTED]');",
            ),
            (
                "args:\n  - \"--api-key\"\n  - \"Xk9mQ2vLp8\"",
                "args:\n  - \"--api-key\"\n  - \"[REDACTED]\"",
            ),
            (
                "machine h login bob password Xk9mQ2vLp8",
                "machine h login bob password [REDACTED]",
            ),
            (
                "machine h\n  login bob\n  password Xk9mQ2vLp8",
                "machine h\n  login bob\n  password [REDACTED]",
            ),
            // gitleaks' curl rule takes the user too.
            (
                "curl -u admin:Xk9mQ2vLp8 https://x",
                "curl -u [REDACTED] https://x",
            ),
            (
                "wget --user=ci --proxy-user p:Xk9mQ2vLp8 u",
                "wget --user=ci --proxy-user p:[REDACTED] u",
            ),
            (
                "openssl pkcs12 -passin pass:Xk9mQ2vLp8 -out a",
                "openssl pkcs12 -passin pass:[REDACTED] -out a",
            ),
            (
                "keytool -storepass Xk9mQ2vLp8 -keypass Yk9mQ2vLp8",
                "keytool -storepass [REDACTED] -keypass [REDACTED]",
            ),
            (
                "mysql -u root -pXk9mQ2vLp8 -h db",
                "mysql -u root -p[REDACTED] -h db",
            ),
            ("sshpass -p Xk9mQ2vLp8 ssh h", "sshpass -p [REDACTED] ssh h"),
            (
                "$p = ConvertTo-SecureString \"Xk9mQ2vLp8\" -AsPlainText -Force",
                "$p = ConvertTo-SecureString \"[REDACTED]\" -AsPlainText -Force",
            ),
            (
                "Cookie: sid=0qazcmiux53i9r6q; lang=en",
                "Cookie: sid=[REDACTED]; lang=en",
            ),
            (
                "Set-Cookie: s=lajUiBLvNE9qMYG8; Path=/",
                "Set-Cookie: s=[REDACTED]; Path=/",
            ),
            (
                "https://a.blob.core.windows.net/c?sv=2022&sig=KEmk1b7A%3D&x=1",
                "https://a.blob.core.windows.net/c?sv=2022&sig=[REDACTED]&x=1",
            ),
            ("_auth=Y2k6OGxlT0k3XnFHUjNpNXk=", "_auth=[REDACTED]"),
            (
                "db.internal:5432:app:app:D5auCt9XQOT2S",
                "db.internal:5432:app:app:[REDACTED]",
            ),
            (
                "admin:$apr1$ugO96n0w$4O.pROeyluDEhlkaeQ2YN/",
                "admin:[REDACTED]",
            ),
            (
                "bot 2287781055:AAW7wmMeEGo6f_B6mvbgC91AVg5mB0952iS ok",
                "bot [REDACTED] ok",
            ),
            (
                "see (ghp_0Q5fqd0SSqturifMAYCFFeEqJwhrozJBELlO).",
                "see ([REDACTED]).",
            ),
            (
                "amqp://app:U1p/XN@I@rabbit:5672/?x=a@b.com",
                "amqp://app:[REDACTED]@rabbit:5672/?x=a@b.com",
            ),
        ] {
            assert_eq!(redact(text, false).as_deref(), Some(expected), "{text}");
        }
    }

    /// A secret hides behind percent-encoding or look-alike letters; what
    /// is found there goes where it stands.
    #[test]
    fn a_decoded_reading_finds_what_the_bytes_hide() {
        assert_eq!(
            redacted("body=user%3Dbob%26password%3DQfNwUzC0Vva%2521"),
            "body=user%3Dbob%26password%3D[REDACTED]"
        );
        assert_eq!(
            redacted("DB_\u{420}ASSWORD=foJeb4EHHmldy"),
            "DB_\u{420}ASSWORD=[REDACTED]"
        );
        assert_eq!(redacted("PASSW0RD=foJeb4EHHmldy"), "PASSW0RD=[REDACTED]");
    }

    /// What is code, a template, a placeholder or another name stays.
    #[test]
    fn values_that_cannot_be_secrets_stay() {
        for text in [
            "assert app.secret_key == \"config\"",
            "{\"pbkdf2-password\": \"1.2.1\"}",
            "\"X-Auth-Token\": \"1\"",
            "app.secret_key = \"secret_key\"",
            "PWD=/home/app",
            "docker run -u 1000:1000 app",
            "password: \"{{ lookup('env', 'PASS') }}\"",
            "ansible_password=@PASSWORD",
            "-Password $certPassword",
            "GalaxyToken(token=token_val)",
            "request.withCredentials = !!config.withCredentials;",
            "token: mio::Token,",
            "secret = stdout",
            "password=('ansible_ssh_pass', 'ansible_password'),",
            "ansible-playbook --ask-vault-pass site.yml",
            "data1_password: test",
            "'Authorization': 'Bearer my_token'",
            "def pop(self, key, default=_NoKeySentinel, /):",
            "{'allPass': 'overEvery'}",
        ] {
            assert_eq!(redact(text, false), None, "{text}");
        }
    }

    #[test]
    fn a_yaml_env_entry_naming_a_secret_loses_its_value() {
        assert_eq!(
            redacted(
                "env:\n  - name: DB_PASSWORD\n    value: Xk9mQ2vLp8zR4w\n  - name: REGION\n    value: eu-west-1\n  - name: \"API_TOKEN\"\n    value: \"t-9Qx\""
            ),
            "env:\n  - name: DB_PASSWORD\n    value: [REDACTED]\n  - name: REGION\n    value: eu-west-1\n  - name: \"API_TOKEN\"\n    value: \"[REDACTED]\""
        );
    }

    #[test]
    fn command_line_flags_lose_their_values() {
        assert_eq!(
            redacted(
                "deploy --api-key=k1k1 --password \"p w x\" -token ab3cd --token-file f --secret --verbose"
            ),
            "deploy --api-key=[REDACTED] --password \"[REDACTED]\" -token [REDACTED] --token-file f --secret --verbose"
        );
    }

    #[test]
    fn bearer_and_authorization_tokens_go() {
        assert_eq!(
            redacted("auth: Bearer abcdefgh12345678\nAuthorization: Basic dXNlcjpwYXNz\n"),
            "auth: Bearer [REDACTED]\nAuthorization: Basic [REDACTED]\n"
        );
    }

    #[test]
    fn a_type_annotation_and_a_urls_syntax_written_out_are_not_secrets() {
        for text in [
            "    token: String,",
            "pub password: string;",
            "/// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`",
        ] {
            assert_eq!(redacted(text), text);
        }
        assert_eq!(redacted("token: hunter2-hunter2"), "token: [REDACTED]");
    }

    #[test]
    fn a_password_in_a_url_without_a_user_goes_and_a_placeholder_stays() {
        assert_eq!(
            redacted("REDIS_URL=redis://:s3cr3t-Pw@10.0.0.5:6379/0"),
            "REDIS_URL=redis://:[REDACTED]@10.0.0.5:6379/0"
        );
        assert_eq!(
            redacted("rediss://:hunter2@cache:6380"),
            "rediss://:[REDACTED]@cache:6380"
        );
        for text in [
            "redis://:PASSWORD@HOST:6379/0",
            "redis://:YOUR_PASSWORD@host",
            "redis://[:PASSWORD@]HOST[:PORT][/DB]",
        ] {
            assert_eq!(redacted(text), text);
        }
    }

    #[test]
    fn a_password_in_a_url_goes() {
        assert_eq!(
            redacted("postgres://app:s3cr3t@db:5432/x and https://example.com/a:b"),
            "postgres://app:[REDACTED]@db:5432/x and https://example.com/a:b"
        );
    }

    #[test]
    fn a_private_key_block_goes_whole_and_text_around_it_stays() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            redacted(&format!("a {key} b")),
            "a [REDACTED PRIVATE KEY] b"
        );
        assert_eq!(
            redacted("x\n-----BEGIN PRIVATE KEY-----\nMIIE"),
            "x\n[REDACTED PRIVATE KEY]"
        );
    }

    #[test]
    fn email_addresses_go_when_asked() {
        assert_eq!(
            redacted("mail <ops@example.com>."),
            "mail <[REDACTED EMAIL]>."
        );
        assert_eq!(redact("ops@example.com", false), None);
    }

    #[test]
    fn placeholders_stay() {
        for text in [
            "PASSWORD=${DB_PASSWORD}",
            "token: null",
            "api_key=true",
            "password=\"\"",
        ] {
            assert_eq!(redact(text, true), None, "{text}");
        }
    }

    #[test]
    fn a_program_s_expressions_are_not_secrets() {
        for line in [
            "    api_key: Option<String>,",
            "api_key: None,",
            "self.api_key = key.filter(|k| !k.is_empty());",
            "let secret = prefixes",
            "let token = std::sync::Arc::new(());",
            "token := line[start:i]",
            "for _, secret := range names {",
            "TOKEN = re.compile(r\"x\")",
            "{\"_meta\":{\"progressToken\":3}}",
        ] {
            assert_eq!(redact(line, true), None, "{line}");
        }
        // A string is a secret wherever it is declared.
        assert_eq!(
            redacted("const TOKEN = \"t0k3n\";"),
            "const TOKEN = \"[REDACTED]\";"
        );
    }

    /// Text made of the pieces the readings and shapes turn on (escapes,
    /// look-alikes, markers, multi-byte characters, line ends), in random
    /// order: redaction never panics (a panic traps the guest and ends the
    /// run) and never cuts a character.
    #[test]
    fn no_mix_of_markers_escapes_and_characters_breaks_it() {
        const PIECES: [&str; 32] = [
            "%",
            "%4",
            "%41",
            "%3D",
            "%E9",
            "\u{420}",
            "\u{430}",
            "é",
            "€",
            "😀",
            "password",
            "=",
            ": ",
            "\n",
            "\r\n",
            "-----END PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----",
            "PuTTY-User-Key-File-3: x\n",
            "Private-Lines: 1\n",
            "Private-MAC:",
            "Cookie: a=",
            ";",
            "login u\n",
            "password ",
            "MIIEpAIBAAKCAQEA",
            "LS0tLS1CRUdJTi",
            "db:5432:a:b:",
            "u:$apr1$",
            "-u ",
            "://u:",
            "@h/",
            "\"",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..12 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(PIECES[(state % PIECES.len() as u64) as usize]);
            }
            if let Some(out) = redact(&text, true) {
                assert!(out.contains("[REDACTED"), "{text:?} -> {out:?}");
            }
        }
    }

    #[test]
    fn random_looking_text() {
        assert!(looks_random("feefa938878f578ab36c5191a2a41fa32d6118fa"));
        assert!(looks_random("sn0F4xxNivNFQWaOJsCippWp5cVx8+9c4en6Q5ha"));
        assert!(looks_random("c59291cddba498268e8bfb11096d27fe-us12"));
        for text in [
            "a_rather_long_member_name",
            "aaaaaaaaaaaaaaaaaaaaaaaa",
            "short1234567",
            "two words here and there",
            "redhat_bugzilla_product_version",
            "NSS_BUFLEN_PASSWD_AND_MORE",
        ] {
            assert!(!looks_random(text), "{text}");
        }
    }

    #[test]
    fn names() {
        for name in [
            "password",
            "DB_PASSWORD",
            "x-api-key",
            "client_secret",
            "id_token",
            "AWS_SECRET_ACCESS_KEY",
            "apiKey",
            "DB_PASS",
            "MYSQL_PWD",
            "pwd",
            "PASSW0RD",
            "db_pa55word",
            "passphrase",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "max_tokens",
            "TOKEN_URL",
            "bypass",
            "compass",
            "allPass",
            "keys",
            "password hint",
            "progressToken",
            "next_page_token",
            "csrf_token",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
