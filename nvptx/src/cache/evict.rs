//! Which entries go when the cache is over its size bound: the least recently used
//! (oldest modification time; a hit refreshes it), until the rest fits. Pure code.

/// One entry file as the directory listing shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time (any monotone unit; nanoseconds since the epoch in practice).
    pub mtime: i128,
}

/// The names to delete, oldest first, so that the remaining entries take at most
/// `limit` bytes. Ties go by name, so that processes evicting at once agree.
pub fn victims(mut items: Vec<Item>, limit: u64) -> Vec<String> {
    let mut total: u64 = items.iter().map(|i| i.bytes).sum();
    if total <= limit {
        return Vec::new();
    }
    items.sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.name.cmp(&b.name)));
    let mut out = Vec::new();
    for i in items {
        if total <= limit {
            break;
        }
        total -= i.bytes;
        out.push(i.name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, bytes: u64, mtime: i128) -> Item {
        Item {
            name: name.into(),
            bytes,
            mtime,
        }
    }

    #[test]
    fn oldest_go_first_until_it_fits() {
        let items = vec![
            item("new", 40, 30),
            item("old", 40, 10),
            item("mid", 40, 20),
        ];
        assert!(victims(items.clone(), 120).is_empty());
        assert_eq!(victims(items.clone(), 119), ["old"]);
        assert_eq!(victims(items.clone(), 80), ["old"]);
        assert_eq!(victims(items.clone(), 79), ["old", "mid"]);
        assert_eq!(victims(items.clone(), 0), ["old", "mid", "new"]);
        // Same age: by name.
        assert_eq!(victims(vec![item("b", 10, 5), item("a", 10, 5)], 10), ["a"]);
        assert!(victims(Vec::new(), 0).is_empty());
    }
}
