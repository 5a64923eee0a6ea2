/*
 * crc32.c - the CRC-32 of ZIP (IEEE 802.3, reflected, as zlib's crc32()) for every check and every write.
 *
 * Every whole-entry read checks a stored entry's CRC-32 before handing out its first byte, so this one pass
 * over the data is the largest cost of a first read after the page faults (docs/performance.md, "CRC-32 on
 * Python reads"). ISA-L's crc32_gzip_refl folds 64 bytes per step with VPCLMULQDQ where the CPU has
 * AVX-512, about four times libdeflate 1.14's PCLMULQDQ loop on data in cache, and picks a narrower routine
 * itself on older CPUs; libdeflate's crc32 serves where ISA-L is not installed. Both compute the same
 * function (tests/core/test_crc32.c compares them with zlib's at every length and alignment).
 */
#include "internal.h"

#if defined(MMZIP_HAVE_ISAL)
#include <isa-l/crc.h>

uint32_t mz_crc32(uint32_t crc, const void *data, size_t len) {
    return crc32_gzip_refl(crc, (const unsigned char *)data, (uint64_t)len);
}
#else
#include <libdeflate.h>

uint32_t mz_crc32(uint32_t crc, const void *data, size_t len) { return libdeflate_crc32(crc, data, len); }
#endif
