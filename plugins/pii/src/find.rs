//! Where personal data is in a text: e-mail addresses, phone numbers,
//! payment cards (Luhn), IBANs (ISO 7064 mod 97), national IDs (the US SSN
//! by its rules, the UK NINO by its prefixes, the Spanish DNI and NIE by
//! their check letter), IPv4 and IPv6 addresses. One pass over the text,
//! no regexes: each finder starts at the byte its entity must start with.

use std::net::Ipv6Addr;

/// A kind of personal data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entity {
    /// An e-mail address.
    Email,
    /// A phone number.
    Phone,
    /// A payment card number.
    Card,
    /// An international bank account number.
    Iban,
    /// A national identity number.
    NationalId,
    /// An IPv4 or IPv6 address.
    Ip,
}

impl Entity {
    /// Every entity.
    pub const ALL: [Entity; 6] = [
        Entity::Email,
        Entity::Phone,
        Entity::Card,
        Entity::Iban,
        Entity::NationalId,
        Entity::Ip,
    ];

    /// The name settings use.
    pub fn name(self) -> &'static str {
        match self {
            Entity::Email => "email",
            Entity::Phone => "phone",
            Entity::Card => "card",
            Entity::Iban => "iban",
            Entity::NationalId => "national-id",
            Entity::Ip => "ip",
        }
    }

    /// The entity called `name`.
    pub fn named(name: &str) -> Option<Entity> {
        Entity::ALL.into_iter().find(|e| e.name() == name.trim())
    }

    /// What replaces it.
    pub fn label(self) -> &'static str {
        match self {
            Entity::Email => "[REDACTED EMAIL]",
            Entity::Phone => "[REDACTED PHONE]",
            Entity::Card => "[REDACTED CARD]",
            Entity::Iban => "[REDACTED IBAN]",
            Entity::NationalId => "[REDACTED NATIONAL ID]",
            Entity::Ip => "[REDACTED IP]",
        }
    }
}

/// A piece of personal data: where it is (byte offsets) and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Where it starts.
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// What it is.
    pub entity: Entity,
}

/// Everything in `text`, in order, without overlaps.
pub fn find(text: &str) -> Vec<Found> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    emails(b, &mut found);
    let mut i = 0;
    while i < b.len() {
        let before = i.checked_sub(1).map(|p| b[p]);
        let boundary = before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != b'_');
        if boundary {
            // The finders whose entity their start decides, in order.
            let fixed = iban(b, i)
                .map(|end| (end, Entity::Iban))
                .or_else(|| {
                    nino(b, i)
                        .or_else(|| dni(b, i))
                        .map(|end| (end, Entity::NationalId))
                })
                .or_else(|| ipv6(b, i).map(|end| (end, Entity::Ip)));
            if let Some((end, entity)) = fixed {
                found.push(Found {
                    start: i,
                    end,
                    entity,
                });
                i = end;
                continue;
            }
            if (b[i].is_ascii_digit() || b[i] == b'+' || b[i] == b'(')
                && before.is_none_or(|c| !matches!(c, b'.' | b'-' | b'/' | b'+' | b':'))
                && let Some(number) = number(b, i)
            {
                if let Some(entity) = number.entity {
                    found.push(Found {
                        start: i,
                        end: number.end,
                        entity,
                    });
                }
                i = number.end.max(i + 1);
                continue;
            }
        }
        i += 1;
    }
    found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
    // An e-mail address holds digits the number finder may have read.
    let mut kept: Vec<Found> = Vec::with_capacity(found.len());
    for f in found {
        if kept.last().is_none_or(|k| f.start >= k.end) {
            kept.push(f);
        }
    }
    kept
}

fn emails(b: &[u8], found: &mut Vec<Found>) {
    let local = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-');
    let domain = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-');
    let mut from = 0;
    while let Some(at) = memchr(b'@', &b[from..]).map(|p| p + from) {
        from = at + 1;
        let mut start = at;
        while start > 0 && local(b[start - 1]) {
            start -= 1;
        }
        while start < at && b[start] == b'.' {
            start += 1;
        }
        let mut end = at + 1;
        while end < b.len() && domain(b[end]) {
            end += 1;
        }
        while end > at + 1 && matches!(b[end - 1], b'.' | b'-') {
            end -= 1;
        }
        if start == at || end == at + 1 {
            continue;
        }
        let host = &b[at + 1..end];
        let mut labels = host.split(|&c| c == b'.');
        let tld = host.rsplit(|&c| c == b'.').next().unwrap_or_default();
        if memchr(b'.', host).is_some()
            && labels.all(|l| !l.is_empty())
            && tld.len() >= 2
            && tld.iter().all(u8::is_ascii_alphabetic)
        {
            found.push(Found {
                start,
                end,
                entity: Entity::Email,
            });
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&c| c == needle)
}

/// IBAN lengths by country (SWIFT's registry).
const IBAN_LENGTHS: &[(&[u8; 2], usize)] = &[
    (b"AD", 24),
    (b"AE", 23),
    (b"AL", 28),
    (b"AT", 20),
    (b"AZ", 28),
    (b"BA", 20),
    (b"BE", 16),
    (b"BG", 22),
    (b"BH", 22),
    (b"BR", 29),
    (b"BY", 28),
    (b"CH", 21),
    (b"CR", 22),
    (b"CY", 28),
    (b"CZ", 24),
    (b"DE", 22),
    (b"DK", 18),
    (b"DO", 28),
    (b"EE", 20),
    (b"EG", 29),
    (b"ES", 24),
    (b"FI", 18),
    (b"FO", 18),
    (b"FR", 27),
    (b"GB", 22),
    (b"GE", 22),
    (b"GI", 23),
    (b"GL", 18),
    (b"GR", 27),
    (b"GT", 28),
    (b"HR", 21),
    (b"HU", 28),
    (b"IE", 22),
    (b"IL", 23),
    (b"IQ", 23),
    (b"IS", 26),
    (b"IT", 27),
    (b"JO", 30),
    (b"KW", 30),
    (b"KZ", 20),
    (b"LB", 28),
    (b"LC", 32),
    (b"LI", 21),
    (b"LT", 20),
    (b"LU", 20),
    (b"LV", 21),
    (b"LY", 25),
    (b"MC", 27),
    (b"MD", 24),
    (b"ME", 22),
    (b"MK", 19),
    (b"MR", 27),
    (b"MT", 31),
    (b"MU", 30),
    (b"NL", 18),
    (b"NO", 15),
    (b"PK", 24),
    (b"PL", 28),
    (b"PS", 29),
    (b"PT", 25),
    (b"QA", 29),
    (b"RO", 24),
    (b"RS", 22),
    (b"SA", 24),
    (b"SC", 31),
    (b"SE", 24),
    (b"SI", 19),
    (b"SK", 24),
    (b"SM", 27),
    (b"ST", 25),
    (b"SV", 28),
    (b"TL", 23),
    (b"TN", 24),
    (b"TR", 26),
    (b"UA", 29),
    (b"VA", 22),
    (b"VG", 24),
    (b"XK", 20),
];

/// An IBAN at `at` (compact, or in groups of four): where it ends.
fn iban(b: &[u8], at: usize) -> Option<usize> {
    let head = b.get(at..at + 4)?;
    if !(head[0].is_ascii_uppercase()
        && head[1].is_ascii_uppercase()
        && head[2].is_ascii_digit()
        && head[3].is_ascii_digit())
    {
        return None;
    }
    let length = IBAN_LENGTHS.iter().find(|(c, _)| c[..] == head[..2])?.1;
    let mut compact = Vec::with_capacity(length);
    let mut i = at;
    while compact.len() < length {
        match b.get(i) {
            Some(&c) if c.is_ascii_alphanumeric() => {
                compact.push(c.to_ascii_uppercase());
                i += 1;
            }
            Some(b' ')
                if b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
                    && compact.len() % 4 == 0 =>
            {
                i += 1
            }
            _ => return None,
        }
    }
    if b.get(i).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    // ISO 7064 mod 97: the first four moved to the end, letters as 10–35.
    let mut rest = 0u32;
    for &c in compact[4..].iter().chain(&compact[..4]) {
        let value = if c.is_ascii_digit() {
            u32::from(c - b'0')
        } else {
            u32::from(c - b'A') + 10
        };
        rest = if value >= 10 {
            (rest * 100 + value) % 97
        } else {
            (rest * 10 + value) % 97
        };
    }
    (rest == 1).then_some(i)
}

/// A UK National Insurance number (`AB 12 34 56 C`, `AB123456C`).
fn nino(b: &[u8], at: usize) -> Option<usize> {
    let (p, q) = (*b.get(at)?, *b.get(at + 1)?);
    if !(p.is_ascii_uppercase() && q.is_ascii_uppercase())
        || b"DFIQUV".contains(&p)
        || b"DFIOQUV".contains(&q)
    {
        return None;
    }
    if [b"BG", b"GB", b"NK", b"KN", b"TN", b"NT", b"ZZ"]
        .iter()
        .any(|x| x[..] == [p, q])
    {
        return None;
    }
    let mut i = at + 2;
    let mut digits = 0;
    while digits < 6 {
        if b.get(i) == Some(&b' ') && digits % 2 == 0 {
            i += 1;
        }
        if !b.get(i)?.is_ascii_digit() {
            return None;
        }
        digits += 1;
        i += 1;
    }
    if b.get(i) == Some(&b' ') {
        i += 1;
    }
    if !matches!(b.get(i)?, b'A'..=b'D') || b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    Some(i + 1)
}

/// A Spanish DNI (`12345678Z`) or NIE (`X1234567L`), by its check letter.
fn dni(b: &[u8], at: usize) -> Option<usize> {
    const LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";
    let head = *b.get(at)?;
    let prefix = match head {
        b'X' => Some(0),
        b'Y' => Some(1),
        b'Z' => Some(2),
        _ => None,
    };
    let digits_at = at + usize::from(prefix.is_some());
    let count = if prefix.is_some() { 7 } else { 8 };
    let digits = b.get(digits_at..digits_at + count)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut i = digits_at + count;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let letter = *b.get(i)?;
    if b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let number = digits.iter().fold(prefix.unwrap_or(0) as u64, |n, &d| {
        n * 10 + u64::from(d - b'0')
    });
    (LETTERS[(number % 23) as usize] == letter).then_some(i + 1)
}

/// An IPv6 address at `at`.
fn ipv6(b: &[u8], at: usize) -> Option<usize> {
    let token = |c: u8| c.is_ascii_hexdigit() || c == b':' || c == b'.';
    if !(b[at].is_ascii_hexdigit() || b[at] == b':') {
        return None;
    }
    let mut end = at;
    while end < b.len() && token(b[end]) {
        end += 1;
    }
    while end > at && b[end - 1] == b'.' {
        end -= 1;
    }
    let text = std::str::from_utf8(&b[at..end]).ok()?;
    let colons = text.bytes().filter(|&c| c == b':').count();
    if colons < 2
        || b.get(end)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        return None;
    }
    // At least two groups with digits in them: not a `a::b` path.
    let groups = text.split(':').filter(|g| !g.is_empty()).count();
    (groups >= 3 && text.parse::<Ipv6Addr>().is_ok()).then_some(end)
}

/// A run of digits in groups, and what it is.
struct Number {
    end: usize,
    entity: Option<Entity>,
}

/// The number at `at`: its digit groups and the separators between them,
/// read as far as they go, then classified.
fn number(b: &[u8], at: usize) -> Option<Number> {
    let plus = b[at] == b'+';
    let mut i = at + usize::from(plus);
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut separators: Vec<&[u8]> = Vec::new();
    let mut parens = false;
    loop {
        // A separator: up to three of ` -./()`, at most one space.
        let sep_start = i;
        while i < b.len()
            && matches!(b[i], b' ' | b'-' | b'.' | b'/' | b'(' | b')')
            && i - sep_start < 3
        {
            i += 1;
        }
        let sep = &b[sep_start..i];
        let spaces = sep.iter().filter(|&&c| c == b' ').count();
        if spaces > 1
            || (!groups.is_empty() && sep.is_empty())
            || !b.get(i).is_some_and(u8::is_ascii_digit)
        {
            break;
        }
        parens |= sep.contains(&b'(');
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if !groups.is_empty() || !sep.is_empty() {
            separators.push(sep);
        }
        groups.push((start, i));
    }
    if groups.is_empty() {
        return None;
    }
    let mut end = groups.last()?.1;
    // A closing parenthesis after the last group is not part of it.
    let digits: usize = groups.iter().map(|(s, e)| e - s).sum();
    let lens: Vec<usize> = groups.iter().map(|(s, e)| e - s).collect();
    let word_after = b
        .get(end)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
    // An extension: `x123`, ` ext. 123`.
    let mut extension_end = None;
    if let Some(rest) = b.get(end..) {
        let skip = rest.iter().take_while(|&&c| c == b' ').count();
        let rest = &rest[skip..];
        let tag = if rest.starts_with(b"ext.") {
            4
        } else if rest.starts_with(b"ext") {
            3
        } else if rest.starts_with(b"x") {
            1
        } else {
            0
        };
        if tag > 0 {
            let after = &rest[tag..];
            let space = after.iter().take_while(|&&c| c == b' ').count();
            let n = after[space..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if (1..=6).contains(&n) && !after.get(space + n).is_some_and(u8::is_ascii_alphanumeric)
            {
                extension_end = Some(end + skip + tag + space + n);
            }
        }
    }
    // `2010-12-23 23:27:53`: a date and the time after it.
    if !plus
        && !parens
        && lens.len() > 3
        && separators[2] == b" "
        && is_date(&lens[..3], &separators[..2])
    {
        return Some(Number {
            end: groups[2].1,
            entity: None,
        });
    }
    // `7015 184 Arnott Heights`: numbers of a street address.
    let spaced = separators.iter().all(|s| *s == b" ");
    let then_capital =
        b.get(end) == Some(&b' ') && b.get(end + 1).is_some_and(u8::is_ascii_uppercase);
    let plain = |seps: &[&[u8]], allowed: &[u8]| {
        seps.iter().all(|s| s.len() == 1 && allowed.contains(&s[0]))
    };
    let same = separators.windows(2).all(|w| w[0] == w[1]);
    let entity = if word_after && extension_end.is_none() {
        None
    } else if !plus
        && !parens
        && lens.len() == 4
        && plain(&separators, b".")
        && lens.iter().all(|&l| l <= 3)
    {
        // Dotted quad: an IPv4 address when every part is an octet.
        let octets = groups.iter().all(|&(s, e)| {
            std::str::from_utf8(&b[s..e])
                .ok()
                .and_then(|t| t.parse::<u16>().ok())
                .is_some_and(|v| v <= 255)
        });
        let version = b.get(end) == Some(&b'.') && b.get(end + 1).is_some_and(u8::is_ascii_digit);
        (octets && !version).then_some(Entity::Ip)
    } else if !plus && !parens && is_date(&lens, &separators) {
        None
    } else if !plus && !parens && lens == [3, 2, 4] && same && plain(&separators, b"- .") {
        ssn(b, &groups).then_some(Entity::NationalId)
    } else if !plus
        && !parens
        && (13..=19).contains(&digits)
        && plain(&separators, b" -")
        && card_grouping(&lens)
        && card(b, &groups)
    {
        Some(Entity::Card)
    } else if !(spaced && then_capital && !plus && !parens)
        && phone(plus, parens, digits, &lens, &separators, b[groups[0].0])
    {
        if let Some(x) = extension_end {
            end = x;
        }
        Some(Entity::Phone)
    } else {
        None
    };
    Some(Number { end, entity })
}

/// `2024-01-31`, `31/01/2024`, `1.2.2024`: a date, not a phone number.
fn is_date(lens: &[usize], separators: &[&[u8]]) -> bool {
    lens.len() == 3
        && separators
            .iter()
            .all(|s| s.len() == 1 && matches!(s[0], b'-' | b'/' | b'.'))
        && separators[0] == separators[1]
        && (matches!(lens, [4, 1..=2, 1..=2]) || matches!(lens, [1..=2, 1..=2, 2 | 4]))
}

/// How card numbers are written: in one piece, in fours (the last group
/// shorter), or as Amex and Diners print them (4-6-5, 4-6-4).
fn card_grouping(lens: &[usize]) -> bool {
    match lens {
        [_] | [4, 6, 5] | [4, 6, 4] => true,
        [init @ .., last] => init.iter().all(|&l| l == 4) && (1..=4).contains(last),
        [] => false,
    }
}

/// A US Social Security number by the SSA's rules: no area 000, 666 or
/// 9xx, no group 00, no serial 0000.
fn ssn(b: &[u8], groups: &[(usize, usize)]) -> bool {
    let part = |i: usize| &b[groups[i].0..groups[i].1];
    let (area, group, serial) = (part(0), part(1), part(2));
    area != b"000" && area != b"666" && area[0] != b'9' && group != b"00" && serial != b"0000"
}

/// A payment card number: Luhn's check, and a first digit of a card
/// network (2 and 5 Mastercard, 3 Amex, Diners and JCB, 4 Visa, 6
/// Discover, UnionPay and Maestro; JCB's fifteen digits from 1800).
fn card(b: &[u8], groups: &[(usize, usize)]) -> bool {
    let digits: Vec<u32> = groups
        .iter()
        .flat_map(|&(s, e)| b[s..e].iter().map(|&d| u32::from(d - b'0')))
        .collect();
    let jcb_15 = digits.len() == 15 && digits[..4] == [1, 8, 0, 0];
    if !(2..=6).contains(&digits[0]) && !jcb_15 {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                if d * 2 > 9 { d * 2 - 9 } else { d * 2 }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether digit groups read as a phone number: 7 to 15 digits (E.164's
/// most); grouped, or one group of ten (a North American number, whose area
/// code does not start with 0 or 1: not a Unix time) or eleven starting
/// with 0 or 1 (a trunk or country prefix); two groups of eight digits or
/// more, or three and four; with a `+` any grouping. Groups of three after
/// one to three digits separated by dots are thousands, not a number to
/// call.
fn phone(
    plus: bool,
    parens: bool,
    digits: usize,
    lens: &[usize],
    separators: &[&[u8]],
    first: u8,
) -> bool {
    if !(7..=15).contains(&digits) {
        return false;
    }
    if separators.iter().any(|s| s.contains(&b'/')) {
        return false;
    }
    if plus || parens {
        return true;
    }
    match lens {
        [10] => first != b'0' && first != b'1',
        [11] => first == b'0' || first == b'1',
        [_] => false,
        // Two groups: a local number (`555 1234`), or eight digits and
        // more; not a postcode and its district (`6250-120`, `1234 567`).
        [3, 4] => true,
        [_, _] => digits >= 8,
        // `1.234.567`: thousands, not a number to call.
        [1..=3, rest @ ..]
            if rest.iter().all(|&l| l == 3) && separators.iter().all(|s| *s == b".") =>
        {
            false
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(String, &'static str)> {
        find(text)
            .into_iter()
            .map(|f| (text[f.start..f.end].to_owned(), f.entity.name()))
            .collect()
    }

    #[test]
    fn each_entity_is_found_in_its_usual_spellings() {
        let table: &[(&str, &str)] = &[
            (
                "mail ada.lovelace+work@example.co.uk today",
                "ada.lovelace+work@example.co.uk",
            ),
            ("call (555) 123-4567 now", "(555) 123-4567"),
            ("call +44 20 7946 0958", "+44 20 7946 0958"),
            ("or 555.123.4567x891.", "555.123.4567x891"),
            ("tel: 06-82237745", "06-82237745"),
            ("card 4111 1111 1111 1111 exp", "4111 1111 1111 1111"),
            ("card 2714821993518192", "2714821993518192"),
            (
                "iban GB82 WEST 1234 5698 7654 32.",
                "GB82 WEST 1234 5698 7654 32",
            ),
            ("iban DE89370400440532013000", "DE89370400440532013000"),
            ("ssn 570-08-5341", "570-08-5341"),
            ("NINO AB 12 34 56 C", "AB 12 34 56 C"),
            ("DNI 12345678Z", "12345678Z"),
            ("host 192.168.10.254 up", "192.168.10.254"),
            ("v6 2001:db8::8a2e:370:7334 up", "2001:db8::8a2e:370:7334"),
        ];
        for (text, value) in table {
            let got = kinds(text);
            assert!(got.iter().any(|(v, _)| v == value), "{text}: {got:?}");
        }
    }

    #[test]
    fn look_alikes_are_left_alone() {
        for text in [
            "version 1.2.3.4.5 and 10.0.0",
            "on 2024-01-31 at 12:30:45",
            "timestamp 1700000000",
            "id 4111111111111112",
            "ssn 000-12-3456 and 666-12-3456",
            "iban GB82WEST12345698765433",
            "total 1.234.567 units",
            "std::vector<int> a::b",
            "DNI 12345678A",
            "x@y",
            "order #12345",
        ] {
            assert_eq!(kinds(text), [], "{text}");
        }
    }

    /// Text made of the pieces the finders turn on (digits, separators,
    /// signs, letters, `@`, colons, multi-byte characters), in random
    /// order: finding never panics, and every finding lies on character
    /// boundaries, in order, without overlaps.
    #[test]
    fn no_mix_of_digits_separators_and_characters_breaks_it() {
        const PIECES: [&str; 30] = [
            "4111", "1111", "0958", "570", "-08-", "5341", "+44", " ", "-", ".", "(", ")", "/",
            "x", "ext.", "@", "ada", ".com", "GB82", "WEST", "DE89", ":", "::", "2001", "db8", "é",
            "😀", "\n", "AB", "Z",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..16 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(PIECES[(state % PIECES.len() as u64) as usize]);
            }
            let mut last = 0;
            for f in find(&text) {
                assert!(
                    f.start >= last && f.start < f.end && f.end <= text.len(),
                    "{text:?}"
                );
                assert!(
                    text.is_char_boundary(f.start) && text.is_char_boundary(f.end),
                    "{text:?}"
                );
                last = f.end;
            }
        }
    }
}
