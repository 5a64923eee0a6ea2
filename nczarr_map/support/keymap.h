/*
 * keymap.h - a string-keyed hash table (open addressing), for the per-session sets of keys: pending
 * metadata objects and the .zattrs read so far. Keys are copied; values are opaque pointers owned by the
 * caller. Not thread-safe (a session is used by one thread at a time).
 */
#ifndef MZN_KEYMAP_H
#define MZN_KEYMAP_H

#include <stddef.h>

typedef struct mzn_keymap_slot {
    char *key;   /* NULL: empty; the tombstone marker: removed */
    void *value;
    size_t hash;
} mzn_keymap_slot;

typedef struct mzn_keymap {
    mzn_keymap_slot *slots;
    size_t capacity; /* power of two, or 0 before the first put */
    size_t count;    /* live keys */
    size_t used;     /* live keys + tombstones */
} mzn_keymap;

/* An empty map; needs no allocation until the first put. */
#define MZN_KEYMAP_INIT {NULL, 0, 0, 0}

/* The value stored under key, or NULL if absent. */
void *mzn_keymap_get(const mzn_keymap *m, const char *key);

/* 1 if key is present. */
int mzn_keymap_has(const mzn_keymap *m, const char *key);

/*
 * Stores value under key (which is copied). If key was present, its previous value is put in *old (if old
 * is not NULL) and replaced. Returns 0, or -1 if out of memory (the map is unchanged).
 */
int mzn_keymap_put(mzn_keymap *m, const char *key, void *value, void **old);

/* Removes key; returns its value, or NULL if it was absent. */
void *mzn_keymap_remove(mzn_keymap *m, const char *key);

/*
 * Iteration: for (size_t i = 0; mzn_keymap_next(m, &i, &key, &value);) visits every live entry once, in
 * no particular order. The map must not be modified during the walk, except by removing the entry just
 * visited.
 */
int mzn_keymap_next(const mzn_keymap *m, size_t *cursor, const char **key, void **value);

/* Frees the table and the copied keys; calls free_value (if not NULL) on every value. */
void mzn_keymap_clear(mzn_keymap *m, void (*free_value)(void *));

#endif
