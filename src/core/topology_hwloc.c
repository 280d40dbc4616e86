/* Cache topology from hwloc: first instance of each data/unified cache level. */
#include <hwloc.h>
#include <string.h>

#include "core/topology.h"

static const hwloc_obj_type_t g_cache_types[HRMT_MAX_CACHE_LEVELS] = {
    HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE};

/* Cores under `set`; PUs when hwloc reports no cores (some VMs). */
static int cores_in(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
    int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
    if (n <= 0) n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU);
    return n > 0 ? n : 1;
}

hrmt_status hrmt_topology_from_hwloc(hrmt_topology *out) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return HRMT_ERR_IO;
    /* Only caches, cores and PUs matter; skipping the rest keeps loading cheap. */
    hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return HRMT_ERR_IO;
    }
    hrmt_topology t;
    memset(&t, 0, sizeof t);
    t.num_cores = cores_in(topo, hwloc_topology_get_topology_cpuset(topo));
    for (int lvl = 1; lvl <= HRMT_MAX_CACHE_LEVELS; lvl++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, g_cache_types[lvl - 1], 0);
        if (!o || !o->attr || o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION ||
            o->attr->cache.size == 0)
            continue;
        hrmt_cache_level *c = &t.caches[t.num_levels++];
        c->level = lvl;
        c->size_bytes = (size_t)o->attr->cache.size;
        c->line_bytes = o->attr->cache.linesize ? o->attr->cache.linesize : 64;
        c->ways = o->attr->cache.associativity; /* 0 unknown, -1 fully associative */
        c->shared_by_cores = cores_in(topo, o->cpuset);
    }
    hwloc_topology_destroy(topo);
    if (t.num_levels == 0 || t.caches[0].level != 1) return HRMT_ERR_NOT_FOUND;
    t.source = "hwloc";
    *out = t;
    return HRMT_OK;
}
