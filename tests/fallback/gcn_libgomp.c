/* gcn_libgomp.c - the stand-in libgomp of tests/fake_libgomp/fake_libgomp.c whose
 * GOMP_PLUGIN_target_rev (libgomp 14+'s seven arguments) and
 * GOMP_PLUGIN_target_task_completion record their calls, for the gcn launch tests
 * (gcn/tests/launch.rs): the plugin's reverse-offload requests and async completions
 * are then compared with what the stand-in HSA runtime's device posted. The
 * conformance suite (conformance/src/suite.rs) runs every backend under it; the
 * symbols keep their gcn_ names. */
#include <stdint.h>
#define GOMP_PLUGIN_target_rev fake_target_rev_unused
#define GOMP_PLUGIN_target_task_completion fake_task_completion_unused
#include "../fake_libgomp/fake_libgomp.c"
#undef GOMP_PLUGIN_target_rev
#undef GOMP_PLUGIN_target_task_completion

/* Each call's (fn, mapnum, devaddrs, sizes, kinds, dev_num); the completions' data. */
uint64_t gcn_rev_calls[64][6];
int gcn_rev_count, gcn_completion_count;
void *gcn_completions[64];

void GOMP_PLUGIN_target_rev (uint64_t fn, uint64_t mapnum, uint64_t devaddrs, uint64_t sizes,
                             uint64_t kinds, int dev_num, void *aq)
{
  if (aq || gcn_rev_count >= 64)
    abort ();
  uint64_t *c = gcn_rev_calls[gcn_rev_count];
  c[0] = fn, c[1] = mapnum, c[2] = devaddrs, c[3] = sizes, c[4] = kinds, c[5] = (uint64_t) dev_num;
  __atomic_add_fetch (&gcn_rev_count, 1, __ATOMIC_SEQ_CST);
}

void GOMP_PLUGIN_target_task_completion (void *data)
{
  int i = __atomic_load_n (&gcn_completion_count, __ATOMIC_SEQ_CST);
  if (i < 64)
    gcn_completions[i] = data;
  __atomic_add_fetch (&gcn_completion_count, 1, __ATOMIC_SEQ_CST);
}
