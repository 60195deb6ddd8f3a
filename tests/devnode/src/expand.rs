//! `$(VAR)` expansion with Kubernetes semantics (`third_party/forked/golang/expansion`):
//! `$(NAME)` becomes the value of `NAME` when it is defined, `$$` is an escaped `$`, and anything
//! else (an unknown variable, an unterminated `$(`, a lone `$`) is left as it is.

/// Expands `$(NAME)` references in `input` with `lookup`, as the kubelet does for `command`,
/// `args`, env values and `subPathExpr`.
pub fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if after.is_empty() {
            // A trailing `$` is copied as it is.
            out.push('$');
            rest = after;
        } else if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(end) => {
                    let name = &tail[..end];
                    match lookup(name) {
                        Some(value) => out.push_str(&value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn references_expand_like_the_kubelet() {
        let vars: HashMap<&str, &str> = [("A", "alpha"), ("B", "b$(A)"), ("EMPTY", "")].into();
        let lookup = |n: &str| vars.get(n).map(|v| v.to_string());
        let cases = [
            ("plain", "plain"),
            ("$(A)", "alpha"),
            ("x$(A)y$(A)z", "xalphayalphaz"),
            // Values are not expanded again.
            ("$(B)", "b$(A)"),
            ("$(EMPTY)|", "|"),
            // Escapes.
            ("$$(A)", "$(A)"),
            ("$$$(A)", "$alpha"),
            ("$$", "$"),
            // Unknown variables and malformed references stay as they are.
            ("$(UNKNOWN)", "$(UNKNOWN)"),
            ("$()", "$()"),
            ("$(A", "$(A"),
            ("$(", "$("),
            ("$", "$"),
            ("a$", "a$"),
            ("$A", "$A"),
            ("$é$(A)", "$éalpha"),
            ("--flag=$(A)/x", "--flag=alpha/x"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, lookup), want, "input {input:?}");
        }
    }
}
