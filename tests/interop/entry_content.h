/*
 * entry_content.h - what readers_during_append.py writes into an entry, for the C pollers that check it.
 *
 * Entry "k/NNNNNNN.SIZE" holds its own name followed by '|', repeated and cut at SIZE bytes, so that a poller
 * checks every byte it is given against the name alone.
 */
#ifndef MMZIP_TESTS_ENTRY_CONTENT_H
#define MMZIP_TESTS_ENTRY_CONTENT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The size a name "k/NNNNNNN.SIZE" ends with, or -1. */
static inline long long entry_name_size(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1]) return -1;
    char *end;
    long long v = strtoll(dot + 1, &end, 10);
    return *end ? -1 : v;
}

/* Whether data[0..size) is what the entry named name holds. */
static inline int entry_content_ok(const char *name, const unsigned char *data, uint64_t size) {
    size_t plen = strlen(name) + 1;
    for (uint64_t i = 0; i < size; i++) {
        size_t k = (size_t)(i % plen);
        unsigned char want = k + 1 == plen ? '|' : (unsigned char)name[k];
        if (data[i] != want) return 0;
    }
    return 1;
}

#endif
