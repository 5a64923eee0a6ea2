/* test_keymap.c - the string-keyed hash table: put/replace/get/remove, growth, tombstones, iteration. */
#include <stdint.h>
#include <stdlib.h>

#include "keymap.h"
#include "nczarr_ctest.h"

static void test_basic(void) {
    mzn_keymap m = MZN_KEYMAP_INIT;
    CHECK(mzn_keymap_get(&m, "a") == NULL);
    void *old = (void *)1;
    CHECK(mzn_keymap_put(&m, "a", (void *)10, &old) == 0 && old == NULL);
    CHECK(mzn_keymap_put(&m, "a", (void *)11, &old) == 0 && old == (void *)10);
    CHECK(mzn_keymap_get(&m, "a") == (void *)11);
    CHECK(mzn_keymap_has(&m, "a") && !mzn_keymap_has(&m, "b"));
    CHECK(mzn_keymap_remove(&m, "a") == (void *)11);
    CHECK(!mzn_keymap_has(&m, "a") && m.count == 0);
    CHECK(mzn_keymap_remove(&m, "a") == NULL);
    mzn_keymap_clear(&m, NULL);
}

static void test_many(void) {
    mzn_keymap m = MZN_KEYMAP_INIT;
    char key[32];
    enum { N = 20000 };
    for (uintptr_t i = 0; i < N; i++) {
        snprintf(key, sizeof key, "/var/%lu", (unsigned long)i);
        CHECK(mzn_keymap_put(&m, key, (void *)(i + 1), NULL) == 0);
    }
    CHECK_EQ_U64(m.count, N);
    /* Remove every other key, then re-add half of those: tombstones must not hide live keys. */
    for (uintptr_t i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "/var/%lu", (unsigned long)i);
        CHECK(mzn_keymap_remove(&m, key) == (void *)(i + 1));
    }
    for (uintptr_t i = 0; i < N; i += 4) {
        snprintf(key, sizeof key, "/var/%lu", (unsigned long)i);
        CHECK(mzn_keymap_put(&m, key, (void *)(i + 7), NULL) == 0);
    }
    size_t seen = 0;
    const char *k;
    void *v;
    for (size_t c = 0; mzn_keymap_next(&m, &c, &k, &v);) {
        unsigned long i = strtoul(k + 5, NULL, 10);
        CHECK(v == (void *)(uintptr_t)(i % 4 == 0 ? i + 7 : i + 1));
        CHECK(i % 2 == 1 || i % 4 == 0);
        seen++;
    }
    CHECK_EQ_U64(seen, N / 2 + N / 4);
    CHECK_EQ_U64(m.count, seen);
    mzn_keymap_clear(&m, NULL);
    CHECK(m.count == 0 && m.capacity == 0);
}

int main(void) {
    RUN(test_basic);
    RUN(test_many);
    return ctest_result();
}
