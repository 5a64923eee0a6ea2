/* keymap.c - string-keyed open-addressing hash table with linear probing and tombstones. */
#include "keymap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char tombstone_marker;
#define TOMBSTONE (&tombstone_marker)

static size_t hash_key(const char *key) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return (size_t)h;
}

/* The slot holding key, or NULL. */
static mzn_keymap_slot *find(const mzn_keymap *m, const char *key, size_t h) {
    if (!m->capacity) return NULL;
    size_t mask = m->capacity - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        mzn_keymap_slot *s = &m->slots[i];
        if (!s->key) return NULL;
        if (s->key != TOMBSTONE && s->hash == h && strcmp(s->key, key) == 0) return s;
    }
}

static int grow(mzn_keymap *m) {
    size_t cap = m->capacity ? m->capacity * 2 : 16;
    /* Rehashing in place of a table full of tombstones does not need more room. */
    if (m->capacity && m->count * 2 < m->capacity) cap = m->capacity;
    mzn_keymap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < m->capacity; i++) {
        mzn_keymap_slot *s = &m->slots[i];
        if (!s->key || s->key == TOMBSTONE) continue;
        size_t j = s->hash & (cap - 1);
        while (slots[j].key) j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->capacity = cap;
    m->used = m->count;
    return 0;
}

void *mzn_keymap_get(const mzn_keymap *m, const char *key) {
    mzn_keymap_slot *s = find(m, key, hash_key(key));
    return s ? s->value : NULL;
}

int mzn_keymap_has(const mzn_keymap *m, const char *key) { return find(m, key, hash_key(key)) != NULL; }

int mzn_keymap_put(mzn_keymap *m, const char *key, void *value, void **old) {
    size_t h = hash_key(key);
    mzn_keymap_slot *s = find(m, key, h);
    if (s) {
        if (old) *old = s->value;
        s->value = value;
        return 0;
    }
    if (old) *old = NULL;
    if ((m->used + 1) * 4 > m->capacity * 3 && grow(m) != 0) return -1;
    char *copy = strdup(key);
    if (!copy) return -1;
    size_t mask = m->capacity - 1;
    size_t i = h & mask;
    while (m->slots[i].key && m->slots[i].key != TOMBSTONE) i = (i + 1) & mask;
    if (!m->slots[i].key) m->used++;
    m->slots[i].key = copy;
    m->slots[i].value = value;
    m->slots[i].hash = h;
    m->count++;
    return 0;
}

void *mzn_keymap_remove(mzn_keymap *m, const char *key) {
    mzn_keymap_slot *s = find(m, key, hash_key(key));
    if (!s) return NULL;
    void *v = s->value;
    free(s->key);
    s->key = TOMBSTONE;
    s->value = NULL;
    m->count--;
    return v;
}

int mzn_keymap_next(const mzn_keymap *m, size_t *cursor, const char **key, void **value) {
    for (size_t i = *cursor; i < m->capacity; i++) {
        mzn_keymap_slot *s = &m->slots[i];
        if (!s->key || s->key == TOMBSTONE) continue;
        *cursor = i + 1;
        if (key) *key = s->key;
        if (value) *value = s->value;
        return 1;
    }
    *cursor = m->capacity;
    return 0;
}

void mzn_keymap_clear(mzn_keymap *m, void (*free_value)(void *)) {
    for (size_t i = 0; i < m->capacity; i++) {
        mzn_keymap_slot *s = &m->slots[i];
        if (!s->key || s->key == TOMBSTONE) continue;
        if (free_value) free_value(s->value);
        free(s->key);
    }
    free(m->slots);
    m->slots = NULL;
    m->capacity = m->count = m->used = 0;
}
