/* Allocation of large buffers on transparent huge pages. */
#ifndef HRMT_CORE_HUGE_ALLOC_H
#define HRMT_CORE_HUGE_ALLOC_H

#include <stddef.h>

/* 64-byte aligned, uninitialised storage for `bytes` (> 0), released with
 * free(). From 2 MiB on it is 2 MiB aligned and its whole 2 MiB pages are
 * offered to Linux as transparent huge pages (madvise; a hint, nothing is
 * padded): the model's weights and activations exceed what the 4 KiB-page
 * TLB covers, and GEMMs walking them pay page walks. NULL when out of memory. */
void *hrmt_huge_alloc(size_t bytes);

#endif
