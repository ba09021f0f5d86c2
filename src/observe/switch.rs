//! The value syntax of the observability variables (`GOMP_NVPTX_INFO=1`, ...): a
//! boolean flag or a file name. Bad values are refused with the message the caller
//! prints as a `libgomp:` warning, after which the variable counts as unset.

/// Parses a flag: `1`/`0`, `yes`/`no`, `on`/`off`, `true`/`false` (any case, spaces
/// around allowed). `Err` holds the warning for the variable `name`.
pub fn parse_flag(name: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "on" | "true" => Ok(true),
        "0" | "no" | "off" | "false" => Ok(false),
        _ => Err(format!(
            "Invalid value '{v}' for {name} (expected 1 or 0); using the default (off)"
        )),
    }
}

/// Parses a file name: anything but an empty (or all-blank) value.
pub fn parse_path(name: &str, v: &str) -> Result<std::path::PathBuf, String> {
    if v.trim().is_empty() {
        return Err(format!(
            "Invalid value '{v}' for {name} (expected a file name); using the default (off)"
        ));
    }
    Ok(v.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        for on in ["1", " yes", "ON", "True "] {
            assert_eq!(parse_flag("X", on), Ok(true), "{on}");
        }
        for off in ["0", "no", "Off", "false"] {
            assert_eq!(parse_flag("X", off), Ok(false), "{off}");
        }
        for bad in ["", "2", "y", "\u{1F4A5}"] {
            let e = parse_flag("GOMP_X", bad).unwrap_err();
            assert!(e.contains("GOMP_X") && e.contains("default (off)"), "{e}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("X", "/tmp/t.json").unwrap().to_str(),
            Some("/tmp/t.json")
        );
        assert!(parse_path("X", "  ").is_err());
    }
}
