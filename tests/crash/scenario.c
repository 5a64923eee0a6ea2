/* scenario.c - see scenario.h. */
#include "scenario.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_STEPS 4000

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

void scenario_content(const char *key, uint32_t version, uint8_t *buf, uint32_t len) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = key; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint64_t x = mix(h ^ ((uint64_t)version << 32) ^ len);
    for (uint32_t i = 0; i < len; i++) {
        if ((i & 7) == 0) x = mix(x + i);
        buf[i] = (uint8_t)(x >> ((i & 7) * 8));
    }
}

int scenario_steps(const char *name) {
    if (strcmp(name, "basic") == 0) return 12;
    if (strcmp(name, "loop") == 0) return LOOP_STEPS;
    if (strcmp(name, "reservations") == 0) return 6;
    if (strcmp(name, "edits") == 0) return 15;
    if (strcmp(name, "emptied") == 0) return 3;
    if (strcmp(name, "kept") == 0) return 40;
    return -1;
}

static void put(step *s, const char *key, uint32_t version, uint32_t len) {
    action *a = &s->act[s->n++];
    a->kind = ACT_PUT;
    snprintf(a->key, sizeof a->key, "%s", key);
    a->version = version;
    a->len = len;
}

static void rm(step *s, const char *key) {
    action *a = &s->act[s->n++];
    a->kind = ACT_REMOVE;
    snprintf(a->key, sizeof a->key, "%s", key);
}

static void reserve(step *s, const char *key, uint32_t version, uint32_t capacity, uint32_t len) {
    action *a = &s->act[s->n++];
    a->kind = ACT_RESERVE;
    snprintf(a->key, sizeof a->key, "%s", key);
    a->version = version;
    a->capacity = capacity;
    a->len = len;
}

static void reserve_open(step *s, const char *key, uint32_t version, uint32_t capacity, uint32_t len, int patch) {
    action *a = &s->act[s->n++];
    a->kind = patch ? ACT_PATCH : ACT_RESERVE_OPEN;
    snprintf(a->key, sizeof a->key, "%s", key);
    a->version = version;
    a->capacity = capacity;
    a->len = len;
}

/* "basic": every kind of change once, sizes from zero to hundreds of KiB. */
static void basic_step(int k, step *s) {
    char key[48];
    switch (k) {
    case 1: put(s, "a", 1, 100); break;
    case 2: put(s, "b", 1, 5000); break;
    case 3: put(s, "c", 1, 300000); break;
    case 4: put(s, "a", 2, 120); break;            /* replace */
    case 5: rm(s, "b"); break;                      /* remove */
    case 6:                                         /* a batch of twenty */
        s->batched = 1;
        for (int i = 0; i < 20; i++) {
            snprintf(key, sizeof key, "d/%d", i);
            put(s, key, 1, 50 + (uint32_t)i * 13);
        }
        break;
    case 7: reserve(s, "e", 1, 200000, 150000); break; /* reserve, fill, patch */
    case 8:
        s->batched = 1;
        put(s, "a", 3, 100);
        put(s, "f", 1, 10);
        break;
    case 9: put(s, "g", 1, 0); break;               /* an empty entry */
    case 10:
        s->batched = 1;
        rm(s, "c");
        put(s, "h", 1, 70000);
        put(s, "d/3", 2, 33);
        break;
    case 11: /* a reservation stays open across a commit of another entry */
        s->batched = 1;
        reserve_open(s, "r", 1, 90000, 80000, 0);
        put(s, "i", 1, 500);
        break;
    case 12:
        s->batched = 1;
        reserve_open(s, "r", 1, 90000, 80000, 1);
        break;
    }
}

static void grow(step *s, const char *key, uint32_t version, uint32_t capacity, uint32_t len) {
    reserve_open(s, key, version, capacity, len, 0);
    s->act[s->n - 1].kind = ACT_GROW;
}

static void unreserve(step *s, const char *key) {
    action *a = &s->act[s->n++];
    a->kind = ACT_UNRESERVE;
    snprintf(a->key, sizeof a->key, "%s", key);
}

/* "reservations": what the HDF5 driver does with two members written at once. Several reservations open at
 * the same time, commits while some stay open, growth in place and by moving, and abandoned reservations. */
static void reservations_step(int k, step *s) {
    s->batched = 1;
    switch (k) {
    case 1: put(s, "x", 1, 3000); break;
    case 2: /* A cannot grow in place (B follows it): it moves; A is published, B stays open */
        reserve_open(s, "A", 1, 60000, 50000, 0);
        reserve_open(s, "B", 1, 60000, 40000, 0);
        grow(s, "A", 1, 200000, 150000);
        reserve_open(s, "A", 1, 200000, 150000, 1);
        break;
    case 3: /* B, open across the last commit, grows and is published */
        grow(s, "B", 1, 250000, 240000);
        reserve_open(s, "B", 1, 250000, 240000, 1);
        break;
    case 4: /* new versions of both; B's is abandoned, so B keeps version 1 */
        reserve_open(s, "A", 2, 80000, 70000, 0);
        reserve_open(s, "B", 2, 80000, 60000, 0);
        unreserve(s, "B");
        reserve_open(s, "A", 2, 80000, 70000, 1);
        break;
    case 5: /* the last reservation grows in place */
        reserve_open(s, "B", 3, 100000, 90000, 0);
        grow(s, "B", 3, 300000, 290000);
        reserve_open(s, "B", 3, 300000, 290000, 1);
        put(s, "y", 1, 500);
        break;
    case 6: /* a reservation left open at the end: closing drops it */
        reserve_open(s, "C", 1, 50000, 40000, 0);
        put(s, "z", 1, 700);
        break;
    }
}

static void edit(step *s, const char *key, uint32_t version, uint32_t len, int publish) {
    action *a = &s->act[s->n++];
    a->kind = publish ? ACT_EDIT : ACT_EDIT_ABANDON;
    snprintf(a->key, sizeof a->key, "%s", key);
    a->version = version;
    a->len = len;
}

/* "edits": entries edited in place, as the HDF5 driver edits a member: shrunk between other entries, grown at
 * the end of the archive (the directory moves out of the way), an edit abandoned, and a stray of the same
 * size as before. Each step is one commit. */
static void edits_step(int k, step *s) {
    switch (k) {
    case 1: s->batched = 1; put(s, "m", 1, 100000); put(s, "a", 1, 3000); break;
    case 2: edit(s, "m", 2, 90000, 1); break;             /* between entries: no growth */
    case 3: put(s, "z", 1, 50000); break;
    case 4: edit(s, "z", 2, 200000, 1); break;            /* the last entry grows past the directory */
    case 5: edit(s, "z", 3, 230000, 0); put(s, "b", 1, 1000); break; /* abandoned: z stays at 2 */
    case 6: edit(s, "m", 3, 90000, 1); break;             /* every block changes, same size */
    case 7: edit(s, "z", 4, 150000, 1); break;            /* shrinks, b follows it */
    case 8: edit(s, "b", 2, 70000, 1); break;             /* the last entry again, from small to large */
    /* Room kept after an entry (the HDF5 driver's move of a member that outgrew its place): edits grow into it
     * while another entry follows; an abandoned growth leaves the room reading as zeros again. */
    case 9: reserve(s, "r", 1, 200000, 60000); s->act[s->n - 1].kind = ACT_RESERVE_ROOM; break;
    case 10: put(s, "c", 1, 5000); break;
    case 11: edit(s, "r", 2, 120000, 1); break;           /* into its room, not the last entry */
    case 12: s->batched = 1; edit(s, "r", 3, 190000, 0); put(s, "d", 1, 100); break; /* abandoned */
    case 13: edit(s, "r", 4, 150000, 1); break;
    /* Two publishes in one edit, a step each. */
    case 14: edit(s, "m", 4, 90000, 1); s->act[s->n - 1].kind = ACT_EDIT_OPEN; break;
    case 15: edit(s, "m", 5, 90000, 1); s->act[s->n - 1].kind = ACT_EDIT_MORE; break;
    }
}

/* "loop": thousands of small commits with the odd replacement, removal, batch and large entry; every step
 * also writes a marker "step/<k>" so that a reader can tell which state it sees. */
static void loop_step(int k, step *s) {
    uint64_t r = mix((uint64_t)k * 7919);
    char key[48];
    int kind = (int)(r % 16);
    if (kind < 10) {
        snprintf(key, sizeof key, "k/%d", k);
        put(s, key, 1, (uint32_t)(r >> 8) % 3000);
    } else if (kind < 12 && k > 10) {
        snprintf(key, sizeof key, "k/%d", (int)((r >> 20) % (uint64_t)(k - 1)) + 1);
        put(s, key, (uint32_t)k, (uint32_t)(r >> 8) % 500);
    } else if (kind < 13 && k > 10) {
        snprintf(key, sizeof key, "k/%d", (int)((r >> 20) % (uint64_t)(k - 1)) + 1);
        rm(s, key);
    } else if (kind < 15) {
        s->batched = 1;
        int n = 1 + (int)((r >> 12) % 8);
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof key, "b/%d/%d", k, i);
            put(s, key, 1, (uint32_t)((r >> (16 + i)) % 700));
        }
    } else {
        snprintf(key, sizeof key, "big/%d", k);
        put(s, key, 1, 100000 + (uint32_t)(r >> 30) % 200000);
    }
    snprintf(key, sizeof key, "step/%d", k);
    s->batched = 1; /* the marker is published by the same commit as the step's change */
    put(s, key, 1, 4);
}

/* "emptied": every entry removed, so that the last writer's close replaces the dead bytes by the plain end
 * record (docs/protocol.md §3.6). */
static void emptied_step(int k, step *s) {
    switch (k) {
    case 1: s->batched = 1; put(s, "a", 1, 3000); put(s, "b", 1, 70000); break;
    case 2: rm(s, "a"); break;
    case 3: rm(s, "b"); break;
    }
}

/* "kept": a 20 MB archive, then puts of 128 bytes to 128 KiB, meant to be written one
 * session per step (crash_tool write ... sessions): each session that finds no slack relocates the directory
 * and keeps the old one for readers (kept_tail.c), releasing the one kept before, and a put that finds free
 * space left by a released one goes there instead of relocating. */
static void kept_step(int k, step *s) {
    char key[48];
    if (k == 1) {
        put(s, "base", 1, 20000000);
        return;
    }
    snprintf(key, sizeof key, "p/%d", k);
    /* About log-uniform from 128 bytes to 64 KiB, so that the small ones fill the free space. */
    uint64_t r = mix((uint64_t)k);
    put(s, key, 1, (uint32_t)(128u << (r % 10)) + (uint32_t)((r >> 8) % (128u << (r % 10))));
}

void scenario_step(const char *name, int k, step *out) {
    memset(out, 0, sizeof *out);
    if (strcmp(name, "basic") == 0) basic_step(k, out);
    else if (strcmp(name, "reservations") == 0) reservations_step(k, out);
    else if (strcmp(name, "edits") == 0) edits_step(k, out);
    else if (strcmp(name, "emptied") == 0) emptied_step(k, out);
    else if (strcmp(name, "kept") == 0) kept_step(k, out);
    else loop_step(k, out);
}

static int find(const state *st, const char *key) {
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->items[i].key, key) == 0) return i;
    return -1;
}

void scenario_state(const char *name, int k, state *st) {
    int cap = 64;
    st->n = 0;
    st->items = malloc((size_t)cap * sizeof *st->items);
    for (int s = 1; s <= k; s++) {
        step sp;
        scenario_step(name, s, &sp);
        for (int i = 0; i < sp.n; i++) {
            action *a = &sp.act[i];
            int at = find(st, a->key);
            if (a->kind == ACT_REMOVE) {
                if (at >= 0) st->items[at] = st->items[--st->n];
                continue;
            }
            if (a->kind == ACT_RESERVE_OPEN || a->kind == ACT_GROW || a->kind == ACT_UNRESERVE ||
                a->kind == ACT_EDIT_ABANDON)
                continue; /* invisible until patched */
            if (at < 0) {
                if (st->n == cap) {
                    cap *= 2;
                    st->items = realloc(st->items, (size_t)cap * sizeof *st->items);
                }
                at = st->n++;
                snprintf(st->items[at].key, sizeof st->items[at].key, "%s", a->key);
            }
            st->items[at].version = a->version;
            st->items[at].len = a->len;
        }
    }
}

/* The writable views of the open reservations of this process, by key. */
static struct {
    char key[48];
    uint8_t *view;
    uint32_t capacity;
} open_views[8];

static void remember_view(const char *key, void *view, uint32_t capacity) {
    int free_slot = -1;
    for (int i = 0; i < 8; i++) {
        if (open_views[i].view && strcmp(open_views[i].key, key) == 0) free_slot = i;
        if (free_slot < 0 && !open_views[i].view) free_slot = i;
    }
    snprintf(open_views[free_slot].key, sizeof open_views[free_slot].key, "%s", key);
    open_views[free_slot].view = view;
    open_views[free_slot].capacity = capacity;
}

static int find_view(const char *key) {
    for (int i = 0; i < 8; i++)
        if (open_views[i].view && strcmp(open_views[i].key, key) == 0) return i;
    return -1;
}

/* Fills a reservation's view: the version's bytes, then junk up to the capacity. */
static void fill_view(const action *a, uint8_t *view) {
    scenario_content(a->key, a->version, view, a->len);
    memset(view + a->len, 0xEE, a->capacity - a->len);
}

static int grow_reservation(mmzip_t *h, const action *a) {
    int v = find_view(a->key);
    if (v < 0) return MMZIP_EINVAL;
    void *view;
    int st = mmzip_reserve_resize(h, a->key, a->capacity, &view);
    if (st == MMZIP_EBUSY) {
        uint32_t old = open_views[v].capacity;
        uint8_t *aside = malloc(old);
        memcpy(aside, open_views[v].view, old);
        st = mmzip_unreserve(h, a->key);
        if (st == MMZIP_OK) st = mmzip_reserve(h, a->key, a->capacity, 4096, 0, &view);
        if (st == MMZIP_OK) memcpy(view, aside, old);
        free(aside);
    }
    if (st != MMZIP_OK) return st;
    fill_view(a, view);
    remember_view(a->key, view, a->capacity);
    return MMZIP_OK;
}

/* Writes the version's bytes over the entry in 7000-byte pieces (HDF5 writes metadata in such pieces). */
static int edit_entry(mmzip_t *h, const action *a) {
    static mmzip_edit_t *ed;  /* the edit an ACT_EDIT_OPEN left open */
    static void *view;        /* its view */
    uint64_t room;
    mmzip_entry_info before;
    int st = mmzip_stat(h, a->key, &before);
    if (st) return st;
    if (a->kind != ACT_EDIT_MORE) {
        st = mmzip_edit_begin(h, a->key, 0, &ed);
        if (st) return st;
        st = mmzip_edit_map(ed, &view, NULL, &room);
        if (st) {
            mmzip_edit_end(ed);
            return st;
        }
        /* Room after an entry that is not the last reads as zeros, whatever an abandoned or killed edit wrote. */
        if (room != UINT64_MAX)
            for (uint64_t i = before.size; i < room; i++)
                if (((const uint8_t *)view)[i] != 0) {
                    mmzip_edit_end(ed);
                    return MMZIP_ECORRUPT;
                }
    }
    uint8_t *buf = malloc(a->len ? a->len : 1);
    scenario_content(a->key, a->version, buf, a->len);
    for (uint32_t off = 0; off < a->len && st == MMZIP_OK; off += 7000) {
        uint32_t n = a->len - off < 7000 ? a->len - off : 7000;
        st = mmzip_edit_write(ed, off, buf + off, n);
    }
    if (st == MMZIP_OK && memcmp(view, buf, a->len) != 0) st = MMZIP_ECORRUPT; /* the view shows the edit */
    free(buf);
    if (st == MMZIP_OK && a->kind != ACT_EDIT_ABANDON) st = mmzip_edit_publish(ed, a->len);
    if (st == MMZIP_OK && a->kind == ACT_EDIT_OPEN) return MMZIP_OK;
    int st2 = mmzip_edit_end(ed);
    ed = NULL;
    return st ? st : st2;
}

int scenario_apply(mmzip_t *h, const char *name, int k) {
    step sp;
    scenario_step(name, k, &sp);
    int st;
    if (sp.batched && (st = mmzip_begin(h)) != MMZIP_OK) return st;
    for (int i = 0; i < sp.n; i++) {
        action *a = &sp.act[i];
        if (a->kind == ACT_REMOVE) {
            st = mmzip_remove(h, a->key);
            if (st == MMZIP_ENOTFOUND) st = MMZIP_OK; /* the loop may pick a key already gone */
        } else if (a->kind == ACT_PUT) {
            uint8_t *buf = malloc(a->len ? a->len : 1);
            scenario_content(a->key, a->version, buf, a->len);
            st = mmzip_put(h, a->key, buf, a->len, 0);
            free(buf);
        } else if (a->kind == ACT_RESERVE_OPEN) {
            void *view;
            st = mmzip_reserve(h, a->key, a->capacity, 4096, 0, &view);
            if (st == MMZIP_OK) {
                fill_view(a, view);
                remember_view(a->key, view, a->capacity);
            }
        } else if (a->kind == ACT_GROW) {
            st = grow_reservation(h, a);
        } else if (a->kind == ACT_EDIT || a->kind == ACT_EDIT_ABANDON || a->kind == ACT_EDIT_OPEN ||
                   a->kind == ACT_EDIT_MORE) {
            st = edit_entry(h, a);
        } else if (a->kind == ACT_UNRESERVE) {
            st = mmzip_unreserve(h, a->key);
            int v = find_view(a->key);
            if (v >= 0) open_views[v].view = NULL;
        } else if (a->kind == ACT_PATCH) {
            st = mmzip_patch(h, a->key, a->len);
            int v = find_view(a->key);
            if (v >= 0) open_views[v].view = NULL;
        } else {
            void *view;
            st = a->kind == ACT_RESERVE_ROOM ? mmzip_reserve(h, a->key, a->capacity, 4096, MMZIP_RESERVE_ROOM, &view)
                                             : mmzip_reserve(h, a->key, a->capacity, 4096, 0, &view);
            if (st == MMZIP_OK) {
                fill_view(a, view); /* with junk past the final size */
                st = mmzip_patch(h, a->key, a->len);
            }
        }
        if (st != MMZIP_OK) return st;
    }
    return sp.batched ? mmzip_commit(h) : MMZIP_OK;
}

typedef struct {
    const state *st;
    int seen, bad, verbose;
} match_ctx;

static int check_entry(const mmzip_entry_info *info, void *p) {
    match_ctx *m = p;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)info->name_len, info->name);
    m->seen++;
    int at = find(m->st, key);
    if (at < 0) {
        if (m->verbose) fprintf(stderr, "unexpected entry '%s'\n", key);
        m->bad = 1;
        return 1;
    }
    if (info->size != m->st->items[at].len) {
        if (m->verbose)
            fprintf(stderr, "entry '%s': %llu bytes, want %u\n", key, (unsigned long long)info->size,
                    m->st->items[at].len);
        m->bad = 1;
        return 1;
    }
    return 0;
}

int scenario_matches(mmzip_t *h, const state *st, int verbose) {
    match_ctx m = {st, 0, 0, verbose};
    if (mmzip_list_ex(h, NULL, 0, check_entry, &m) != 0 || m.bad) return 0;
    if (m.seen != st->n) {
        if (verbose) fprintf(stderr, "%d entries, want %d\n", m.seen, st->n);
        return 0;
    }
    for (int i = 0; i < st->n; i++) {
        const void *d;
        uint64_t n;
        int r = mmzip_get(h, st->items[i].key, &d, &n);
        if (r != MMZIP_OK) {
            if (verbose) fprintf(stderr, "get '%s': %s\n", st->items[i].key, mmzip_last_error());
            return 0;
        }
        uint8_t *want = malloc(st->items[i].len ? st->items[i].len : 1);
        scenario_content(st->items[i].key, st->items[i].version, want, st->items[i].len);
        int same = n == st->items[i].len && memcmp(d, want, (size_t)n) == 0;
        free(want);
        if (!same) {
            if (verbose) fprintf(stderr, "entry '%s': bytes differ from version %u\n", st->items[i].key,
                                 st->items[i].version);
            return 0;
        }
    }
    return 1;
}

typedef struct {
    uint64_t after, next;
} next_ctx;

static int find_next(const mmzip_entry_info *info, void *p) {
    next_ctx *c = p;
    if (info->header_offset >= c->after && info->header_offset < c->next) c->next = info->header_offset;
    return 0;
}

int scenario_room_clear(mmzip_t *h, const char *path, int verbose) {
    mmzip_entry_info r;
    if (mmzip_stat(h, "r", &r) != MMZIP_OK) return 1;
    next_ctx c = {r.data_offset + r.size, UINT64_MAX};
    if (mmzip_list_ex(h, NULL, 0, find_next, &c) != 0) return 0;
    if (c.next == UINT64_MAX) return 1;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    int ok = 1;
    uint8_t buf[4096];
    for (uint64_t at = c.after; ok && at < c.next;) {
        size_t n = c.next - at < sizeof buf ? (size_t)(c.next - at) : sizeof buf;
        if (pread(fd, buf, n, (off_t)at) != (ssize_t)n) ok = 0;
        for (size_t i = 0; ok && i < n; i++)
            if (buf[i]) {
                if (verbose) fprintf(stderr, "the room after 'r' holds a nonzero byte at %llu\n",
                                     (unsigned long long)(at + i));
                ok = 0;
            }
        at += n;
    }
    close(fd);
    return ok;
}
