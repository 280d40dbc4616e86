/* Internal pieces of cache-topology detection, split so tests can drive each
 * source on its own (a fake sysfs tree, overrides on a known topology). */
#ifndef HRMT_CORE_TOPOLOGY_H
#define HRMT_CORE_TOPOLOGY_H

#include "hrmt.h"

/* Data/unified caches seen by hwloc. HRMT_ERR_NOT_FOUND when hwloc reports no
 * L1 data cache (containers sometimes hide it), HRMT_ERR_IO when it fails. */
hrmt_status hrmt_topology_from_hwloc(hrmt_topology *out);

/* Data/unified caches of cpu0 read from `cpu_root` (normally
 * "/sys/devices/system/cpu"): cpu0/cache/indexN/ (level, type, size,
 * coherency_line_size, ways_of_associativity, shared_cpu_list), plus
 * cpu0/topology/thread_siblings_list (SMT width, optional) and `online`
 * (optional) to turn CPU counts into core counts. HRMT_ERR_IO when the
 * directory is missing, HRMT_ERR_NOT_FOUND when it holds no L1 data cache. */
hrmt_status hrmt_topology_from_sysfs(const char *cpu_root, hrmt_topology *out);

/* Last resort: 32 KiB L1d, 512 KiB L2 per core, 8 MiB L3 shared by all. */
void hrmt_topology_defaults(hrmt_topology *out);

/* Applies HRMT_CACHE_L1D / _L2 / _L3 (positive decimal byte counts; empty =
 * unset) to `t`;
 * an override for a missing level adds it. Notes "+env" in t->source.
 * HRMT_ERR_INVALID_ARG (and `t` untouched) when one is malformed. */
hrmt_status hrmt_topology_apply_env(hrmt_topology *t);

#endif
