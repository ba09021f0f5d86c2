//! Writes a program's PTX objects with the reverse-offload wait rewritten exactly as the
//! plugin rewrites it before the JIT link (`image::rev_spin`, `GOMP_NVPTX_TUNE=revspin`).
//!
//! usage: `cargo run -p gomp-plugin-nvptx --example rev_spin_ptx -- wait|acqrel IN OUT [CYCLES]`
//!
//! IN and OUT hold NUL-terminated PTX objects one after another (bench/gcc_ptx.py writes
//! IN from a binary); objects without GCC's request are copied as they are. `wait`: the
//! wait polls by volatile loads (`revspin=wait`); `acqrel`: the whole request in sm_70's
//! scoped forms (`revspin=acqrel`, the plugin's choice on devices of compute capability
//! 7.0 or more); CYCLES: with `acqrel`, the clock cycles before the first poll
//! (`revdelay`, which the plugin gives in ns; default 0). Run by bench/build.sh for bench/cuda_floor.c's `revoff_gcc_real_vspin`
//! and `revoff_gcc_real_acqrel` rows. Fails (exit 1) when no object was rewritten in the
//! form asked, so a floor row never claims a rewrite that did not happen.

use gomp_plugin_nvptx::image::rev_spin;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: rev_spin_ptx wait|acqrel IN OUT [CYCLES] (PTX objects, each NUL-terminated)";
    let (form, input, output, delay) = match args.as_slice() {
        [f, i, o] => (f, i, o, 0),
        [f, i, o, c] => match c.parse::<u64>() {
            Ok(c) => (f, i, o, c),
            Err(_) => {
                eprintln!("{usage}");
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let form = match form.as_str() {
        "wait" => rev_spin::Form::VolatileWait,
        "acqrel" => rev_spin::Form::AcqRel,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let data = std::fs::read(input).unwrap_or_else(|e| {
        eprintln!("rev_spin_ptx: cannot read {input}: {e}");
        std::process::exit(1);
    });
    let mut out = Vec::with_capacity(data.len() + 64);
    let mut rewritten = 0;
    for obj in data.split_inclusive(|&b| b == 0) {
        match rev_spin::rewrite(obj, form, delay).filter(|r| r.1 == form) {
            Some((new, _)) => {
                rewritten += 1;
                out.extend_from_slice(&new);
            }
            None => out.extend_from_slice(obj),
        }
    }
    if rewritten == 0 {
        eprintln!("rev_spin_ptx: no object of {input} has GCC's reverse-offload request in a shape the {form:?} rewrite takes");
        std::process::exit(1);
    }
    std::fs::write(output, &out).unwrap_or_else(|e| {
        eprintln!("rev_spin_ptx: cannot write {output}: {e}");
        std::process::exit(1);
    });
    println!("rev_spin_ptx: {rewritten} object(s) rewritten ({form:?}) -> {output}");
}
