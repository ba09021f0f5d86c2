//! A Chrome trace-event recorder and its JSON writer (the format Perfetto and
//! chrome://tracing open): complete events (`"ph":"X"`, a start `ts` and a `dur`, in
//! microseconds) on tracks named by `(pid, tid)`, plus metadata events naming the
//! processes and threads. Events are kept in memory and written at once
//! ([`Trace::write`]), sorted by track and start, so the file is whole whenever it
//! exists. Thread-safe; a product creates one only when tracing is on.
//!
//! The writer is these few lines rather than serde_json, which would add 68 KB (5 %) to
//! the stripped plugin for a file written only under `GOMP_NVPTX_TRACE`
//! (docs/development.md, Dependencies); the tests read every file it writes back with
//! serde_json.

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
    use serde_json::Value;

    /// The schema checks of a Chrome trace: every event has name/ph/ts/pid/tid,
    /// complete events have a non-negative `dur`, and on every track the complete
    /// events' start times never decrease. Returns the complete events' (cat, name).
    pub fn check_schema(json: &str) -> Result<Vec<(String, String)>, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let Some(Value::Array(events)) = v.get("traceEvents") else {
            return Err("no traceEvents array".into());
        };
        let mut last: BTreeMap<(u64, u64), f64> = BTreeMap::new();
        let mut out = Vec::new();
        for (n, e) in events.iter().enumerate() {
            let text = |k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .ok_or(format!("event {n}: {k}"))
            };
            let num = |k: &str| {
                e.get(k)
                    .and_then(Value::as_f64)
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
                    let cat = e
                        .get("cat")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
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
        let v: Value = serde_json::from_str(&json).unwrap();
        let Some(Value::Array(ev)) = v.get("traceEvents") else {
            panic!()
        };
        let meta: Vec<_> = ev.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(meta.len(), 4);
        assert!(meta.iter().any(|e| e["name"] == "process_name"
            && e["pid"] == 1
            && e["args"]["name"] == "GPU 0: NVIDIA H100"));
        let load = ev.iter().find(|e| e["name"] == "load_image").unwrap();
        assert_eq!(load["dur"].as_f64(), Some(45_000.0));
        assert_eq!(load["ts"].as_f64(), Some(0.25));
        assert_eq!(load["args"]["geometry"], "132x256");
        // Times are rounded to the nanosecond; negative or non-finite ones are 0.
        assert_eq!(num(1.23456789), "1.235");
        assert_eq!(num(-1.0), "0.000");
        assert_eq!(num(f64::NAN), "0");
        // One event a line, as before (a reader can grep the file), in an object whose
        // start and end tests/device/profile_trace.c checks.
        assert_eq!(json.lines().count(), 2 + 9);
        assert!(json.starts_with("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"));
        assert!(json.ends_with("\n]}\n"));
        assert!(
            json.contains("\"name\":\"main._omp_fn.0\""),
            "compact: {json}"
        );
        eprintln!("{json}");
    }

    #[test]
    fn every_character_survives_the_writer() {
        // Each character 0..=0x7f, some beyond, and the ones JSON escapes, in a name, a
        // track name and an argument: read back by serde_json, they are the same.
        let mut all: String = (0u8..=0x7f).map(char::from).collect();
        all.push_str("é€\u{2028}\u{10ffff}\"\\/");
        let t = Trace::default();
        t.name_thread(1, 1, &all);
        t.span(Span {
            name: all.clone(),
            args: vec![("k", all.clone())],
            ..span("x", 1, 1, 1.0, 1.0)
        });
        let v: Value = serde_json::from_str(&t.to_json()).expect("valid JSON");
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev[0]["args"]["name"], all.as_str());
        assert_eq!(ev[1]["name"], all.as_str());
        assert_eq!(ev[1]["args"]["k"], all.as_str());
        assert_eq!(json_string("a\u{1}\"\\"), r#""a\u0001\"\\""#);
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
