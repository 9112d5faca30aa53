// The settings of a `calltape.toml`: its top-level `cassette_dir` and its `[upstreams]`, read without a
// TOML library (the helper depends on nothing but calltape). The part of TOML they are written in is
// read, strictly: one-line strings, inline tables, dotted keys and `[upstreams.NAME]` tables. The
// `[replay]` tables are `calltape replay`'s, which checks them: here they are only skipped over.

const UPSTREAM_FIELDS = ["url", "env", "path", "key"];
const EXAMPLE = '[upstreams] NAME = { url = "https://api.example.com", env = "NAME_BASE_URL", path = "v1" }';

/**
 * `{ cassetteDir, upstreams }` of the calltape.toml `text` read from `file` (`cassetteDir` only when the
 * file gives it). Throws an Error that names the file, the line and what to write instead.
 */
export function parseCalltapeToml(text, file) {
  const out = { upstreams: {} };
  // Where key/value lines go: the top level, `upstreams`, `upstreams.NAME`, or `replay` (skipped).
  let table = [];
  // What a skipped value left open: a multi-line string's quotes, and how deep in arrays it is.
  const open = { quotes: null, depth: 0 };
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = new Line(lines[i], file, i + 1);
    if (open.quotes !== null || open.depth > 0) {
      line.skip(open);
      continue;
    }
    line.space();
    if (line.done()) continue;
    if (line.peek() === "[") {
      table = line.header();
      if (table[0] !== "replay" && table[0] !== "upstreams") {
        throw line.error(`[${table.join(".")}]`, "unknown table; the file takes cassette_dir, [upstreams] and [replay]");
      }
      if (table[0] === "upstreams" && table.length > 2) {
        throw line.error(`[${table.join(".")}]`, `an upstream is a table of ${UPSTREAM_FIELDS.join(", ")}; write ${EXAMPLE}`);
      }
      if (table[0] === "upstreams" && table.length === 2) {
        if (table[1] in out.upstreams) throw line.error(`upstreams.${table[1]}`, "is given twice; give it once");
        upstream(out, table[1], line, `upstreams.${table[1]}`);
      }
      continue;
    }
    if (table[0] === "replay") {
      line.skip(open);
      continue;
    }
    const start = line.at;
    const keys = [...table, ...line.keyPath()];
    line.space();
    line.expect("=", keys.join("."), "write KEY = VALUE");
    line.space();
    const name = keys.join(".");
    if (keys[0] === "replay") {
      line.at = start;
      line.skip(open);
    } else if (name === "cassette_dir") {
      if ("cassetteDir" in out) throw line.error(name, "is given twice; give it once");
      out.cassetteDir = line.string(name, 'a folder, e.g. cassette_dir = "tests/cassettes"');
    } else if (keys[0] === "upstreams" && keys.length === 2) {
      if (keys[1] in out.upstreams) throw line.error(name, "is given twice; give it once");
      const spec = line.peek() === "{" ? line.inlineTable(name) : { url: line.string(name, `a URL or ${EXAMPLE}`) };
      Object.assign(upstream(out, keys[1], line, name), spec);
    } else if (keys[0] === "upstreams" && keys.length === 3) {
      const fields = upstream(out, keys[1], line, name);
      if (keys[2] in fields) throw line.error(name, "is given twice; give it once");
      fields[keys[2]] = line.string(name, "a string");
    } else if (name === "upstreams") {
      throw line.error(name, `write the upstreams one a line, under [upstreams]: ${EXAMPLE}`);
    } else {
      throw line.error(name, "unknown key; the file takes cassette_dir, [upstreams] and [replay]");
    }
    line.end(name);
    if (keys[0] === "upstreams") checkFields(out.upstreams[keys[1]], line, name);
  }
  if (open.quotes !== null || open.depth > 0) {
    throw new Error(`calltape: ${file}: ends inside ${open.quotes !== null ? "a string" : "an array"}; close it`);
  }
  return out;
}

/** The fields given so far of upstream `name`, created on first use. */
function upstream(out, name, line, key) {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(name)) {
    throw line.error(key, "an upstream's name is letters, digits, '_' and '-', starting with a letter or digit");
  }
  out.upstreams[name] ??= {};
  return out.upstreams[name];
}

function checkFields(spec, line, key) {
  for (const field of Object.keys(spec)) {
    if (!UPSTREAM_FIELDS.includes(field)) {
      throw line.error(key, `unknown key ${field}; an upstream takes ${UPSTREAM_FIELDS.join(", ")}`);
    }
  }
}

/** One line of the file, read from left to right. */
class Line {
  constructor(text, file, number) {
    this.text = text;
    this.file = file;
    this.number = number;
    this.at = 0;
  }

  error(key, problem) {
    return new Error(`calltape: ${this.file}:${this.number}: ${key}: ${problem}`);
  }

  peek() {
    return this.text[this.at];
  }

  space() {
    while (this.peek() === " " || this.peek() === "\t") this.at++;
  }

  /** At the end of the line, or at a comment. */
  done() {
    return this.at >= this.text.length || this.peek() === "#";
  }

  end(key) {
    this.space();
    if (!this.done()) throw this.error(key, `unexpected ${JSON.stringify(this.text.slice(this.at))} after the value; one value a line`);
  }

  expect(char, key, hint) {
    if (this.peek() !== char) throw this.error(key, `expected '${char}'; ${hint}`);
    this.at++;
  }

  /** `[a.b]` or `[[a.b]]`: the keys it names. */
  header() {
    const double = this.text.startsWith("[[", this.at);
    this.at += double ? 2 : 1;
    this.space();
    const keys = this.keyPath();
    this.space();
    const close = double ? "]]" : "]";
    if (!this.text.startsWith(close, this.at)) throw this.error(keys.join("."), `expected '${close}' to close the table's name`);
    this.at += close.length;
    this.end(`[${keys.join(".")}]`);
    return keys;
  }

  /** A dotted key: bare (letters, digits, '_', '-') or quoted parts. */
  keyPath() {
    const keys = [];
    for (;;) {
      this.space();
      const c = this.peek();
      if (c === '"' || c === "'") {
        keys.push(this.quoted(keys.join(".") || "key"));
      } else {
        const bare = /^[A-Za-z0-9_-]+/.exec(this.text.slice(this.at));
        if (!bare) throw this.error(keys.join(".") || "key", `expected a key at ${JSON.stringify(this.text.slice(this.at))}`);
        keys.push(bare[0]);
        this.at += bare[0].length;
      }
      this.space();
      if (this.peek() !== ".") return keys;
      this.at++;
    }
  }

  /** A one-line string value; `what` says what to write instead of anything else. */
  string(key, what) {
    const c = this.peek();
    if ((c === '"' || c === "'") && !this.text.startsWith(c.repeat(3), this.at)) return this.quoted(key);
    throw this.error(key, `is not a one-line string; write ${what}`);
  }

  quoted(key) {
    const quote = this.text[this.at++];
    let value = "";
    while (this.at < this.text.length) {
      const c = this.text[this.at++];
      if (c === quote) return value;
      if (c !== "\\" || quote === "'") {
        value += c;
        continue;
      }
      const e = this.text[this.at++];
      const simple = { b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", '"': '"', "\\": "\\" }[e];
      if (simple !== undefined) {
        value += simple;
      } else if (e === "u" || e === "U") {
        const digits = this.text.slice(this.at, this.at + (e === "u" ? 4 : 8));
        const code = /^[0-9A-Fa-f]+$/.test(digits) && digits.length === (e === "u" ? 4 : 8) ? parseInt(digits, 16) : NaN;
        if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) throw this.error(key, `\\${e}${digits} is not a character`);
        value += String.fromCodePoint(code);
        this.at += digits.length;
      } else {
        throw this.error(key, `\\${e ?? ""} is not an escape of a TOML string`);
      }
    }
    throw this.error(key, "the string is not closed on its line");
  }

  /** `{ url = "…", env = "…" }`: string values only. */
  inlineTable(key) {
    this.at++;
    const out = {};
    this.space();
    if (this.peek() === "}") {
      this.at++;
      return out;
    }
    for (;;) {
      const field = this.keyPath().join(".");
      this.space();
      this.expect("=", `${key}.${field}`, "write FIELD = \"VALUE\"");
      this.space();
      if (field in out) throw this.error(`${key}.${field}`, "is given twice; give it once");
      out[field] = this.string(`${key}.${field}`, "a string");
      this.space();
      if (this.peek() === "}") {
        this.at++;
        return out;
      }
      this.expect(",", key, `separate the fields with ',' and close with '}', as in ${EXAMPLE}`);
      this.space();
    }
  }

  /**
   * Skips the rest of a line of `[replay]`, keeping in `open` a multi-line string or an array that
   * goes on to the next line, so that no line inside them is taken for a table's header.
   */
  skip(open) {
    const t = this.text;
    while (this.at < t.length) {
      if (open.quotes !== null) {
        const close = t.indexOf(open.quotes, this.at);
        if (close < 0) return;
        this.at = close + 3;
        while (t[this.at] === open.quotes[0]) this.at++;
        open.quotes = null;
        continue;
      }
      const c = t[this.at];
      if (c === "#") return;
      if (t.startsWith('"""', this.at) || t.startsWith("'''", this.at)) {
        open.quotes = t.slice(this.at, this.at + 3);
        this.at += 3;
      } else if (c === '"' || c === "'") {
        this.quoted("replay");
      } else {
        if (c === "[") open.depth++;
        if (c === "]") open.depth = Math.max(0, open.depth - 1);
        this.at++;
      }
    }
  }
}
