//! The reverse-offload wait of GCC's device runtime, made cheaper before the JIT link.
//!
//! GCC's nvptx `GOMP_target_ext` (the device side of `target device(ancestor: 1)`, spec
//! §6.4), as its default (sm_52) build of libgomp has it, waits for the host's answer
//! with an acquire load in a loop, which GCC emits as a weak load followed by
//! `membar.sys` in every round:
//!
//! ```text
//! $L23:
//! ld.global.u64 %r62,[__gomp_rev_offload_var];
//! ld.u64 %r34,[%r62];
//! membar.sys;
//! setp.ne.u64 %r63,%r34,0;
//! @%r63 bra $L23;
//! ```
//!
//! A system-scope fence per round makes each round slow, so the device sees the host's
//! answer late (bench/cuda_floor.c: `revoff_gcc` against `revoff_gcc_vspin`). When the
//! program uses reverse offload ([`rewrite`] is only asked then), the PTX object that
//! defines `GOMP_target_ext` is rewritten so that the loop loads with `ld.volatile`
//! (seen by the device as soon as the host's store reaches memory; valid PTX for every
//! target) and no fence, and one `membar.sys` follows the loop: the acquire ordering the
//! per-round fences gave, paid once. Nothing else changes; an object whose code does not
//! have this exact shape (sm_70 builds use `ld.acquire.sys`, which needs no rewrite) is
//! left as it is. `GOMP_NVPTX_TUNE=revspin=0` keeps GCC's code.
//!
//! In the scoped form ([`Form::AcqRel`]) the device also lets `revdelay` (default 300 ns,
//! in clock cycles here) pass between the flag and its first poll
//! ([`first_poll_delay`]): the wait polls one bus read at a time, and a host that needs
//! some work before answering misses the first read and waits a whole read for the next
//! one (H100, 1-GPU host: 4.3 µs a round trip without the delay, 3.3 with 300 ns, 3.4 with 500; 2-GPU host: 4.9, 4.1, 4.4).
//!
//! The rewritten object differs from the original, so the linked-image cache keys it
//! apart (the key covers every byte of PTX). Pure code.

/// The comment GCC writes before the function's definition.
const DEF: &str = "// BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n";
/// The start of the next function's (or variable's) comment: the end of the body.
const NEXT: &str = "\n// BEGIN ";

/// Whether `line` is no instruction: a `.loc` directive (GCC's line information) or a
/// comment (GCC's `// #APP` markers around inline assembly).
fn is_loc(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with(".loc") || t.starts_with("//")
}

/// `ld.u64 %rA,[%rB];` (GCC's weak generic load) as (`%rA`, `%rB`).
fn weak_load(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("ld.u64 ")?.strip_suffix(";")?;
    let (dst, addr) = rest.split_once(',')?;
    let addr = addr.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some((dst.trim(), addr.trim()))
}

/// How GCC's device-side request is rewritten (`GOMP_NVPTX_TUNE=revspin`). `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The wait polls with volatile loads and fences once after the loop; the rest as
    /// GCC wrote it (valid PTX for every target).
    VolatileWait,
    /// The whole request in the scoped forms of sm_70 and later (what GCC's own sm_70
    /// build of the protocol uses, minus its system-scope lock): the lock taken by an
    /// acquire exchange and given back by a release store at GPU scope (device threads
    /// contend for it), the flag stored with release and polled with acquire at system
    /// scope (the host answers); no `membar.sys` left; the mailbox's address read once
    /// per request instead of three times where GCC's code has the expected shape
    /// (`reuse_mailbox_address`). The object is declared
    /// `.target sm_70` (its other code is left as it is), so only for devices of compute
    /// capability 7.0 or more.
    AcqRel,
}

/// An edit of one line of the function's body.
enum Edit {
    Replace(String),
    Drop,
    /// The line, then this one after it.
    Append(String),
}

/// The body's lines (each with its line end) and the indices of its instructions.
struct Body<'a> {
    lines: Vec<&'a str>,
    code: Vec<usize>,
}

impl<'a> Body<'a> {
    fn new(body: &'a str) -> Body<'a> {
        let lines: Vec<&str> = body.split_inclusive('\n').collect();
        let code = (0..lines.len()).filter(|&i| !is_loc(lines[i])).collect();
        Body { lines, code }
    }

    /// Instruction `k` (an index into `code`), trimmed; "" past the end.
    fn t(&self, k: usize) -> &'a str {
        self.code.get(k).map_or("", |&i| self.lines[i].trim())
    }

    /// The position (in `code`) of the wait loop and its parts: LABEL: /
    /// ld.global.u64 %rB,[__gomp_rev_offload_var]; / ld.u64 %rA,[%rB]; / membar.sys; /
    /// setp.ne.u64 %rP,%rA,0; / @%rP bra LABEL;  (`.loc` lines between).
    fn wait_loop(&self) -> Option<(usize, &'a str, &'a str)> {
        (0..self.code.len().saturating_sub(5)).find_map(|k| {
            let label = self.t(k).strip_suffix(':')?;
            let (val, addr) = weak_load(self.t(k + 2))?;
            if self.t(k + 1) != format!("ld.global.u64 {addr},[__gomp_rev_offload_var];")
                || self.t(k + 3) != "membar.sys;"
            {
                return None;
            }
            let pred = self
                .t(k + 4)
                .strip_prefix("setp.ne.u64 ")?
                .strip_suffix(&format!(",{val},0;"))?;
            (self.t(k + 5) == format!("@{pred} bra {label};")).then_some((k, val, addr))
        })
    }

    /// Whether exactly one instruction of the body writes register `reg` ([`writes`]).
    fn written_once(&self, reg: &str) -> bool {
        (0..self.code.len())
            .filter(|&k| writes(self.t(k), reg))
            .count()
            == 1
    }

    /// The lines with `edits` (keyed by the instruction's position in `code`) applied.
    fn apply(&self, edits: Vec<(usize, Edit)>) -> String {
        let mut by_line: Vec<Option<Edit>> = self.lines.iter().map(|_| None).collect();
        for (k, e) in edits {
            by_line[self.code[k]] = Some(e);
        }
        let mut out = String::with_capacity(self.lines.iter().map(|l| l.len()).sum::<usize>() + 64);
        for (line, edit) in self.lines.iter().zip(by_line) {
            match edit {
                None => out.push_str(line),
                Some(Edit::Drop) => {}
                Some(Edit::Replace(new)) => {
                    out.push_str(&line[..line.len() - line.trim_start().len()]);
                    out.push_str(&new);
                    out.push('\n');
                }
                Some(Edit::Append(after)) => {
                    out.push_str(line);
                    if !line.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(&after);
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// The body with the wait polling by volatile loads, one fence after the loop
/// ([`Form::VolatileWait`]), or `None` when it has no loop of the expected shape.
fn volatile_wait(b: &Body) -> Option<String> {
    let (k, _, _) = b.wait_loop()?;
    let load = b.t(k + 2).replacen("ld.u64 ", "ld.volatile.u64 ", 1);
    Some(b.apply(vec![
        (k + 2, Edit::Replace(load)),
        // The per-round fence goes after the loop, once.
        (k + 3, Edit::Drop),
        (k + 5, Edit::Append("membar.sys;".to_string())),
    ]))
}

/// The body in sm_70's scoped forms ([`Form::AcqRel`]), or `None` unless all four
/// places have GCC 16's shape: the lock (`@%P atom.global.exch.b32 %R,[LOCK],1;` then
/// `@%P membar.sys;`), the flag (`membar.sys;` then `st.volatile.global.u64 [..],..;`),
/// the wait loop, and after it `membar.sys;` / `mov.u32 %Z,0;` / `st.global.u32
/// [LOCK],%Z;`.
fn acq_rel(b: &Body, delay: u64) -> Option<String> {
    let (w, _, _) = b.wait_loop()?;
    let mut edits = Vec::new();
    // The lock, before the loop.
    let (lk, lock) = (0..w).find_map(|k| {
        let (pred, rest) = b.t(k).split_once(' ')?;
        let rest = rest.strip_prefix("atom.global.exch.b32 ")?;
        let (_, lock) = rest.split_once(",[")?;
        let lock = lock.strip_suffix("],1;")?;
        (pred.starts_with('@') && b.t(k + 1) == format!("{pred} membar.sys;")).then_some((k, lock))
    })?;
    let take = b.t(lk).replacen(
        "atom.global.exch.b32",
        "atom.acquire.gpu.global.exch.b32",
        1,
    );
    edits.push((lk, Edit::Replace(take)));
    edits.push((lk + 1, Edit::Drop));
    // The flag: the instruction before the loop's label.
    if w < 2 {
        return None;
    }
    let flag = b.t(w - 1);
    if b.t(w - 2) != "membar.sys;" || !flag.starts_with("st.volatile.global.u64 [") {
        return None;
    }
    edits.push((w - 2, Edit::Drop));
    let mut release = flag.replacen("st.volatile.global.u64", "st.release.sys.global.u64", 1);
    if delay > 0 {
        release.push_str(&first_poll_delay(delay));
    }
    edits.push((w - 1, Edit::Replace(release)));
    // The wait: acquire loads, no fence.
    let load = b.t(w + 2).replacen("ld.u64 ", "ld.acquire.sys.u64 ", 1);
    edits.push((w + 2, Edit::Replace(load)));
    edits.push((w + 3, Edit::Drop));
    // The unlock after the loop.
    let zero = b.t(w + 7).strip_prefix("mov.u32 ")?.strip_suffix(",0;")?;
    if b.t(w + 6) != "membar.sys;" || b.t(w + 8) != format!("st.global.u32 [{lock}],{zero};") {
        return None;
    }
    edits.push((w + 6, Edit::Drop));
    edits.push((
        w + 8,
        Edit::Replace(format!("st.release.gpu.global.u32 [{lock}],{zero};")),
    ));
    edits.extend(reuse_mailbox_address(b, lk, w, flag));
    edits.extend(hoist_device_number(b, lk, w));
    Some(b.apply(edits))
}

/// The lines after the flag's store that let `cycles` clock cycles (`%clock64`) pass
/// before the wait's first poll: a poll is one read across the bus, and the host's
/// answer that arrives just after a poll has read waits for the next one (a whole read's
/// time); a first poll a little later finds an answer the host needed some work for.
/// Its own block: registers and label of their own.
fn first_poll_delay(cycles: u64) -> String {
    format!(
        "\n{{\n\
.reg .u64 %rs_t0;\n\
.reg .u64 %rs_t1;\n\
.reg .pred %rs_p;\n\
mov.u64 %rs_t0,%clock64;\n\
$Lrs_delay:\n\
mov.u64 %rs_t1,%clock64;\n\
sub.u64 %rs_t1,%rs_t1,%rs_t0;\n\
setp.lt.u64 %rs_p,%rs_t1,{cycles};\n\
@%rs_p bra $Lrs_delay;\n\
}}"
    )
}

/// The request's device number (`ld.global.u32 %rI,[__gomp_additional_icvs];`, the ICV
/// block's first field, written by the plugin before any kernel runs) is read after the
/// lock, a dependent global load between the lock and the flag. The edits that read it
/// before the lock's loop instead (after the branch that precedes its label), or none
/// when the function is not of that shape (`%rI` written once).
fn hoist_device_number(b: &Body, lk: usize, w: usize) -> Vec<(usize, Edit)> {
    let Some(label) = lock_entry(b, lk) else {
        return Vec::new();
    };
    let read = (lk + 1..w).find_map(|k| {
        let reg = b
            .t(k)
            .strip_prefix("ld.global.u32 ")?
            .strip_suffix(",[__gomp_additional_icvs];")?;
        b.written_once(reg).then_some(k)
    });
    match read {
        Some(k) => vec![
            (k, Edit::Drop),
            (label - 1, Edit::Append(b.t(k).to_string())),
        ],
        None => Vec::new(),
    }
}

/// The position of the lock loop's label, right before the lock at `lk`, when a
/// conditional branch precedes it (GCC's NULL check of the mailbox): after that branch,
/// code runs once per request, before the lock. `None` for another shape.
fn lock_entry(b: &Body, lk: usize) -> Option<usize> {
    let label = lk.checked_sub(1)?;
    let before = b.t(label.checked_sub(1)?);
    (b.t(label).ends_with(':') && before.starts_with('@') && before.contains(" bra "))
        .then_some(label)
}

/// Whether instruction `line` writes register `reg` (its first operand, for every
/// instruction but a store).
fn writes(line: &str, reg: &str) -> bool {
    let line = line.trim();
    let line = match line.strip_prefix('@') {
        Some(rest) => rest.split_once(' ').map_or("", |(_, i)| i),
        None => line,
    };
    let Some((op, operands)) = line.split_once(' ') else {
        return false;
    };
    !op.starts_with("st.")
        && !op.starts_with('.')
        && operands.split(',').next().map(str::trim) == Some(reg)
}

/// GCC reads `__gomp_rev_offload_var` (the mailbox's address, which the plugin writes
/// once, before any kernel runs) three times per request: for the NULL check before the
/// lock, after the lock, and in every round of the wait; each a dependent global load
/// on the way of the request. The edits that keep the first read's register instead of
/// the two others (`mov`s), or none when the function is not of that shape: the check
/// right before the lock's label (`ld.global.u64 %rF,[__gomp_rev_offload_var];` /
/// `setp.eq.u64 %rP,%rF,0;` / `@%rP bra ..;`), `%rF` written nowhere else, and the
/// flag stored through the register the read after the lock filled.
fn reuse_mailbox_address(b: &Body, lk: usize, w: usize, flag: &str) -> Vec<(usize, Edit)> {
    const VAR: &str = ",[__gomp_rev_offload_var];";
    let read = |k: usize| {
        b.t(k)
            .strip_prefix("ld.global.u64 ")
            .and_then(|s| s.strip_suffix(VAR))
    };
    let shape = || {
        let label = lock_entry(b, lk)?;
        let first = read(label.checked_sub(3)?)?;
        let pred = b
            .t(label - 2)
            .strip_prefix("setp.eq.u64 ")?
            .strip_suffix(&format!(",{first},0;"))?;
        let branch = b.t(label - 1).starts_with(&format!("@{pred} bra "));
        (branch && b.written_once(first)).then_some(first)
    };
    let Some(first) = shape() else {
        return Vec::new();
    };
    let Some((after, reg)) = (lk + 1..w).find_map(|k| Some((k, read(k)?))) else {
        return Vec::new();
    };
    let Some(spin_reg) = read(w + 1) else {
        return Vec::new();
    };
    if !flag.starts_with(&format!("st.volatile.global.u64 [{reg}],")) {
        return Vec::new();
    }
    vec![
        (after, Edit::Replace(format!("mov.u64 {reg},{first};"))),
        (w + 1, Edit::Replace(format!("mov.u64 {spin_reg},{first};"))),
    ]
}

/// `head` (the object's text before `GOMP_target_ext`, where its `.target` is) declaring
/// `.target sm_70` instead of an older target, when the object (`text`) has a PTX version
/// with the scoped forms (6.0 or later) and none of the unsynchronized warp instructions
/// that sm_70 targets refuse; `None` otherwise.
fn as_sm70(head: &str, text: &str) -> Option<String> {
    let version = head
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version "))?;
    let (major, minor) = version.trim().split_once('.')?;
    if (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?) < (6, 0) {
        return None;
    }
    let unsync = |op: &str| {
        text.match_indices(op)
            .any(|(i, _)| !text[i + op.len()..].starts_with("sync"))
    };
    if unsync("shfl.") || unsync("vote.") {
        return None;
    }
    let line = head.lines().find(|l| l.trim().starts_with(".target "))?;
    let sm: u32 = line
        .trim()
        .strip_prefix(".target sm_")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    if sm >= 70 {
        return Some(head.to_string());
    }
    Some(head.replacen(line, ".target sm_70", 1))
}

/// `obj` (one PTX object, NUL-terminated) with `GOMP_target_ext`'s request rewritten in
/// `form` (see [`Form`]; [`Form::AcqRel`] falls back to [`Form::VolatileWait`] when the
/// object cannot take it; in that form the first poll comes `delay` clock cycles after
/// the flag, [`first_poll_delay`], none when 0), NUL-terminated, and the form used; `None` when `obj` does not
/// define the function or its wait has another shape (then `obj` is linked as it is).
pub fn rewrite(obj: &[u8], form: Form, delay: u64) -> Option<(Vec<u8>, Form)> {
    let text = std::str::from_utf8(obj.strip_suffix(&[0]).unwrap_or(obj)).ok()?;
    let start = text.find(DEF)? + DEF.len();
    let end = text[start..]
        .find(NEXT)
        .map_or(text.len(), |e| start + e + 1);
    let b = Body::new(&text[start..end]);
    let scoped = (form == Form::AcqRel)
        .then(|| Some((as_sm70(&text[..start], text)?, acq_rel(&b, delay)?)))
        .flatten();
    let (head, body, used) = match scoped {
        Some((head, body)) => (head, body, Form::AcqRel),
        None => (
            text[..start].to_string(),
            volatile_wait(&b)?,
            Form::VolatileWait,
        ),
    };
    let mut out = Vec::with_capacity(obj.len() + 32);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body.as_bytes());
    out.extend_from_slice(&text.as_bytes()[end..]);
    out.push(0);
    Some((out, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GCC 16's wait, the unlock after it, the function's end and the start of the next
    /// function, as in the PTX of a GCC 16 binary (both fixtures below end so).
    macro_rules! wait_and_unlock {
        () => {
            "$L23:\n\
.loc 2 146 10\n\
ld.global.u64 %r62,[__gomp_rev_offload_var];\n\
ld.u64 %r34,[%r62];\n\
membar.sys;\n\
.loc 2 146 72\n\
setp.ne.u64 %r63,%r34,0;\n\
@%r63 bra $L23;\n\
.loc 4 58 3\n\
membar.sys;\n\
mov.u32 %r64,0;\n\
st.global.u32 [lock$2],%r64;\n\
$L20:\n\
ret;\n\
}\n\
// BEGIN GLOBAL FUNCTION DEF: GOMP_target_data_ext\n\
.visible .func GOMP_target_data_ext\n\
{\n"
        };
    }

    /// GCC 16's `GOMP_target_ext` wait as its sm_52 libgomp has it (from the PTX of a
    /// GCC 16 binary, shortened around the loop).
    const GCC16: &str = concat!(
        "// BEGIN GLOBAL FUNCTION DECL: GOMP_target_ext\n\
.extern .func GOMP_target_ext (.param .u32 %in_ar0);\n\
// BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n\
.visible .func GOMP_target_ext (.param .u32 %in_ar0)\n\
{\n\
membar.sys;\n\
st.volatile.global.u64 [%r26],%r38;\n",
        wait_and_unlock!(),
        "$L1:\n\
ld.global.u64 %r62,[__gomp_rev_offload_var];\n\
ld.u64 %r34,[%r62];\n\
membar.sys;\n\
setp.ne.u64 %r63,%r34,0;\n\
@%r63 bra $L1;\n\
}\n"
    );

    fn nul(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    /// The volatile-wait rewrite, which must say it used that form.
    fn wait(obj: &[u8]) -> Option<Vec<u8>> {
        rewrite(obj, Form::VolatileWait, 0).map(|(out, used)| {
            assert_eq!(used, Form::VolatileWait);
            out
        })
    }

    /// A whole object as GCC 16's sm_52 libgomp has it around `GOMP_target_ext` (its
    /// request, from the PTX of a GCC 16 binary; declarations left out).
    const OBJECT: &str = concat!(
        ".version 7.3\n\
.target sm_52\n\
.address_size 64\n\
// BEGIN GLOBAL FUNCTION DEF: omp_pause_resource_all\n\
.visible .func (.param .u32 %value_out) omp_pause_resource_all (.param .u32 %in_ar0)\n\
{\n\
ret;\n\
}\n\
// BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n\
.visible .func GOMP_target_ext (.param .u32 %in_ar0)\n\
{\n\
ld.global.u64 %r58,[__gomp_rev_offload_var];\n\
setp.eq.u64 %r59,%r58,0;\n\
@%r59 bra $L20;\n\
$L22:\n\
.loc 4 51 10\n\
@%r67 atom.global.exch.b32 %r36,[lock$2],1;\n\
@%r67 membar.sys;\n\
@%r68 shfl.sync.idx.b32 %r36,%r36,%r66,31,0xffffffff;\n\
setp.ne.u32 %r60,%r36,0;\n\
@%r60 bra $L22;\n\
ld.global.u64 %r26,[__gomp_rev_offload_var];\n\
st.u64 [%r26+8],%r39;\n\
ld.global.u32 %r30,[__gomp_additional_icvs];\n\
st.u32 [%r26+40],%r30;\n\
.loc 2 129 3\n\
membar.sys;\n\
.loc 2 130 3\n\
// #APP \n\
st.volatile.global.u64 [%r26],%r38;\n\
// #NO_APP \n",
        wait_and_unlock!(),
        "membar.sys;\n\
trap;\n\
}\n"
    );

    #[test]
    fn the_whole_request_in_scoped_forms() {
        let (out, used) = rewrite(&nul(OBJECT), Form::AcqRel, 0).expect("rewritten");
        assert_eq!(used, Form::AcqRel);
        let text = std::str::from_utf8(&out[..out.len() - 1]).unwrap();
        let want = OBJECT
            .replacen(".target sm_52\n", ".target sm_70\n", 1)
            .replacen(
                "@%r67 atom.global.exch.b32 %r36,[lock$2],1;\n@%r67 membar.sys;\n",
                "@%r67 atom.acquire.gpu.global.exch.b32 %r36,[lock$2],1;\n",
                1,
            )
            .replacen(
                "membar.sys;\n.loc 2 130 3\n// #APP \nst.volatile.global.u64 [%r26],%r38;",
                ".loc 2 130 3\n// #APP \nst.release.sys.global.u64 [%r26],%r38;",
                1,
            )
            .replacen(
                "ld.u64 %r34,[%r62];\nmembar.sys;\n",
                "ld.acquire.sys.u64 %r34,[%r62];\n",
                1,
            )
            .replacen(
                "@%r60 bra $L22;\nld.global.u64 %r26,[__gomp_rev_offload_var];",
                "@%r60 bra $L22;\nmov.u64 %r26,%r58;",
                1,
            )
            .replacen(
                ".loc 2 146 10\nld.global.u64 %r62,[__gomp_rev_offload_var];",
                ".loc 2 146 10\nmov.u64 %r62,%r58;",
                1,
            )
            .replacen("ld.global.u32 %r30,[__gomp_additional_icvs];\n", "", 1)
            .replacen(
                "@%r59 bra $L20;\n$L22:",
                "@%r59 bra $L20;\nld.global.u32 %r30,[__gomp_additional_icvs];\n$L22:",
                1,
            )
            .replacen(
                "membar.sys;\nmov.u32 %r64,0;\nst.global.u32 [lock$2],%r64;",
                "mov.u32 %r64,0;\nst.release.gpu.global.u32 [lock$2],%r64;",
                1,
            );
        assert_eq!(text, want);
        // Only the request's fences went; the next function keeps its own.
        assert_eq!(text.matches("membar.sys").count(), 1);
        // The mailbox's address is read once.
        assert_eq!(text.matches("[__gomp_rev_offload_var]").count(), 1);
    }

    #[test]
    fn the_first_poll_waits_the_cycles_asked_after_the_flag() {
        let plain = rewrite(&nul(OBJECT), Form::AcqRel, 0).expect("rewritten").0;
        let (out, used) = rewrite(&nul(OBJECT), Form::AcqRel, 990).expect("rewritten");
        assert_eq!(used, Form::AcqRel);
        let (plain, text) = (
            String::from_utf8(plain).unwrap(),
            String::from_utf8(out).unwrap(),
        );
        let flag = "st.release.sys.global.u64 [%r26],%r38;\n";
        // The same rewrite with the delay's block right after the flag's store.
        assert_eq!(
            text,
            plain.replacen(
                flag,
                &format!("{flag}{}\n", first_poll_delay(990).trim_start()),
                1
            )
        );
        let after_flag = &text[text.find(flag).unwrap() + flag.len()..];
        assert!(after_flag.starts_with("{\n.reg .u64 %rs_t0;"));
        assert!(after_flag.contains("setp.lt.u64 %rs_p,%rs_t1,990;\n@%rs_p bra $Lrs_delay;\n}\n"));
        // Before the wait's loop, which is unchanged.
        let (delay_end, poll) = (
            after_flag.find("}\n").unwrap(),
            after_flag.find("$L23:").unwrap(),
        );
        assert!(delay_end < poll);
        // The volatile-wait form (devices before sm_70) never delays.
        assert_eq!(
            rewrite(&nul(OBJECT), Form::VolatileWait, 990),
            rewrite(&nul(OBJECT), Form::VolatileWait, 0)
        );
    }

    #[test]
    fn the_address_is_read_again_unless_the_first_read_is_kept() {
        let scoped = |obj: &str| {
            let (out, used) = rewrite(&nul(obj), Form::AcqRel, 0).expect("rewritten");
            assert_eq!(used, Form::AcqRel);
            String::from_utf8(out).unwrap()
        };
        // The register of the first read written again, the check not right before the
        // lock, or the flag stored through another register: all three reads stay.
        for obj in [
            OBJECT.replacen("$L20:\nret;", "$L20:\nmov.u64 %r58,0;\nret;", 1),
            OBJECT.replacen("@%r59 bra $L20;\n$L22:", "@%r59 bra $L20;\nnop;\n$L22:", 1),
            OBJECT.replacen(
                "st.volatile.global.u64 [%r26],%r38;",
                "st.volatile.global.u64 [%r27],%r38;",
                1,
            ),
        ] {
            let text = scoped(&obj);
            assert_eq!(
                text.matches("[__gomp_rev_offload_var]").count(),
                3,
                "{text}"
            );
            assert!(text.contains("ld.acquire.sys.u64 %r34,[%r62];"));
        }
    }

    #[test]
    fn scoped_forms_fall_back_to_the_wait_alone() {
        let volatile = |obj: &str| {
            let (out, used) = rewrite(&nul(obj), Form::AcqRel, 0).expect("rewritten");
            assert_eq!(used, Form::VolatileWait, "{obj}");
            assert_eq!(Some(out), wait(&nul(obj)));
        };
        // PTX too old for the scoped forms.
        volatile(&OBJECT.replacen(".version 7.3", ".version 5.0", 1));
        // Warp instructions that sm_70 targets refuse, anywhere in the object.
        volatile(&OBJECT.replacen("trap;", "vote.ballot.b32 %r1,%p1;", 1));
        volatile(&OBJECT.replacen("shfl.sync.idx", "shfl.idx", 1));
        // The lock without its fence, or another lock released.
        volatile(&OBJECT.replacen("@%r67 membar.sys;\n", "", 1));
        volatile(&OBJECT.replacen("st.global.u32 [lock$2]", "st.global.u32 [lock$3]", 1));
        // The flag stored without the fence before it.
        volatile(&OBJECT.replacen(".loc 2 129 3\nmembar.sys;\n", "", 1));
        // The short object of the other tests has no lock.
        volatile(GCC16);
    }

    #[test]
    fn a_newer_target_is_kept() {
        let obj = OBJECT.replacen(".target sm_52", ".target sm_80", 1);
        let (out, used) = rewrite(&nul(&obj), Form::AcqRel, 0).expect("rewritten");
        assert_eq!(used, Form::AcqRel);
        assert!(std::str::from_utf8(&out)
            .unwrap()
            .contains("\n.target sm_80\n"));
    }

    #[test]
    fn the_wait_loads_volatile_and_fences_once_after_the_loop() {
        let out = wait(&nul(GCC16)).expect("rewritten");
        assert_eq!(out.last(), Some(&0));
        let text = std::str::from_utf8(&out[..out.len() - 1]).unwrap();
        let want = GCC16.replacen(
            "ld.u64 %r34,[%r62];\nmembar.sys;\n.loc 2 146 72\nsetp.ne.u64 %r63,%r34,0;\n@%r63 bra $L23;\n",
            "ld.volatile.u64 %r34,[%r62];\n.loc 2 146 72\nsetp.ne.u64 %r63,%r34,0;\n@%r63 bra $L23;\nmembar.sys;\n",
            1,
        );
        assert_ne!(want, GCC16);
        assert_eq!(text, want);
        // The same loop in the next function is not touched.
        assert!(text.ends_with(
            "$L1:\nld.global.u64 %r62,[__gomp_rev_offload_var];\nld.u64 %r34,[%r62];\nmembar.sys;\nsetp.ne.u64 %r63,%r34,0;\n@%r63 bra $L1;\n}\n"
        ));
    }

    #[test]
    fn other_shapes_are_left_alone() {
        // No such function.
        assert_eq!(wait(&nul(".version 7.3\n.target sm_52\n")), None);
        // sm_70's acquire load.
        let sm70 = GCC16.replacen(
            "ld.u64 %r34,[%r62];\nmembar.sys;\n",
            "ld.acquire.sys.global.u64 %r34,[%r62];\n",
            1,
        );
        assert_eq!(wait(&nul(&sm70)), None);
        // The branch goes elsewhere, or tests another register.
        assert_eq!(
            wait(&nul(&GCC16.replacen(
                "@%r63 bra $L23;",
                "@%r63 bra $L20;",
                1
            ))),
            None
        );
        assert_eq!(
            wait(&nul(&GCC16.replacen(
                "setp.ne.u64 %r63,%r34,0;",
                "setp.ne.u64 %r63,%r35,0;",
                1
            ))),
            None
        );
        // The loaded address is not the mailbox's.
        assert_eq!(
            wait(&nul(&GCC16.replacen(
                "ld.u64 %r34,[%r62];",
                "ld.u64 %r34,[%r61];",
                1
            ))),
            None
        );
        // Not text.
        assert_eq!(wait(&[0xff, 0xfe, 0]), None);
    }

    #[test]
    fn the_last_definition_of_an_object_and_a_missing_nul() {
        // GOMP_target_ext as the object's last definition, without the trailing NUL.
        let body = &GCC16[..GCC16
            .find("// BEGIN GLOBAL FUNCTION DEF: GOMP_target_data_ext")
            .unwrap()];
        let out = wait(body.as_bytes()).expect("rewritten");
        let text = std::str::from_utf8(&out[..out.len() - 1]).unwrap();
        assert!(text.contains("ld.volatile.u64 %r34,[%r62];\n.loc 2 146 72\n"));
        assert!(text.ends_with("@%r63 bra $L23;\nmembar.sys;\n.loc 4 58 3\nmembar.sys;\nmov.u32 %r64,0;\nst.global.u32 [lock$2],%r64;\n$L20:\nret;\n}\n"));
    }
}
