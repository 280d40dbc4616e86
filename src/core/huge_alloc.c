#define _DEFAULT_SOURCE /* posix_memalign, madvise, MADV_HUGEPAGE */
#include "core/huge_alloc.h"

#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)

void *hrmt_huge_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes < HUGE_PAGE) {
        const size_t rounded = (bytes + 63) / 64 * 64;
        return rounded < bytes ? NULL : aligned_alloc(64, rounded ? rounded : 64);
    }
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* failure is harmless */
#endif
    return p;
}
