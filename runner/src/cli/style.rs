//! Terminal colours: only when the stream is a terminal and `NO_COLOR` is unset or empty
//! (<https://no-color.org>).

use std::io::IsTerminal;

/// Whether to colour output, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colours when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stdout() -> Style {
        Style {
            color: !no_color() && std::io::stdout().is_terminal(),
        }
    }

    /// Colours when stderr is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stderr() -> Style {
        Style {
            color: !no_color() && std::io::stderr().is_terminal(),
        }
    }

    /// A style that never colours.
    #[cfg(test)]
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Errors.
    pub fn red(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Warnings.
    pub fn yellow(self, text: &str) -> String {
        self.paint("1;33", text)
    }

    /// Success.
    pub fn green(self, text: &str) -> String {
        self.paint("1;32", text)
    }

    /// Headings (files, resources).
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Field paths.
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
}

/// `NO_COLOR` set to anything but the empty string.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_no_escape_codes() {
        assert_eq!(Style::plain().red("x"), "x");
    }

    #[test]
    fn coloured_style_wraps_text_in_ansi_codes() {
        assert_eq!(Style { color: true }.red("x"), "\x1b[1;31mx\x1b[0m");
    }
}
