//! Image-descriptor reading on arbitrary counts, sizes and names (as a corrupt or
//! foreign image would present them): never panics; accepted descriptors are
//! consistent with what was built, and their linked-image cache key (SHA-256 by sha2)
//! is the same each time and changes with the PTX.
#![no_main]
use gomp_plugin_nvptx::config::tune::Tune;
use gomp_plugin_nvptx::image::descriptor::{read, RawDescriptor, RawKernel, RawPtxObj};
use gomp_plugin_nvptx::image::link::value_options;
use gomp_plugin_nvptx::image::link_cache::{key, Target};
use libfuzzer_sys::fuzz_target;
use std::ffi::{c_char, CString};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (head, rest) = data.split_at(8);
    let strings: Vec<CString> = rest
        .split(|&b| b == 0xff)
        .map(|s| CString::new(s.iter().copied().filter(|&b| b != 0).collect::<Vec<u8>>()).unwrap())
        .collect();
    let np = usize::from(head[0] % 4);
    let nv = usize::from(head[1] % 4);
    let nf = usize::from(head[2] % 4);
    let pick = |i: usize| {
        strings
            .get(i % strings.len().max(1))
            .map_or(std::ptr::null(), |s| s.as_ptr())
    };
    let ptx: Vec<RawPtxObj> = (0..np)
        .map(|i| {
            let s = strings.get(i % strings.len().max(1));
            // Sizes as the image states them: the true size or a smaller one.
            let size = s.map_or(0, |s| {
                s.as_bytes_with_nul().len().min(usize::from(head[3]).max(1))
            });
            RawPtxObj {
                code: pick(i),
                size,
            }
        })
        .collect();
    let vars: Vec<*const c_char> = (0..nv)
        .map(|i| {
            if head[4] & (1 << i) != 0 {
                std::ptr::null()
            } else {
                pick(i + 1)
            }
        })
        .collect();
    let fns: Vec<RawKernel> = (0..nf)
        .map(|i| RawKernel {
            name: pick(i + 2),
            dim: [head[5].into(), head[6].into(), 0],
        })
        .collect();
    let d = RawDescriptor {
        ptx_objs: if np == 0 {
            std::ptr::null()
        } else {
            ptx.as_ptr()
        },
        ptx_num: np as u32,
        var_names: if nv == 0 {
            std::ptr::null()
        } else {
            vars.as_ptr()
        },
        var_num: nv as u32,
        fn_names: if nf == 0 {
            std::ptr::null()
        } else {
            fns.as_ptr()
        },
        fn_num: nf as u32,
        ind_fn_num: u32::from(head[7]),
    };
    let version = if head[7] & 1 == 0 { 0x30001 } else { 0x20001 };
    // SAFETY: every pointer is NULL or into the live arrays and strings above, with
    // the counts and sizes stated (sizes never exceed the strings).
    if let Ok(desc) = unsafe { read(version, &d) } {
        assert_eq!(desc.ptx.len(), np);
        assert_eq!(desc.vars.len(), nv);
        assert_eq!(desc.funcs.len(), nf);
        assert!(desc.ptx.iter().all(|p| p.last() == Some(&0)));
        let options = value_options(None, &Tune::default(), u32::from(head[5]));
        let target = Target {
            cc: (9, 0),
            driver: "fuzz".into(),
        };
        let k = key(&desc.ptx, &options, &target);
        assert_eq!(k, key(&desc.ptx, &options, &target));
        let mut more = desc.ptx.clone();
        more.push(std::borrow::Cow::Owned(vec![0]));
        assert_ne!(
            k,
            key(&more, &options, &target),
            "the key covers every object"
        );
    }
});
