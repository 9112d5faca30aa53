//! calltape's configuration file: the rules a replay compares by, and the HTTP proxy's settings
//! that the test-runner integrations read.
//!
//! The file is `calltape.toml`, or the `[tool.calltape]` table of a `pyproject.toml`; [`discover`]
//! finds it from a folder upward to the repository's root. The pytest and Vitest integrations find
//! theirs the same way (Vitest looks at `package.json`'s `"calltape"` field where this looks at a
//! `pyproject.toml`) and read its `cassette_dir` and `[upstreams]`. Its shape, every key optional:
//!
//! ```toml
//! cassette_dir = "tests/cassettes"    # the test-runner integrations' cassette folder
//!
//! [upstreams]                         # the APIs the integrations point the SDKs at
//! openai = { url = "https://api.openai.com", env = "OPENAI_BASE_URL", path = "v1", key = "OPENAI_API_KEY" }
//!
//! [replay]
//! ignore = ["**.requestId"]           # dot-path globs skipped in every answer
//! mask = ["uuid", 'req-[0-9]+']       # presets or regular expressions, in every answer
//! fill = { cardToken = "env:CARD" }   # where a redacted input's value comes from
//!
//! [[replay.call]]                     # rules for some calls only
//! name = "get_file_info"              # a glob on a tool's or prompt's name, or a resource's URI
//! mask = ["timestamp"]
//! ignore = ["structuredContent.etag"]
//! ```
//!
//! Reading is strict: an unknown key, a value of the wrong type, a mask or glob that does not
//! compile, or a fill written as a value is an error naming the file, the line, the key and what
//! is allowed. Every setting keeps its [`Origin`], so a caller can add its own (from flags) and
//! [`Config::describe`] says where each came from.
//!
//! ```
//! use calltape_replay::config::{Config, Origin, Sourced};
//!
//! let text = r#"
//! [replay]
//! mask = ["timestamp"]
//!
//! [[replay.call]]
//! name = "get_file_info"
//! ignore = ["structuredContent"]
//! "#;
//! let mut config = Config::parse(text, "calltape.toml")?;
//! config.replay.ignore.push(Sourced::new("**.requestId", Origin::given("--ignore")));
//! let rules = config.replay.call_rules()?;
//! assert_eq!(rules.rules()[0].name, "get_file_info");
//! assert_eq!(
//!     config.describe(),
//!     "config file: calltape.toml
//! --ignore         replay.ignore  **.requestId
//! calltape.toml:3  replay.mask    timestamp (preset)
//! calltape.toml:5  replay.call    get_file_info: ignore structuredContent
//! "
//! );
//! # Ok::<(), calltape_replay::Error>(())
//! ```

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use crate::error::{Error, ErrorKind};
use crate::mcp::{
    CallRule, CallRules, CallRulesBuilder, Comparer, ComparerBuilder, FillSource, FillSpec, Fills,
    Mask, PRESETS,
};

/// The configuration file's own name.
pub const FILE_NAME: &str = "calltape.toml";

/// The Python project file whose `[tool.calltape]` table is a configuration too.
pub const PYPROJECT: &str = "pyproject.toml";

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A line of a configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
    /// The caller, by its own label (such as the flag that gave it).
    Given(String),
}

impl Origin {
    /// A setting the caller gave, by its label.
    pub fn given(label: impl Into<String>) -> Self {
        Self::Given(label.into())
    }

    /// The origin as [`Config::describe`] shows it: the file's name and the line, or the label.
    fn short(&self) -> String {
        match self {
            Self::File { path, line } => {
                let name = path.file_name().unwrap_or(path.as_os_str());
                format!("{}:{line}", name.to_string_lossy())
            }
            Self::Given(label) => label.clone(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Given(label) => f.write_str(label),
        }
    }
}

/// A setting and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sourced<T> {
    /// The setting.
    pub value: T,
    /// Where it came from.
    pub origin: Origin,
}

impl<T> Sourced<T> {
    /// `value`, from `origin`.
    pub fn new(value: impl Into<T>, origin: Origin) -> Self {
        Self {
            value: value.into(),
            origin,
        }
    }
}

/// An API the test-runner integrations point the SDKs at, as `[upstreams]` holds it: a URL alone,
/// or a table of `url`, `env` (the SDK's base-URL variable), `path` (what follows the host) and
/// `key` (the SDK's API-key variable).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamSetting {
    /// The upstream's name.
    pub name: String,
    /// The real API's URL.
    pub url: Option<String>,
    /// The environment variable an SDK reads its base URL from.
    pub env: Option<String>,
    /// What follows the host in that base URL.
    pub path: Option<String>,
    /// The environment variable an SDK reads its API key from.
    pub key: Option<String>,
}

/// The rules a replay compares by, each with its origin.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReplayConfig {
    /// Dot-path globs skipped in every answer.
    pub ignore: Vec<Sourced<String>>,
    /// Masks (presets or regular expressions) applied to every call's outcomes.
    pub mask: Vec<Sourced<String>>,
    /// Where each redacted input's value comes from; a later fill of the same name wins.
    pub fill: Vec<Sourced<FillSpec>>,
    /// Ignore globs and masks for some calls only.
    pub calls: Vec<Sourced<CallRule>>,
}

/// A configuration: what a file said, and what the caller added.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {
    /// The file it was read from; `None` when there was none.
    pub file: Option<PathBuf>,
    /// `[replay]`: the rules a replay compares by.
    pub replay: ReplayConfig,
    /// `cassette_dir`: the test-runner integrations' cassette folder.
    pub cassette_dir: Option<Sourced<String>>,
    /// `[upstreams]`: the APIs the test-runner integrations point the SDKs at.
    pub upstreams: Vec<Sourced<UpstreamSetting>>,
}

/// Finds the configuration that holds for `start` (an absolute folder): in `start` and then in each
/// folder above it, a `calltape.toml`, else a `pyproject.toml` with a `[tool.calltape]` table. The
/// search stops after the repository's root (the folder holding `.git`), or at the file system's
/// root outside a repository. Fails when a `pyproject.toml` on the way cannot be read or parsed.
pub fn discover(start: &Path) -> Result<Option<PathBuf>, Error> {
    for dir in start.ancestors() {
        let file = dir.join(FILE_NAME);
        if file.is_file() {
            return Ok(Some(file));
        }
        let pyproject = dir.join(PYPROJECT);
        if pyproject.is_file() {
            let text = read_text(&pyproject)?;
            let doc = parse_toml(&text, &pyproject)?;
            if calltape_table(doc.get_ref()).is_some() {
                return Ok(Some(pyproject));
            }
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    Ok(None)
}

impl Config {
    /// The configuration that holds for `start`: the file [`discover`] finds, read, or an empty
    /// configuration when there is none.
    pub fn load(start: &Path) -> Result<Self, Error> {
        match discover(start)? {
            Some(path) => Self::read(&path),
            None => Ok(Self::default()),
        }
    }

    /// Reads the configuration file at `path`: the `[tool.calltape]` table of a file named
    /// `pyproject.toml` (empty when it has none), the whole of any other file.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = read_text(path)?;
        Self::parse(&text, path)
    }

    /// Parses `text` as the file at `path` holds it ([`read`](Self::read) says how the name counts).
    /// Relative `file:` paths of fills are taken from the file's folder.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let doc = parse_toml(text, path)?;
        let reader = Reader { path, text };
        let mut config = Self {
            file: Some(path.to_path_buf()),
            ..Self::default()
        };
        let root = doc.get_ref();
        if path.file_name().is_some_and(|n| n == PYPROJECT) {
            if let Some(table) = calltape_table(root) {
                let table = reader.table(table, "tool.calltape", "a table")?;
                reader.top(table, "tool.calltape.", &mut config)?;
            }
        } else {
            reader.top(root, "", &mut config)?;
        }
        Ok(config)
    }

    /// What is in force and where each setting came from, a line each:
    /// `calltape.toml:4  replay.mask  timestamp (preset)`.
    pub fn describe(&self) -> String {
        let mut rows: Vec<(String, &str, String)> = Vec::new();
        let r = &self.replay;
        for glob in &r.ignore {
            rows.push((glob.origin.short(), "replay.ignore", glob.value.clone()));
        }
        for mask in &r.mask {
            rows.push((mask.origin.short(), "replay.mask", show_mask(&mask.value)));
        }
        for fill in &r.fill {
            let source = match &fill.value.source {
                FillSource::Env(var) => format!("env:{var}"),
                FillSource::File(path) => format!("file:{}", path.display()),
            };
            let shown = format!("{} from {source}", fill.value.name);
            rows.push((fill.origin.short(), "replay.fill", shown));
        }
        for call in &r.calls {
            let rule = &call.value;
            for glob in &rule.ignore {
                let shown = format!("{}: ignore {glob}", rule.name);
                rows.push((call.origin.short(), "replay.call", shown));
            }
            for mask in &rule.mask {
                let shown = format!("{}: mask {}", rule.name, show_mask(mask));
                rows.push((call.origin.short(), "replay.call", shown));
            }
        }
        if let Some(dir) = &self.cassette_dir {
            rows.push((dir.origin.short(), "cassette_dir", dir.value.clone()));
        }
        for upstream in &self.upstreams {
            let u = &upstream.value;
            let fields = [
                ("url", &u.url),
                ("env", &u.env),
                ("path", &u.path),
                ("key", &u.key),
            ];
            let parts: Vec<String> = fields
                .into_iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
                .collect();
            let shown = format!("{}: {}", u.name, parts.join(", "));
            rows.push((upstream.origin.short(), "upstreams", shown));
        }
        let mut out = match &self.file {
            Some(path) => format!("config file: {}\n", path.display()),
            None => "config file: none\n".to_owned(),
        };
        if rows.is_empty() {
            out.push_str("no rules: every answer is compared whole\n");
            return out;
        }
        let source_width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        let key_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        for (source, key, value) in rows {
            let _ = writeln!(out, "{source:source_width$}  {key:key_width$}  {value}");
        }
        out
    }
}

impl ReplayConfig {
    /// A comparer builder with every ignore glob; each is checked first, so that an error says
    /// where the glob came from.
    pub fn comparer(&self) -> Result<ComparerBuilder, Error> {
        check_each(&self.ignore, "replay.ignore", |g| check_ignore(g))?;
        Ok(Comparer::builder().ignore(self.ignore.iter().map(|g| &g.value)))
    }

    /// Every mask, compiled into one; each is compiled alone first, so that an error says where
    /// the mask came from.
    pub fn mask(&self) -> Result<Mask, Error> {
        check_each(&self.mask, "replay.mask", |m| check_mask(m))?;
        Mask::new(self.mask.iter().map(|m| m.value.as_str()))
    }

    /// The rules for some calls, compiled; an error says where the rule came from.
    pub fn call_rules(&self) -> Result<CallRules, Error> {
        check_each(&self.calls, "replay.call", check_call)?;
        let rules = self.calls.iter().map(|c| c.value.clone());
        rules
            .fold(CallRules::builder(), CallRulesBuilder::rule)
            .build()
    }

    /// Every fill's value, read from its environment variable or file; a fill that a later one of
    /// the same name replaces is not read. An error says where the fill came from.
    pub fn fills(&self) -> Result<Fills, Error> {
        let mut specs: Vec<&Sourced<FillSpec>> = Vec::new();
        for fill in &self.fill {
            specs.retain(|s| s.value.name != fill.value.name);
            specs.push(fill);
        }
        for spec in &specs {
            Fills::resolve([&spec.value]).map_err(|e| at(&spec.origin, "replay.fill", e))?;
        }
        Fills::resolve(specs.iter().map(|s| &s.value))
    }
}

/// Checks each setting alone with `check`, so that an error says where the failing one came from
/// (its file, line and `key`, or the caller's label).
fn check_each<T>(
    settings: &[Sourced<T>],
    key: &str,
    check: impl Fn(&T) -> Result<(), Error>,
) -> Result<(), Error> {
    for setting in settings {
        check(&setting.value).map_err(|e| at(&setting.origin, key, e))?;
    }
    Ok(())
}

fn check_ignore(glob: &str) -> Result<(), Error> {
    Comparer::builder().ignore([glob]).build().map(drop)
}

fn check_mask(mask: &str) -> Result<(), Error> {
    Mask::new([mask]).map(drop)
}

fn check_call(rule: &CallRule) -> Result<(), Error> {
    CallRules::builder().rule(rule.clone()).build().map(drop)
}

/// `error`, said after where the setting `key` came from.
fn at(origin: &Origin, key: &str, error: Error) -> Error {
    let at = match origin {
        Origin::File { .. } => format!("{origin}: {key}"),
        Origin::Given(label) => label.clone(),
    };
    ErrorKind::Setting {
        at,
        source: Box::new(error),
    }
    .into()
}

/// A mask as [`Config::describe`] shows it: a preset's name is marked as one.
fn show_mask(mask: &str) -> String {
    if PRESETS.iter().any(|(name, _)| *name == mask) {
        format!("{mask} (preset)")
    } else {
        mask.to_owned()
    }
}

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| {
        ErrorKind::Io {
            path: path.to_path_buf(),
            source,
        }
        .into()
    })
}

fn parse_toml<'t>(text: &'t str, path: &Path) -> Result<toml::Spanned<DeTable<'t>>, Error> {
    DeTable::parse(text).map_err(|e| {
        let start = e.span().map_or(0, |s| s.start);
        ErrorKind::ConfigSyntax {
            path: path.to_path_buf(),
            line: line_of(text, start),
            reason: e.message().trim_end().to_owned(),
        }
        .into()
    })
}

/// `[tool.calltape]` of a parsed `pyproject.toml`, when it has one.
fn calltape_table<'d, 't>(root: &'d DeTable<'t>) -> Option<&'d toml::Spanned<DeValue<'t>>> {
    root.get("tool")?.get_ref().as_table()?.get("calltape")
}

/// The line (from 1) of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A value's type with its article, as an error says it: `an integer`, `a table`.
fn a(value: &DeValue<'_>) -> String {
    let kind = value.type_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

/// What an upstream's name may be, as the test-runner integrations check it.
fn is_upstream_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A parsed value with its place in the file.
type Item<'t> = toml::Spanned<DeValue<'t>>;

/// Reads one parsed file into a [`Config`], every error naming the file, the line and the key.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    fn origin(&self, span: Range<usize>) -> Origin {
        Origin::File {
            path: self.path.to_path_buf(),
            line: line_of(self.text, span.start),
        }
    }

    fn error(&self, span: Range<usize>, key: &str, problem: impl Into<String>) -> Error {
        ErrorKind::ConfigFile {
            path: self.path.to_path_buf(),
            line: line_of(self.text, span.start),
            key: key.to_owned(),
            problem: problem.into(),
        }
        .into()
    }

    fn table<'v, 't>(
        &self,
        value: &'v Item<'t>,
        key: &str,
        example: &str,
    ) -> Result<&'v DeTable<'t>, Error> {
        value.get_ref().as_table().ok_or_else(|| {
            let found = a(value.get_ref());
            self.error(value.span(), key, format!("is {found}; write {example}"))
        })
    }

    fn string(&self, value: &Item<'_>, key: &str, example: &str) -> Result<String, Error> {
        match value.get_ref().as_str() {
            Some(text) => Ok(text.to_owned()),
            None => {
                let found = a(value.get_ref());
                Err(self.error(value.span(), key, format!("is {found}; write {example}")))
            }
        }
    }

    /// An array of strings, each with its origin.
    fn strings(
        &self,
        value: &Item<'_>,
        key: &str,
        example: &str,
    ) -> Result<Vec<Sourced<String>>, Error> {
        let Some(items) = value.get_ref().as_array() else {
            let found = a(value.get_ref());
            return Err(self.error(value.span(), key, format!("is {found}; write {example}")));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(text) = item.get_ref().as_str() else {
                let found = a(item.get_ref());
                let problem = format!("item {} is {found}; write {example}", i + 1);
                return Err(self.error(item.span(), key, problem));
            };
            out.push(Sourced::new(text, self.origin(item.span())));
        }
        Ok(out)
    }

    /// Refuses a key of `table` not in `allowed`; `what` names the table in the message.
    fn known_keys(
        &self,
        table: &DeTable<'_>,
        prefix: &str,
        allowed: &[&str],
        what: &str,
    ) -> Result<(), Error> {
        for key in table.keys() {
            if !allowed.contains(&key.get_ref().as_ref()) {
                let list = match allowed.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} and {last}", rest.join(", "))
                    }
                    _ => allowed.join(""),
                };
                let problem = format!("unknown key; {what} takes {list}");
                return Err(self.error(key.span(), &format!("{prefix}{}", key.get_ref()), problem));
            }
        }
        Ok(())
    }

    /// The file's top level (or `[tool.calltape]`, `prefix` being `tool.calltape.`).
    fn top(&self, table: &DeTable<'_>, prefix: &str, config: &mut Config) -> Result<(), Error> {
        let what = if prefix.is_empty() {
            "the file".to_owned()
        } else {
            format!("[{}]", prefix.trim_end_matches('.'))
        };
        self.known_keys(
            table,
            prefix,
            &["cassette_dir", "upstreams", "replay"],
            &what,
        )?;
        if let Some(dir) = table.get("cassette_dir") {
            let key = format!("{prefix}cassette_dir");
            let value = self.string(
                dir,
                &key,
                "a folder, e.g. cassette_dir = \"tests/cassettes\"",
            )?;
            config.cassette_dir = Some(Sourced::new(value, self.origin(dir.span())));
        }
        if let Some(upstreams) = table.get("upstreams") {
            self.upstreams(upstreams, &format!("{prefix}upstreams"), config)?;
        }
        if let Some(replay) = table.get("replay") {
            self.replay(replay, &format!("{prefix}replay"), config)?;
        }
        Ok(())
    }

    fn upstreams(&self, value: &Item<'_>, key: &str, config: &mut Config) -> Result<(), Error> {
        let example = "a table of NAME = { url = \"https://api.example.com\", env = \"NAME_BASE_URL\", path = \"v1\" }";
        let table = self.table(value, key, example)?;
        for (name, spec) in table.iter() {
            let name_key = format!("{key}.{}", name.get_ref());
            if !is_upstream_name(name.get_ref()) {
                let problem = "an upstream's name is letters, digits, '_' and '-', starting with a letter or digit";
                return Err(self.error(name.span(), &name_key, problem));
            }
            let mut setting = UpstreamSetting {
                name: name.get_ref().to_string(),
                url: None,
                env: None,
                path: None,
                key: None,
            };
            match spec.get_ref() {
                DeValue::String(url) => setting.url = Some(url.to_string()),
                DeValue::Table(fields) => {
                    self.known_keys(
                        fields,
                        &format!("{name_key}."),
                        &["url", "env", "path", "key"],
                        "an upstream",
                    )?;
                    for (field, slot) in [
                        ("url", &mut setting.url),
                        ("env", &mut setting.env),
                        ("path", &mut setting.path),
                        ("key", &mut setting.key),
                    ] {
                        if let Some(v) = fields.get(field) {
                            *slot =
                                Some(self.string(v, &format!("{name_key}.{field}"), "a string")?);
                        }
                    }
                }
                other => {
                    let problem = format!("is {}; write a URL or {example}", a(other));
                    return Err(self.error(spec.span(), &name_key, problem));
                }
            }
            config
                .upstreams
                .push(Sourced::new(setting, self.origin(name.span())));
        }
        Ok(())
    }

    fn replay(&self, value: &Item<'_>, key: &str, config: &mut Config) -> Result<(), Error> {
        let table = self.table(value, key, "a table: [replay]")?;
        let what = format!("[{key}]");
        self.known_keys(
            table,
            &format!("{key}."),
            &["ignore", "mask", "fill", "call"],
            &what,
        )?;
        let r = &mut config.replay;
        type Check = fn(&str) -> Result<(), Error>;
        let lists: [(&str, &str, Check, &mut Vec<Sourced<String>>); 2] = [
            (
                "ignore",
                "an array of dot-path globs, e.g. ignore = [\"**.requestId\"]",
                check_ignore,
                &mut r.ignore,
            ),
            (
                "mask",
                "an array of presets or regular expressions, e.g. mask = [\"timestamp\"]",
                check_mask,
                &mut r.mask,
            ),
        ];
        for (name, example, check, out) in lists {
            if let Some(value) = table.get(name) {
                let key = format!("{key}.{name}");
                let items = self.strings(value, &key, example)?;
                check_each(&items, &key, |item| check(item))?;
                out.extend(items);
            }
        }
        if let Some(fill) = table.get("fill") {
            self.fill(fill, &format!("{key}.fill"), &mut r.fill)?;
        }
        if let Some(calls) = table.get("call") {
            self.calls(calls, &format!("{key}.call"), &mut r.calls)?;
        }
        Ok(())
    }

    /// `fill = { NAME = "env:VAR" | "file:PATH" }`: where each value comes from, never a value.
    fn fill(
        &self,
        value: &Item<'_>,
        key: &str,
        out: &mut Vec<Sourced<FillSpec>>,
    ) -> Result<(), Error> {
        // Said with NAME, not a field's name: `cardToken = "…"` in a message reads as a credential
        // to the redactor that every stderr line passes.
        let example =
            "a table of NAME = \"env:VAR\" or \"file:PATH\", e.g. fill = { NAME = \"env:VAR\" }";
        let table = self.table(value, key, example)?;
        for (name, source) in table.iter() {
            let name_key = format!("{key}.{}", name.get_ref());
            // The message never repeats what was written: it may be the very value that must not
            // be in a file that is committed.
            let refused = || {
                let problem = "a fill names where its value comes from, \"env:VAR\" or \"file:PATH\", \
                               never the value itself; e.g. fill = { NAME = \"env:VAR\" }";
                self.error(source.span(), &name_key, problem)
            };
            let Some(text) = source.get_ref().as_str() else {
                return Err(refused());
            };
            let mut spec: FillSpec = format!("{}={text}", name.get_ref())
                .parse()
                .map_err(|_| refused())?;
            if let FillSource::File(path) = &mut spec.source
                && path.is_relative()
                && let Some(dir) = self.path.parent()
            {
                *path = dir.join(&*path);
            }
            out.push(Sourced::new(spec, self.origin(name.span())));
        }
        Ok(())
    }

    /// `[[replay.call]]`: `name` and at least one of `ignore` and `mask`.
    fn calls(
        &self,
        value: &Item<'_>,
        key: &str,
        out: &mut Vec<Sourced<CallRule>>,
    ) -> Result<(), Error> {
        let example = "[[replay.call]] tables, each with name and ignore or mask";
        let Some(items) = value.get_ref().as_array() else {
            let found = a(value.get_ref());
            return Err(self.error(value.span(), key, format!("is {found}; write {example}")));
        };
        for item in items.iter() {
            let table = self.table(item, key, example)?;
            self.known_keys(
                table,
                &format!("{key}."),
                &["name", "ignore", "mask"],
                "[[replay.call]]",
            )?;
            let Some(name) = table.get("name") else {
                let problem = "a [[replay.call]] needs name, a glob on a tool's or prompt's name or a \
                               resource's URI, e.g. name = \"get_file_info\"";
                return Err(self.error(item.span(), key, problem));
            };
            let name = self.string(
                name,
                &format!("{key}.name"),
                "a glob, e.g. name = \"get_file_info\"",
            )?;
            let mut rule = CallRule::new(name);
            if let Some(ignore) = table.get("ignore") {
                let globs = self.strings(
                    ignore,
                    &format!("{key}.ignore"),
                    "an array of dot-path globs",
                )?;
                rule = rule.ignore(globs.into_iter().map(|g| g.value));
            }
            if let Some(mask) = table.get("mask") {
                let masks = self.strings(
                    mask,
                    &format!("{key}.mask"),
                    "an array of presets or regular expressions",
                )?;
                rule = rule.mask(masks.into_iter().map(|m| m.value));
            }
            if rule.ignore.is_empty() && rule.mask.is_empty() {
                let problem =
                    "a [[replay.call]] with neither ignore nor mask does nothing; give one";
                return Err(self.error(item.span(), key, problem));
            }
            check_call(&rule).map_err(|e| at(&self.origin(item.span()), key, e))?;
            out.push(Sourced::new(rule, self.origin(item.span())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
