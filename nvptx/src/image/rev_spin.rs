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
//! The rewritten object differs from the original, so the linked-image cache keys it
//! apart (the key covers every byte of PTX). Pure code.

/// The comment GCC writes before the function's definition.
const DEF: &str = "// BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n";
/// The start of the next function's (or variable's) comment: the end of the body.
const NEXT: &str = "\n// BEGIN ";

/// Whether `line` is a `.loc` directive (GCC's line information, between instructions).
fn is_loc(line: &str) -> bool {
    line.trim_start().starts_with(".loc")
}

/// `ld.u64 %rA,[%rB];` (GCC's weak generic load) as (`%rA`, `%rB`).
fn weak_load(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("ld.u64 ")?.strip_suffix(";")?;
    let (dst, addr) = rest.split_once(',')?;
    let addr = addr.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some((dst.trim(), addr.trim()))
}

/// The rewritten body of `GOMP_target_ext` (see the module text), or `None` when it has
/// no loop of the expected shape.
fn rewrite_body(body: &str) -> Option<String> {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let code: Vec<usize> = (0..lines.len()).filter(|&i| !is_loc(lines[i])).collect();
    // The loop: LABEL: / ld.global.u64 %rB,[__gomp_rev_offload_var]; / ld.u64 %rA,[%rB]; /
    // membar.sys; / setp.ne.u64 %rP,%rA,0; / @%rP bra LABEL;  (.loc lines between).
    for w in code.windows(6) {
        let t = |k: usize| lines[w[k]].trim();
        let Some(label) = t(0).strip_suffix(':') else {
            continue;
        };
        let Some((val, addr)) = weak_load(t(2)) else {
            continue;
        };
        if t(1) != format!("ld.global.u64 {addr},[__gomp_rev_offload_var];")
            || t(3) != "membar.sys;"
        {
            continue;
        }
        let Some(pred) = t(4)
            .strip_prefix("setp.ne.u64 ")
            .and_then(|s| s.strip_suffix(&format!(",{val},0;")))
        else {
            continue;
        };
        if t(5) != format!("@{pred} bra {label};") {
            continue;
        }
        let mut out = String::with_capacity(body.len() + 32);
        for (i, l) in lines.iter().enumerate() {
            if i == w[2] {
                out.push_str(&l.replacen("ld.u64 ", "ld.volatile.u64 ", 1));
            } else if i == w[3] {
                // The per-round fence goes...
            } else {
                out.push_str(l);
                if i == w[5] {
                    // ...after the loop, once.
                    if !l.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str("membar.sys;\n");
                }
            }
        }
        return Some(out);
    }
    None
}

/// `obj` (one PTX object, NUL-terminated) with `GOMP_target_ext`'s reverse-offload wait
/// rewritten (see the module text), NUL-terminated; `None` when `obj` does not define
/// the function or its wait has another shape (then `obj` is linked as it is).
pub fn rewrite(obj: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(obj.strip_suffix(&[0]).unwrap_or(obj)).ok()?;
    let start = text.find(DEF)? + DEF.len();
    let end = text[start..]
        .find(NEXT)
        .map_or(text.len(), |e| start + e + 1);
    let body = rewrite_body(&text[start..end])?;
    let mut out = Vec::with_capacity(obj.len() + 32);
    out.extend_from_slice(&text.as_bytes()[..start]);
    out.extend_from_slice(body.as_bytes());
    out.extend_from_slice(&text.as_bytes()[end..]);
    out.push(0);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GCC 16's `GOMP_target_ext` wait as its sm_52 libgomp has it (from the PTX of a
    /// GCC 16 binary, shortened around the loop).
    const GCC16: &str = "// BEGIN GLOBAL FUNCTION DECL: GOMP_target_ext\n\
.extern .func GOMP_target_ext (.param .u32 %in_ar0);\n\
// BEGIN GLOBAL FUNCTION DEF: GOMP_target_ext\n\
.visible .func GOMP_target_ext (.param .u32 %in_ar0)\n\
{\n\
membar.sys;\n\
st.volatile.global.u64 [%r26],%r38;\n\
$L23:\n\
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
{\n\
$L1:\n\
ld.global.u64 %r62,[__gomp_rev_offload_var];\n\
ld.u64 %r34,[%r62];\n\
membar.sys;\n\
setp.ne.u64 %r63,%r34,0;\n\
@%r63 bra $L1;\n\
}\n";

    fn nul(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    #[test]
    fn the_wait_loads_volatile_and_fences_once_after_the_loop() {
        let out = rewrite(&nul(GCC16)).expect("rewritten");
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
        assert_eq!(rewrite(&nul(".version 7.3\n.target sm_52\n")), None);
        // sm_70's acquire load.
        let sm70 = GCC16.replacen(
            "ld.u64 %r34,[%r62];\nmembar.sys;\n",
            "ld.acquire.sys.global.u64 %r34,[%r62];\n",
            1,
        );
        assert_eq!(rewrite(&nul(&sm70)), None);
        // The branch goes elsewhere, or tests another register.
        assert_eq!(
            rewrite(&nul(&GCC16.replacen(
                "@%r63 bra $L23;",
                "@%r63 bra $L20;",
                1
            ))),
            None
        );
        assert_eq!(
            rewrite(&nul(&GCC16.replacen(
                "setp.ne.u64 %r63,%r34,0;",
                "setp.ne.u64 %r63,%r35,0;",
                1
            ))),
            None
        );
        // The loaded address is not the mailbox's.
        assert_eq!(
            rewrite(&nul(&GCC16.replacen(
                "ld.u64 %r34,[%r62];",
                "ld.u64 %r34,[%r61];",
                1
            ))),
            None
        );
        // Not text.
        assert_eq!(rewrite(&[0xff, 0xfe, 0]), None);
    }

    #[test]
    fn the_last_definition_of_an_object_and_a_missing_nul() {
        // GOMP_target_ext as the object's last definition, without the trailing NUL.
        let body = &GCC16[..GCC16
            .find("// BEGIN GLOBAL FUNCTION DEF: GOMP_target_data_ext")
            .unwrap()];
        let out = rewrite(body.as_bytes()).expect("rewritten");
        let text = std::str::from_utf8(&out[..out.len() - 1]).unwrap();
        assert!(text.contains("ld.volatile.u64 %r34,[%r62];\n.loc 2 146 72\n"));
        assert!(text.ends_with("@%r63 bra $L23;\nmembar.sys;\n.loc 4 58 3\nmembar.sys;\nmov.u32 %r64,0;\nst.global.u32 [lock$2],%r64;\n$L20:\nret;\n}\n"));
    }
}
