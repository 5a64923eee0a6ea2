/*
 * scenario.h - deterministic write scenarios for the crash tests. Every step is one commit; the state after
 * step k (which keys exist, with which bytes) can be recomputed by any process, so a verifier can tell whether
 * an archive left by a killed writer is exactly a committed state.
 */
#ifndef MMZIP_CRASH_SCENARIO_H
#define MMZIP_CRASH_SCENARIO_H

#include <stdint.h>

#include "mmzip.h"

/* ACT_RESERVE reserves, fills and patches; ACT_RESERVE_OPEN reserves and fills but leaves the reservation open
 * across the step's commit; ACT_PATCH patches the open one in a later step. ACT_GROW grows an open reservation
 * to `capacity` the way the HDF5 driver does: in place if it can, otherwise by moving it (its bytes copied
 * aside, the reservation abandoned, a larger one made at the end, the bytes copied back). ACT_UNRESERVE
 * abandons an open reservation. */
/* ACT_EDIT edits a committed entry in place (mmzip_edit_*) into the version's bytes and publishes it;
 * ACT_EDIT_ABANDON does the same writes but ends the edit unpublished (the entry keeps its version). */
/* ACT_EDIT_OPEN is ACT_EDIT that leaves the edit open after its publish; ACT_EDIT_MORE writes the next version
 * in that same edit, publishes it and ends it: the HDF5 driver publishes at every flush of one session, and
 * a second publish must journal the local header as the first one left it. */
/* ACT_RESERVE_ROOM is ACT_RESERVE with MMZIP_RESERVE_ROOM: what the patch leaves of the capacity stays the
 * entry's room (the HDF5 driver's move of a member that outgrew its place); edits grow into it. */
typedef enum { ACT_PUT, ACT_REMOVE, ACT_RESERVE, ACT_RESERVE_OPEN, ACT_PATCH, ACT_GROW, ACT_UNRESERVE, ACT_EDIT,
               ACT_EDIT_ABANDON, ACT_RESERVE_ROOM, ACT_EDIT_OPEN, ACT_EDIT_MORE } act_kind;

typedef struct {
    act_kind kind;
    char key[48];
    uint32_t version;
    uint32_t len;       /* bytes (for a reservation: the final size) */
    uint32_t capacity;  /* reservations only */
} action;

typedef struct {
    int batched;        /* several actions published by one explicit commit */
    int n;
    action act[24];
} step;

typedef struct {
    char key[48];
    uint32_t version, len;
} item;

typedef struct {
    int n;
    item *items;
} state;

/* Number of steps in a scenario ("basic", "loop", "reservations", "edits"), or -1 if unknown. */
int scenario_steps(const char *name);
/* Step k (1-based). */
void scenario_step(const char *name, int k, step *out);
/* The state after steps 1..k (k = 0: empty). Caller frees st->items. */
void scenario_state(const char *name, int k, state *st);
/* The bytes of version `version` of key: deterministic, `len` bytes. */
void scenario_content(const char *key, uint32_t version, uint8_t *buf, uint32_t len);
/* Applies step k to an open handle (committing it). Returns an mmzip status. */
int scenario_apply(mmzip_t *h, const char *name, int k);
/* 1 if the archive seen through h holds exactly state st (prints the first difference if verbose). */
int scenario_matches(mmzip_t *h, const state *st, int verbose);
/* "edits": 1 if the bytes between entry "r" (which keeps room after it) and the next entry read as zeros in
 * the file at path, or if there is no such pair yet; the room must after every repair. */
int scenario_room_clear(mmzip_t *h, const char *path, int verbose);

#endif
