/*
 * registry.h - which netCDF dataset (ncid) each open session serves.
 *
 * The storage map is created deep inside nc_open/nc_create, where the ncid is not known yet, while
 * nc_sync, nc_abort and the chunk write-back are called with an ncid only. The interposed nc_open and
 * nc_create therefore bracket the real call: sessions created during it are noted on the calling thread
 * and bound to the ncid the call returns. A session unbinds itself when it closes.
 *
 * Thread-safe: the table is guarded by a mutex; the "opened during this call" note is per thread.
 */
#ifndef MZN_REGISTRY_H
#define MZN_REGISTRY_H

/* The registry keeps sessions by pointer only (session_state.h has the type): it sits below them. */
typedef struct mzn_session mzn_session;

/* State of one interposed open/create call (on the caller's stack). */
typedef struct mzn_open_call {
    mzn_session *opened;          /* the session created during the call, if any */
    struct mzn_open_call *outer;  /* an enclosing call on the same thread */
} mzn_open_call;

/* Starts noting the sessions that open on this thread. */
void mzn_registry_begin_call(mzn_open_call *call);

/*
 * Ends the call: if it succeeded (status NC_NOERR) and a session opened during it, binds the session to
 * the dataset of ncid. Returns that session, or NULL.
 */
mzn_session *mzn_registry_end_call(mzn_open_call *call, int status, int ncid);

/* Called by a session when it opens. */
void mzn_registry_note_opened(mzn_session *s);

/* The session serving the dataset of ncid (any group id of it), or NULL. */
mzn_session *mzn_registry_find(int ncid);

/* Called by a session when it closes: removes its binding. */
void mzn_registry_forget(mzn_session *s);

#endif
