/*
 * sanitizer_exit_shim.c - preloaded after the sanitizer runtime in the ASan+UBSan test configuration only.
 *
 * With GCC 12's ASan runtime preloaded into Debian 12's programs, libp11-kit's destructor (libnetcdf and
 * libhdf5 pull it in through libcurl and GnuTLS) deadlocks at exit in freelocale() on glibc's setlocale lock:
 * `LD_PRELOAD=$(gcc -print-file-name=libasan.so) h5dump -H /nonexistent.h5` never exits, with no mmzip code
 * loaded. Turning freelocale() into a no-op lets such programs exit; it leaks one locale object at exit.
 * (libp11-kit is also preloaded early, which avoids the same deadlock at start-up: tests/CMakeLists.txt.)
 */
#include <locale.h>

void freelocale(locale_t l) { (void)l; }
