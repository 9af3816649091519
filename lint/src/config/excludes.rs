//! The excludes of a run: whether a file's path, its directory's or an ancestor's matches an
//! exclude pattern, the directories' part decided once per directory of the run.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use globset::GlobSet;
use rayon::prelude::*;

use super::{absolute, absolute_dir, Config};

/// A directory of a run's files: where it is, and whether an exclude matches it or one of its
/// ancestors (relative to a base).
#[derive(Debug)]
pub(super) struct Directory {
    /// The directory as the run's paths spell it (`Path::parent` of a file's path).
    given: PathBuf,
    absolute: PathBuf,
    /// The directory relative to each exclude base it is in.
    relative: Vec<PathBuf>,
    excluded: bool,
}

impl Directory {
    /// Whether the file `name` in this directory is excluded: the directory (or an ancestor) is,
    /// or the file's own path, absolute or relative to a base, matches.
    fn holds_excluded(&self, set: &GlobSet, name: &OsStr) -> bool {
        self.excluded
            || set.is_match(self.absolute.join(name))
            || self
                .relative
                .iter()
                .any(|relative| set.is_match(relative.join(name)))
    }
}

impl Config {
    /// Decides the excludes of the directories of `files` once, for [`Config::is_excluded`]: a
    /// file's own path is still matched with the whole set (absolute and relative to each base),
    /// its directory's and each ancestor's once per directory of the run, and the file's absolute
    /// and relative paths are its directory's joined with its name. On the MCP-heavy corpus the
    /// ancestors made seven matches per file, and making each path absolute as much again.
    pub fn decide_directories<'p>(&mut self, files: impl Iterator<Item = &'p Path>) {
        let Some(set) = &self.excludes else {
            return;
        };
        let mut given: Vec<&Path> = files.filter_map(Path::parent).collect();
        given.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        given.dedup();
        self.directories = given
            .into_par_iter()
            .map(|given| self.directory(set, given))
            .collect();
    }

    /// `given` (a directory as a run's paths spell it) with its excludes decided.
    fn directory(&self, set: &GlobSet, given: &Path) -> Directory {
        let absolute = absolute_dir(&self.cwd, given);
        let relative = self
            .exclude_bases
            .iter()
            .filter_map(|base| absolute.strip_prefix(base).ok().map(Path::to_path_buf))
            .collect();
        Directory {
            given: given.to_path_buf(),
            excluded: self.directory_matches(set, &absolute),
            absolute,
            relative,
        }
    }

    /// Whether a path is excluded by a pattern (matched against the path relative to the
    /// configuration file's directory, and against each of its ancestors). A file of the run
    /// uses its directory's decision ([`Config::decide_directories`]); any other path (a path
    /// named on the command line) has its directory decided here.
    pub fn is_excluded(&self, path: &Path) -> bool {
        let Some(set) = &self.excludes else {
            return false;
        };
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            // A root or a path ending in `..`: no file name to join to a directory.
            let absolute = absolute(&self.cwd, path);
            return set.is_match(&absolute) || self.directory_matches(set, &absolute);
        };
        let decided = self
            .directories
            .binary_search_by(|directory| directory.given.as_os_str().cmp(parent.as_os_str()));
        match decided {
            Ok(found) => self.directories[found].holds_excluded(set, name),
            Err(_) => self.directory(set, parent).holds_excluded(set, name),
        }
    }

    /// Whether an exclude matches `directory` or one of its ancestors, relative to a base.
    fn directory_matches(&self, set: &GlobSet, directory: &Path) -> bool {
        self.exclude_bases.iter().any(|base| {
            directory.strip_prefix(base).is_ok_and(|relative| {
                relative
                    .ancestors()
                    .filter(|ancestor| !ancestor.as_os_str().is_empty())
                    .any(|ancestor| set.is_match(ancestor))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::{Config, Layer};

    #[test]
    fn directories_decided_once_answer_as_each_file_would() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-lint.toml");
        let excludes = "exclude = [\"gen/**\", \"**/*.generated.rs\", \"vendor\", \"a/b\"]\n";
        std::fs::write(&path, excludes).unwrap();
        let files: Vec<PathBuf> = [
            "src/lib.rs",
            "gen/a/b.rs",
            "gen/x.rs",
            "src/x.generated.rs",
            "vendor/lib.rs",
            "vendor/deep/er/lib.rs",
            "a/b/c.rs",
            "a/c.rs",
            "a/bc/d.rs",
            "mcp-lint.toml",
        ]
        .iter()
        .map(|file| dir.path().join(file))
        .collect();
        let layer = || Layer::from_config_file(&path).unwrap();
        let each = Config::new(Some(layer()), vec![], vec![]);
        let mut decided = Config::new(Some(layer()), vec![], vec![]);
        decided.decide_directories(files.iter().map(PathBuf::as_path));
        let answers: Vec<bool> = files.iter().map(|file| each.is_excluded(file)).collect();
        assert_eq!(
            answers,
            [false, true, true, true, true, true, true, false, false, false]
        );
        for (file, answer) in files.iter().zip(answers) {
            assert_eq!(decided.is_excluded(file), answer, "{}", file.display());
        }
    }
}
