//! A Chrome trace-event recorder and its JSON writer (the format Perfetto and
//! chrome://tracing open): complete events (`"ph":"X"`, a start `ts` and a `dur`, in
//! microseconds) on tracks named by `(pid, tid)`, plus metadata events naming the
//! processes and threads. Events are kept in memory and written at once
//! ([`Trace::write`]), sorted by track and start, so the file is whole whenever it
//! exists. Thread-safe; a product creates one only when tracing is on.

use gomp_plugin::sync::Lock;
use once_cell::sync::Lazy;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The trace's time origin: the first use of the clock in the process.
static ORIGIN: Lazy<Instant> = Lazy::new(Instant::now);

/// Microseconds since the trace's origin.
pub fn now_us() -> f64 {
    ORIGIN.elapsed().as_nanos() as f64 / 1e3
}

/// The calling thread's track number among host threads (1, 2, ... in order of first
/// use).
pub fn host_tid() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    thread_local! {
        static TID: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TID.with(|t| *t)
}

/// One complete event.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// What ran.
    pub name: String,
    /// Category (`"kernel"`, `"copy"`, `"entry"`, ...).
    pub cat: &'static str,
    /// Start, µs since the origin.
    pub ts: f64,
    /// Duration, µs.
    pub dur: f64,
    /// Process track.
    pub pid: u32,
    /// Thread track within the process.
    pub tid: u32,
    /// Extra key/value pairs shown with the event.
    pub args: Vec<(&'static str, String)>,
}

#[derive(Default)]
struct Inner {
    spans: Vec<Span>,
    processes: BTreeMap<u32, String>,
    threads: BTreeMap<(u32, u32), String>,
}

/// The recorder.
#[derive(Default)]
pub struct Trace {
    inner: Mutex<Inner>,
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A finite number as JSON (microseconds with nanosecond resolution).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{:.3}", x.max(0.0))
    } else {
        "0".into()
    }
}

impl Trace {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.locked())
    }

    /// Records a complete event.
    pub fn span(&self, s: Span) {
        self.with(|i| i.spans.push(s))
    }

    /// Names process track `pid` (shown as the group's title).
    pub fn name_process(&self, pid: u32, name: &str) {
        self.with(|i| {
            i.processes.entry(pid).or_insert_with(|| name.to_string());
        })
    }

    /// Names thread track `(pid, tid)`.
    pub fn name_thread(&self, pid: u32, tid: u32, name: &str) {
        self.with(|i| {
            i.threads
                .entry((pid, tid))
                .or_insert_with(|| name.to_string());
        })
    }

    /// Spans recorded so far.
    pub fn len(&self) -> usize {
        self.with(|i| i.spans.len())
    }

    /// True before the first span.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole trace as JSON (`{"traceEvents":[...]}`): metadata events first, then
    /// the spans sorted by track and start time.
    pub fn to_json(&self) -> String {
        self.with(|i| {
            let mut spans: Vec<&Span> = i.spans.iter().collect();
            spans.sort_by(|a, b| {
                (a.pid, a.tid)
                    .cmp(&(b.pid, b.tid))
                    .then(a.ts.total_cmp(&b.ts))
                    .then(b.dur.total_cmp(&a.dur))
            });
            let mut ev: Vec<String> = Vec::with_capacity(spans.len() + 8);
            for (pid, name) in &i.processes {
                ev.push(format!(
                    "{{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
                    json_string(name)
                ));
            }
            for ((pid, tid), name) in &i.threads {
                ev.push(format!(
                    "{{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                    json_string(name)
                ));
            }
            for s in spans {
                let args: Vec<String> = s
                    .args
                    .iter()
                    .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
                    .collect();
                ev.push(format!(
                    "{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{{}}}}}",
                    json_string(&s.name),
                    json_string(s.cat),
                    num(s.ts),
                    num(s.dur),
                    s.pid,
                    s.tid,
                    args.join(",")
                ));
            }
            format!(
                "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n",
                ev.join(",\n")
            )
        })
    }

    /// Writes the trace to `path` (through a temporary file beside it, renamed over
    /// it, so a reader never sees half a file).
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        let json = self.to_json();
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A JSON value, as much as the schema checks need.
    #[derive(Debug, PartialEq)]
    pub enum Json {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Json>),
        Obj(Vec<(String, Json)>),
    }

    impl Json {
        pub fn get(&self, k: &str) -> Option<&Json> {
            match self {
                Json::Obj(m) => m.iter().find(|(n, _)| n == k).map(|(_, v)| v),
                _ => None,
            }
        }
        fn num(&self) -> Option<f64> {
            match self {
                Json::Num(x) => Some(*x),
                _ => None,
            }
        }
        fn str(&self) -> Option<&str> {
            match self {
                Json::Str(s) => Some(s),
                _ => None,
            }
        }
    }

    /// A strict minimal JSON parser (RFC 8259 grammar; whole input).
    pub fn parse(s: &str) -> Result<Json, String> {
        let b = s.as_bytes();
        let mut i = 0;
        let v = value(b, &mut i)?;
        ws(b, &mut i);
        if i != b.len() {
            return Err(format!("trailing data at {i}"));
        }
        Ok(v)
    }

    fn ws(b: &[u8], i: &mut usize) {
        while *i < b.len() && matches!(b[*i], b' ' | b'\n' | b'\r' | b'\t') {
            *i += 1;
        }
    }

    fn lit(b: &[u8], i: &mut usize, w: &str, v: Json) -> Result<Json, String> {
        if b[*i..].starts_with(w.as_bytes()) {
            *i += w.len();
            Ok(v)
        } else {
            Err(format!("bad literal at {i}"))
        }
    }

    fn value(b: &[u8], i: &mut usize) -> Result<Json, String> {
        ws(b, i);
        match b.get(*i) {
            Some(b'{') => {
                *i += 1;
                let mut m = Vec::new();
                ws(b, i);
                if b.get(*i) == Some(&b'}') {
                    *i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    ws(b, i);
                    let Json::Str(k) = string(b, i)? else {
                        unreachable!()
                    };
                    ws(b, i);
                    if b.get(*i) != Some(&b':') {
                        return Err(format!("expected : at {i}"));
                    }
                    *i += 1;
                    m.push((k, value(b, i)?));
                    ws(b, i);
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(format!("expected , or }} at {i}")),
                    }
                }
            }
            Some(b'[') => {
                *i += 1;
                let mut a = Vec::new();
                ws(b, i);
                if b.get(*i) == Some(&b']') {
                    *i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(value(b, i)?);
                    ws(b, i);
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b']') => {
                            *i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(format!("expected , or ] at {i}")),
                    }
                }
            }
            Some(b'"') => string(b, i),
            Some(b't') => lit(b, i, "true", Json::Bool(true)),
            Some(b'f') => lit(b, i, "false", Json::Bool(false)),
            Some(b'n') => lit(b, i, "null", Json::Null),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                let start = *i;
                *i += 1;
                while *i < b.len()
                    && matches!(b[*i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    *i += 1;
                }
                let t = std::str::from_utf8(&b[start..*i]).map_err(|e| e.to_string())?;
                if t.len() > 1
                    && (t.starts_with('0') && !t.starts_with("0.")
                        || t.starts_with("-0") && !t.starts_with("-0.") && t != "-0")
                {
                    return Err(format!("leading zero at {start}"));
                }
                t.parse()
                    .map(Json::Num)
                    .map_err(|_| format!("bad number {t}"))
            }
            _ => Err(format!("unexpected input at {i}")),
        }
    }

    fn string(b: &[u8], i: &mut usize) -> Result<Json, String> {
        if b.get(*i) != Some(&b'"') {
            return Err(format!("expected string at {i}"));
        }
        *i += 1;
        let mut out = String::new();
        loop {
            let c = *b.get(*i).ok_or("unterminated string")?;
            *i += 1;
            match c {
                b'"' => return Ok(Json::Str(out)),
                b'\\' => {
                    let e = *b.get(*i).ok_or("bad escape")?;
                    *i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'u' => {
                            let h = std::str::from_utf8(b.get(*i..*i + 4).ok_or("bad \\u")?)
                                .map_err(|e| e.to_string())?;
                            let n = u32::from_str_radix(h, 16).map_err(|e| e.to_string())?;
                            out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                            *i += 4;
                        }
                        _ => return Err(format!("bad escape at {i}")),
                    }
                }
                c if c < 0x20 => return Err(format!("control character in string at {i}")),
                _ => {
                    // Copy a whole UTF-8 sequence.
                    let start = *i - 1;
                    let len = match c {
                        0xf0.. => 4,
                        0xe0.. => 3,
                        0xc0.. => 2,
                        _ => 1,
                    };
                    *i = start + len;
                    out.push_str(std::str::from_utf8(&b[start..*i]).map_err(|e| e.to_string())?);
                }
            }
        }
    }

    /// The schema checks of a Chrome trace: every event has name/ph/ts/pid/tid,
    /// complete events have a non-negative `dur`, and on every track the complete
    /// events' start times never decrease. Returns the complete events' (cat, name).
    pub fn check_schema(json: &str) -> Result<Vec<(String, String)>, String> {
        let v = parse(json)?;
        let Some(Json::Arr(events)) = v.get("traceEvents") else {
            return Err("no traceEvents array".into());
        };
        let mut last: BTreeMap<(u64, u64), f64> = BTreeMap::new();
        let mut out = Vec::new();
        for (n, e) in events.iter().enumerate() {
            let text = |k: &str| {
                e.get(k)
                    .and_then(Json::str)
                    .ok_or(format!("event {n}: {k}"))
            };
            let num = |k: &str| {
                e.get(k)
                    .and_then(Json::num)
                    .ok_or(format!("event {n}: {k}"))
            };
            let (name, ph) = (text("name")?, text("ph")?);
            let (ts, pid, tid) = (num("ts")?, num("pid")?, num("tid")?);
            match ph {
                "X" => {
                    let dur = num("dur")?;
                    if dur < 0.0 || ts < 0.0 {
                        return Err(format!("event {n}: negative time"));
                    }
                    let prev = last.entry((pid as u64, tid as u64)).or_insert(ts);
                    if ts < *prev {
                        return Err(format!("event {n}: ts {ts} before {prev} on its track"));
                    }
                    *prev = ts;
                    let cat = e.get("cat").and_then(Json::str).unwrap_or("").to_string();
                    out.push((cat, name.to_string()));
                }
                "M" => {}
                other => return Err(format!("event {n}: unexpected ph {other}")),
            }
        }
        Ok(out)
    }

    fn span(name: &str, pid: u32, tid: u32, ts: f64, dur: f64) -> Span {
        Span {
            name: name.into(),
            cat: "kernel",
            ts,
            dur,
            pid,
            tid,
            args: vec![("geometry", "132x256".into())],
        }
    }

    #[test]
    fn parser() {
        assert_eq!(
            parse(" [1, -2.5e3, \"a\\u0041\\n\", true, null, {}] ").unwrap(),
            Json::Arr(vec![
                Json::Num(1.0),
                Json::Num(-2500.0),
                Json::Str("aA\n".into()),
                Json::Bool(true),
                Json::Null,
                Json::Obj(vec![])
            ])
        );
        for bad in [
            "",
            "[1,]",
            "{\"a\" 1}",
            "[01]",
            "\"a",
            "[1] x",
            "{'a':1}",
            "[\"\u{1}\"]",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn writer_output_passes_the_schema() {
        let t = Trace::default();
        assert!(t.is_empty());
        t.name_process(0, "host");
        t.name_process(1, "GPU 0: NVIDIA H100");
        t.name_thread(1, 1, "stream 1");
        t.name_thread(0, 1, "host thread 1");
        // Recorded out of order, on three tracks; odd characters in a name.
        t.span(span("main._omp_fn.1", 1, 1, 300.0, 50.0));
        t.span(span("main._omp_fn.0", 1, 1, 100.0, 150.0));
        t.span(span("k \"quoted\"\\\n\t\u{1}é", 1, 2, 120.0, 10.0));
        t.span(Span {
            cat: "entry",
            ..span("run", 0, 1, 90.0, 300.0)
        });
        t.span(Span {
            cat: "entry",
            ..span("load_image", 0, 1, 0.25, 45_000.0)
        });
        assert_eq!(t.len(), 5);
        let json = t.to_json();
        let got = check_schema(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(got.len(), 5);
        assert!(got.contains(&("kernel".into(), "k \"quoted\"\\\n\t\u{1}é".into())));
        assert!(got.contains(&("entry".into(), "load_image".into())));
        // Sorted per track: fn.0 before fn.1.
        assert!(json.find("main._omp_fn.0").unwrap() < json.find("main._omp_fn.1").unwrap());
        // Metadata names the tracks.
        let v = parse(&json).unwrap();
        let Some(Json::Arr(ev)) = v.get("traceEvents") else {
            panic!()
        };
        let meta: Vec<_> = ev
            .iter()
            .filter(|e| e.get("ph") == Some(&Json::Str("M".into())))
            .collect();
        assert_eq!(meta.len(), 4);
        let dur = ev
            .iter()
            .find(|e| e.get("name") == Some(&Json::Str("load_image".into())))
            .and_then(|e| e.get("dur"))
            .unwrap();
        assert_eq!(dur, &Json::Num(45_000.0));
        eprintln!("{json}");
    }

    #[test]
    fn schema_checks_catch_mistakes() {
        let ok = r#"{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]}"#;
        assert!(check_schema(ok).is_ok());
        for bad in [
            r#"{"traceEvents":[{"name":"a","ph":"X","ts":1,"pid":1,"tid":1}]}"#,
            r#"{"traceEvents":[{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1}]}"#,
            r#"{"traceEvents":[{"name":"a","ph":"X","ts":5,"dur":1,"pid":1,"tid":1},{"name":"b","ph":"X","ts":4,"dur":1,"pid":1,"tid":1}]}"#,
            r#"{"events":[]}"#,
        ] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn empty_trace_and_file() {
        let t = Trace::default();
        assert_eq!(check_schema(&t.to_json()), Ok(vec![]));
        let dir = std::env::temp_dir().join(format!("gomp-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.json");
        t.span(span("k", 1, 1, 1.0, 1.0));
        t.write(&p).unwrap();
        let back = std::fs::read_to_string(&p).unwrap();
        assert_eq!(check_schema(&back).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(now_us() >= 0.0);
        assert_eq!(host_tid(), host_tid());
    }
}
