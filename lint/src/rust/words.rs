//! Word-level heuristics shared by the security rules: secret-looking names and unsafe URLs.

/// Words that name a secret on their own.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "credentials",
    "pin",
    "otp",
    "cvv",
    "cvc",
    "iban",
    "ssn",
    "apikey",
];

/// Pairs of consecutive words that name a secret together.
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("card", "number"),
    ("credit", "card"),
];

/// Splits `snake_case`, `kebab-case`, `camelCase` and spaced text into lowercase words.
pub fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        current.extend(ch.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Whether a field or property name asks for a secret (`api_key`, `password`, `cardNumber`, ...).
pub fn is_secret_name(name: &str) -> bool {
    let words = words(name);
    words
        .iter()
        .any(|word| SECRET_WORDS.contains(&word.as_str()))
        || words
            .windows(2)
            .any(|pair| SECRET_PAIRS.contains(&(pair[0].as_str(), pair[1].as_str())))
}

/// Whether some name in `text` (a whole item's source) may be one [`is_secret_name`] accepts: one
/// of its words appears in it, or both words of one of its pairs, in any case. A byte-level
/// superset, for deciding what to parse (`items.rs`).
pub fn may_name_secret(text: &[u8]) -> bool {
    use std::sync::OnceLock;
    static WORDS: OnceLock<(aho_corasick::AhoCorasick, Vec<&str>)> = OnceLock::new();
    let (automaton, words) = WORDS.get_or_init(|| {
        let mut words: Vec<&str> = SECRET_WORDS.to_vec();
        for (first, second) in SECRET_PAIRS {
            words.extend([*first, *second]);
        }
        words.sort_unstable();
        words.dedup();
        // A contiguous NFA: the default DFA's build costs more than it saves on a run.
        let automaton = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&words)
            .expect("valid secret words");
        (automaton, words)
    });
    let mut seen = vec![false; words.len()];
    for found in automaton.find_overlapping_iter(text) {
        let word = words[found.pattern().as_usize()];
        if SECRET_WORDS.contains(&word) {
            return true;
        }
        seen[found.pattern().as_usize()] = true;
    }
    let has = |word: &str| {
        words
            .iter()
            .position(|w| *w == word)
            .is_some_and(|i| seen[i])
    };
    SECRET_PAIRS
        .iter()
        .any(|(first, second)| has(first) && has(second))
}

/// Query keys that must never travel in an elicitation URL.
const SENSITIVE_QUERY_KEYS: &[&str] = &[
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "api_key",
    "apikey",
    "password",
    "secret",
    "client_secret",
    "session",
    "session_id",
    "sessionid",
    "code",
];

/// What is wrong with a URL-mode elicitation URL, if anything. `{..}` format placeholders are
/// treated as opaque host/path text, so `format!` templates are checked too.
pub fn url_problem(url: &str) -> Option<String> {
    let template = replace_placeholders(url.trim());
    let parsed = url::Url::parse(&template).ok()?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some("the URL carries credentials in its user-info part".into());
    }
    if let Some((key, _)) = parsed
        .query_pairs()
        .find(|(key, _)| SENSITIVE_QUERY_KEYS.contains(&key.to_ascii_lowercase().as_str()))
    {
        return Some(format!("the URL carries `{key}` in its query string"));
    }
    if parsed.scheme() == "http" && !is_loopback(&parsed) {
        return Some("the URL uses plain `http://` to a non-loopback host".into());
    }
    None
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => {
            domain.eq_ignore_ascii_case("localhost") || domain.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}

fn replace_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for ch in text.chars() {
        match ch {
            '{' => {
                if depth == 0 {
                    out.push('x');
                }
                depth += 1;
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// A name that protects what it is given (the state-sealing rules of every front-end): `seal`,
/// `seal_json`, `sign_state`, `hmac_sha256`, `encrypt`, `mint`, `mac`, `aead`, ...
pub fn is_sealing_name(name: &str) -> bool {
    words(name).iter().any(|word| {
        ["seal", "sign", "hmac", "encrypt", "mint"]
            .iter()
            .any(|prefix| word.starts_with(prefix))
            || word == "mac"
            || word == "aead"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn may_name_secret_passes_every_secret_name() {
        for name in [
            "password",
            "userPassword",
            "api_key",
            "apiKey",
            "API_KEY",
            "privateKey",
            "card_number",
            "creditCard",
            "otp",
            "pin_code",
            "secret",
            "IBAN",
        ] {
            assert!(is_secret_name(name), "{name}");
            assert!(may_name_secret(name.as_bytes()), "{name}");
        }
        for name in ["name", "retries", "api_url", "cardholder_name"] {
            assert!(
                !may_name_secret(format!("struct S {{ {name}: String }}").as_bytes()),
                "{name}"
            );
        }
    }

    #[test]
    fn words_split_every_case_style() {
        assert_eq!(words("apiKey"), ["api", "key"]);
        assert_eq!(words("API_KEY"), ["api", "key"]);
        assert_eq!(words("github-token"), ["github", "token"]);
        assert_eq!(words("Enter your password"), ["enter", "your", "password"]);
    }

    #[test]
    fn secret_names() {
        for secret in [
            "password",
            "api_key",
            "apiKey",
            "access_token",
            "client_secret",
            "cardNumber",
            "cvv",
            "pin",
            "ssh_private_key",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in [
            "name",
            "email",
            "username",
            "keyboard_layout",
            "color",
            "spinner",
            "pinned",
        ] {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }

    #[test]
    fn url_problems() {
        assert!(url_problem("http://example.com/connect").is_some());
        assert!(url_problem("https://user:pw@example.com/").is_some());
        assert!(url_problem("https://example.com/cb?access_token=abc").is_some());
        assert!(url_problem("https://example.com/cb?Code=abc").is_some());
        assert!(url_problem("http://{host}/oauth").is_some());
        assert_eq!(url_problem("http://localhost:8080/cb"), None);
        assert_eq!(url_problem("http://127.0.0.1/cb"), None);
        assert_eq!(url_problem("http://[::1]:9/cb"), None);
        assert_eq!(url_problem("https://example.com/connect?state={id}"), None);
        assert_eq!(url_problem("not a url"), None);
    }
}
