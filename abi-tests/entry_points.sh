# entry_points.sh - lists for abi-tests/check-exports.sh (sourced). Generated from
# src/edge/table.rs by `cargo run -p gomp-plugin --example edge_table -- write`; do not edit.
# Required by libgomp 16 whatever the capabilities (spec section 1.2).
ALWAYS="version get_name get_caps get_type get_num_devices init_device fini_device load_image unload_image alloc free dev2host host2dev"
# Required with caps & OPENMP_400 by libgomp 14 and by libgomp 16.
OPENMP14="dev2dev run"
OPENMP16="dev2dev memset run"
# nvptx exports that no libgomp up to 16 looks up (the stock GCC 16 plugin lacks them).
NEWER_THAN_16="get_dev_caps get_numa_node supported_teams_dim supported_threads_dim memspace_validate session_size session_start session_set_target_var_table"
