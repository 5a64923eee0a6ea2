/*
 * check.c - full verification of an archive: every local header against the central directory and every
 * CRC, compressed entries decoded (without caching the result); what mmzip reads but other ZIP readers may
 * not ("interop:"); and what recovery would do to the file ("recover:", a dry run of recovery.c's plan).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct {
    mmzip_report_fn report;
    void *ctx;
    int first;
    unsigned problems;
    unsigned recover_lines;
} checker;

static void problem(checker *c, int status) {
    if (c->report) {
        char msg[1300];
        snprintf(msg, sizeof msg, "error: %s", mmzip_last_error());
        c->report(msg, c->ctx);
    }
    if (!c->first) c->first = status;
    c->problems++;
}

static void note(checker *c, const char *msg) {
    if (c->report) c->report(msg, c->ctx);
}

/* done: the progress units before this entry (its bytes count one each). */
/* Checks an entry's data (its CRC-32, or its decoding); sets *data_crc to the CRC-32 its bytes give, where a
 * mismatch (MMZIP_ECRC) was found, for the comparison with the local header's. */
static int check_data(mmzip_t *h, mz_entry *e, uint64_t done, uint64_t total, uint32_t *data_crc) {
    mz_store *s = h->s;
    const uint8_t *p = s->map.base + e->data_off;
    if (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION) || e->method == 99)
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' is encrypted; its CRC cannot be checked", s->path,
                       (int)e->name_len, mz_name(s, e));
    if (e->method == 0 && h->progress && e->csize > MZ_PROGRESS_STEP) {
        /* A large entry reports as it goes; a mismatch is then checked again for mz_verify_crc's message. */
        uint32_t crc = 0;
        for (uint64_t k = 0; k < e->csize;) {
            uint64_t l = e->csize - k < MZ_PROGRESS_STEP ? e->csize - k : MZ_PROGRESS_STEP;
            crc = mz_crc32(crc, p + k, (size_t)l);
            k += l;
            h->progress(done + k, total, h->progress_ctx);
        }
        if (crc == e->crc) return MMZIP_OK;
    }
    if (e->method == 0) {
        *data_crc = mz_crc32(0, p, (size_t)e->csize);
        return mz_verify_crc(s, e, p, e->csize);
    }
    if (!mz_method_supported(e->method)) return mz_decode_other(s, e, NULL); /* names the method */
    if ((e->method == 8 && e->usize / 1032 > e->csize + 1) || e->usize > s->opts.max_decoded_size)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s' claims an impossible or oversized decoded size %llu",
                       s->path, (int)e->name_len, mz_name(s, e), (unsigned long long)e->usize);
    uint8_t *buf = malloc(e->usize ? e->usize : 1);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int st = mz_decode_entry(s, e, buf);
    if (st == MMZIP_ECRC) *data_crc = mz_crc32(0, buf, (size_t)e->usize);
    free(buf);
    return st;
}

/* The readers mmzip is tested against (tests/interop/test_check_verdict.py), as bits. */
enum { R_ZIPFILE = MZ_R_ZIPFILE, R_UNZIP = MZ_R_UNZIP, R_7ZIP = MZ_R_7ZIP, R_LIBZIP = MZ_R_LIBZIP, R_ALL = MZ_R_ALL };

/* The tag that ends an interop line: which readers object to the finding and how, and why in a few words,
 * as " {objects: unzip warns, libzip refuses: <why>}", or " {objects: none}" for a finding that none of them
 * objects to (the CLI's verdict "valid for every ZIP reader" is made from these tags). */
static void objects_tag(char *out, size_t len, unsigned refuse, unsigned warn, const char *why) {
    static const char *names[] = {"zipfile", "unzip", "7-Zip", "libzip"};
    size_t o = (size_t)snprintf(out, len, " {objects: ");
    int any = 0;
    for (int i = 0; i < 4 && o < len; i++) {
        unsigned bit = 1u << i;
        if (!((refuse | warn) & bit)) continue;
        o += (size_t)snprintf(out + o, len - o, "%s%s %s", any ? ", " : "", names[i],
                              refuse & bit ? "refuses it" : "warns");
        any = 1;
    }
    if (o < len) snprintf(out + o, len - o, any ? ": %s}" : "none}", why ? why : "");
}

/* "zipfile, unzip and libzip": the readers of a set of bits, for messages. */
static void reader_list(char *out, size_t len, unsigned bits) {
    static const char *names[] = {"Python zipfile", "Info-ZIP unzip 6.0", "7-Zip", "libzip"};
    unsigned n = 0, k = 0;
    for (int i = 0; i < 4; i++) n += (bits >> i) & 1;
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < 4 && o < len; i++) {
        if (!(bits & (1u << i))) continue;
        k++;
        o += (size_t)snprintf(out + o, len - o, "%s%s", k == 1 ? "" : k == n ? " and " : ", ", names[i]);
    }
}

static void interop_by(checker *c, unsigned refuse, unsigned warn, const char *why, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void interop_by(checker *c, unsigned refuse, unsigned warn, const char *why, const char *fmt, ...) {
    char msg[1800], tag[300];
    int n = snprintf(msg, sizeof msg, "interop: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - 300 - (size_t)n, fmt, ap);
    va_end(ap);
    objects_tag(tag, sizeof tag, refuse, warn, why);
    size_t used = strlen(msg);
    snprintf(msg + used, sizeof msg - used, "%s", tag);
    note(c, msg);
}

/* An error: line that also says which readers object to what mmzip cannot read (the verdict names them). */
static void problem_by(checker *c, int status, unsigned refuse, unsigned warn, const char *why) {
    if (c->report) {
        char msg[1600], tag[300];
        snprintf(msg, sizeof msg - 300, "error: %s", mmzip_last_error());
        objects_tag(tag, sizeof tag, refuse, warn, why);
        strncat(msg, tag, sizeof msg - strlen(msg) - 1);
        c->report(msg, c->ctx);
    }
    if (!c->first) c->first = status;
    c->problems++;
}

/* The readers that cannot decode a compression method (Debian 12: zipfile has stored, deflate, bzip2 and
 * LZMA; unzip 6.0 adds deflate64, shrink and implode but not LZMA; p7zip 16.02 has them all, and zstd, xz and
 * PPMd; libzip 1.7.3 has stored, deflate and bzip2). */
static unsigned method_refusers(unsigned m) {
    unsigned r = 0;
    if (m != 0 && m != 8 && m != 12 && m != 14) r |= R_ZIPFILE;
    if (m != 0 && m != 1 && m != 6 && m != 8 && m != 9 && m != 12) r |= R_UNZIP;
    if (m != 0 && m != 1 && m != 6 && m != 8 && m != 9 && m != 12 && m != 14 && m != 93 && m != 95 && m != 98)
        r |= R_7ZIP;
    if (m != 0 && m != 8 && m != 12) r |= R_LIBZIP;
    return r;
}

/* Who refuses an entry whose recorded size its compressed data does not decode to, told by the decoder's
 * message (read.c, decode.c): 7-Zip and libzip compare the sizes; zipfile reads to the end of the stream, so it
 * fails only where the data is longer than recorded (it stops at the recorded size and the CRC-32 then fails);
 * unzip reads both. An entry larger than mmzip may decode (max_decoded_size) is no other reader's concern.
 * 1 if the entry is such a case. */
static int decoded_size_objection(mz_store *s, mz_entry *e, const char *err, unsigned *refuse) {
    if (e->usize > s->opts.max_decoded_size) *refuse = 0;
    else if (strstr(err, "decodes to more than") || strstr(err, "longer than the recorded size"))
        *refuse = R_ZIPFILE | R_7ZIP | R_LIBZIP;
    else if (strstr(err, "fewer than the") || strstr(err, "impossible or oversized decoded size"))
        *refuse = R_7ZIP | R_LIBZIP;
    else return 0;
    return 1;
}

/* 7-Zip opens a file named like a ZIP only as a ZIP from its start, and so refuses one whose offsets do not
 * count the bytes before it; under any other name it looks for the archive inside (a self-extractor). */
static int named_as_zip(const char *path) {
    static const char *const ext[] = {".zip", ".zipx", ".jar", ".xpi", ".odt", ".ods", ".docx", ".xlsx", ".epub",
                                      ".ipa", ".apk", ".appx", ".z01"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && strcasecmp(path + n - k, ext[i]) == 0) return 1;
    }
    return 0;
}

static void recover_line(const char *msg, void *ctx) {
    checker *c = ctx;
    c->recover_lines++;
    char line[1400];
    snprintf(line, sizeof line, "recover: %s", msg);
    note(c, line);
}

/* Fields of the records that are wrong, and that mmzip reads past as zipfile does (central_dir.c, read.c):
 * one message each, through say(prefix + message). Under the store's read lock. tagged: check's interop: lines
 * (the readers' tag, and the fields only libzip compares); crc_failed (check only, else NULL): per entry, 1 if
 * its bytes failed the CRC-32 by the directory's method, 2 if so but they match its local header's. */
static void read_anomalies(mz_store *s, const char *prefix, mmzip_report_fn say, void *ctx, int tagged,
                           const uint8_t *crc_failed) {
    char msg[2300], tag[300];
    if (s->count_differs) {
        snprintf(msg, sizeof msg, "%s%s: the %s's entry count (%llu) is not the number of records in the central "
                 "directory (%u, %llu bytes): mmzip reads the records its size holds, as zipfile does; unzip and "
                 "7-Zip report an error", prefix, s->path, s->zip64 ? "ZIP64 end record" : "end record",
                 (unsigned long long)s->count_recorded, s->n_committed, (unsigned long long)s->cd_size);
        objects_tag(tag, sizeof tag, R_UNZIP | R_7ZIP | R_LIBZIP, 0, "the end record's entry count");
        if (tagged) strncat(msg, tag, sizeof msg - strlen(msg) - 1);
        say(msg, ctx);
    }
    if (s->comment_cut) {
        snprintf(msg, sizeof msg, "%s%s: central directory record %u's comment length runs %u byte%s past the "
                 "directory, into the end records: mmzip cuts that comment at the directory's end (zipfile takes "
                 "the end records' bytes for it); unzip warns (and refuses it where the comment would reach the end "
                 "of the file), 7-Zip and libzip refuse it", prefix, s->path,
                 s->comment_cut_rec, s->comment_cut, s->comment_cut == 1 ? "" : "s");
        /* unzip warns, and refuses once the comment would run to the end of the file. */
        uint64_t end = s->locate_end ? s->locate_end : s->file_size, after = end - (s->cd_pos + s->cd_size);
        int to_eof = s->comment_cut >= after;
        objects_tag(tag, sizeof tag, R_7ZIP | R_LIBZIP | (to_eof ? R_UNZIP : 0), to_eof ? 0 : R_UNZIP,
                    "an entry's comment length");
        if (tagged) strncat(msg, tag, sizeof msg - strlen(msg) - 1);
        say(msg, ctx);
    }
    if (s->comment_declared) {
        snprintf(msg, sizeof msg, "%s%s: the end record's comment length (%u) runs past the end of the file (%u "
                 "bytes of comment present): mmzip takes the bytes present, as zipfile and unzip do; 7-Zip and "
                 "libzip refuse it", prefix, s->path, s->comment_declared, s->comment_len);
        objects_tag(tag, sizeof tag, R_7ZIP | R_LIBZIP, 0, "the end record's comment length");
        if (tagged) strncat(msg, tag, sizeof msg - strlen(msg) - 1);
        say(msg, ctx);
    }
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        char why[1024], q[700];
        unsigned refuse, warn;
        const char *label;
        if (!mz_entry_anomaly(s, e, tagged, why, sizeof why, &refuse, &warn, &label)) continue;
        /* unzip decodes by the local header's method: where the bytes are that method's, it reads them. And it
         * checks them against the local header's CRC-32: where that one is right, the directory's is wrong,
         * and unzip does not mind. */
        if (crc_failed && crc_failed[i] &&
            (mz_get16(s->map.base + e->lfh_off + 8) != e->method || crc_failed[i] == 2))
            refuse &= ~(unsigned)R_UNZIP;
        mz_quote_name(q, sizeof q, mz_name(s, e), e->name_len);
        snprintf(msg, sizeof msg, "%s%s: entry '%.300s': %.1000s", prefix, s->path, q, why);
        objects_tag(tag, sizeof tag, refuse, warn, label);
        if (tagged) strncat(msg, tag, sizeof msg - strlen(msg) - 1);
        say(msg, ctx);
    }
}

static void interop_line(const char *msg, void *ctx) { note(ctx, msg); }

int mmzip_warnings(mmzip_t *h, mmzip_report_fn report, void *ctx) {
    if (!h || !report) return mz_fail(MMZIP_EINVAL, "mmzip_warnings: NULL argument");
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    read_anomalies(s, "warning: ", report, ctx, 0, NULL);
    pthread_rwlock_unlock(&s->rw);
    return MMZIP_OK;
}

/* What mmzip reads but some other reader refuses or reads differently. */
static void check_interop(checker *c, mz_store *s, const uint8_t *crc_failed) {
    read_anomalies(s, "interop: ", interop_line, c, 1, crc_failed);
    /* Each finding is tagged with the readers that object to it (docs/format.md, "What other readers
     * accept"), as observed on the archives of tests/interop/test_check_verdict.py. */
    uint64_t end = s->locate_end ? s->locate_end : s->file_size;
    uint64_t records = end - s->trailer_len;
    if (!s->writable && end < s->file_size)
        interop_by(c, R_LIBZIP, R_7ZIP, "bytes after the end records",
                   "%s: %llu bytes follow the end records (at %llu); 7-Zip warns of data after the archive, libzip "
                   "refuses it", s->path, (unsigned long long)(s->file_size - end), (unsigned long long)end);
    if (s->cd_pos + s->cd_size != records)
        interop_by(c, R_ZIPFILE | R_UNZIP | R_7ZIP, 0, "bytes between the directory and the end records",
                   "%s: the end records (at %llu) do not follow the central directory (%llu bytes at %llu): Python "
                   "zipfile takes the %llu bytes between them for data prepended to the archive and refuses it "
                   "(\"Bad magic number for central directory\"), unzip and 7-Zip refuse it too; libzip goes by "
                   "the recorded offset", s->path, (unsigned long long)records, (unsigned long long)s->cd_size,
                   (unsigned long long)s->cd_pos, (unsigned long long)(records - s->cd_pos - s->cd_size));
    if (s->zip64 && end >= 22u + s->comment_len) {
        /* Behind ZIP64 end records each field of the plain end record is its sentinel or, where it fits, the
         * value itself; unzip and 7-Zip take a plain field that is neither, and refuse the archive. */
        uint8_t eocd[22];
        if (mz_read_at(s, eocd, sizeof eocd, end - 22 - s->comment_len) == 0 && mz_get32(eocd) == MZ_SIG_EOCD) {
            static const struct { unsigned off, width; const char *what; } f[] = {
                {8, 2, "entry count on this disk"}, {10, 2, "entry count"}, {12, 4, "directory size"},
                {16, 4, "directory offset"}};
            uint64_t truth[] = {s->n_committed, s->n_committed, s->cd_size, s->cd_pos - s->prefix};
            for (unsigned k = 0; k < 4; k++) {
                uint64_t v = f[k].width == 2 ? mz_get16(eocd + f[k].off) : mz_get32(eocd + f[k].off);
                uint64_t sentinel = f[k].width == 2 ? 0xFFFFu : 0xFFFFFFFFu;
                if (v != sentinel && v != truth[k])
                    interop_by(c, R_UNZIP | R_7ZIP, 0, "the plain end record's fields",
                               "%s: the plain end record's %s is %llu: neither its sentinel (%llx, which sends readers "
                               "to the ZIP64 end record) nor the %llu the ZIP64 end record and the directory give; "
                               "mmzip, zipfile and libzip go by the ZIP64 end record, unzip and 7-Zip take the plain "
                               "field and refuse the archive", s->path, f[k].what, (unsigned long long)v,
                               (unsigned long long)sentinel, (unsigned long long)truth[k]);
            }
        }
    }
    /* The slack below the directory (protocol.md §3.1) is a hole that no reader looks at. */
    mz_recovery_plan plan;
    int slack_ours = s->slack_hole && mz_plan_recovery(s, &plan, NULL, NULL) == MMZIP_OK && plan.ours;
    if (s->cd_pos > s->data_end && s->n_committed && !slack_ours)
        interop_by(c, 0, 0, NULL, "%s: %llu bytes no entry refers to lie between the last entry (ending at %llu) and "
                   "the central directory (removed entries, or an interrupted relocation): readers that go by the "
                   "directory ignore them, readers that scan local headers in order may not", s->path,
                   (unsigned long long)(s->cd_pos - s->data_end), (unsigned long long)s->data_end);
    if (s->prefix) {
        /* Under a ZIP's name 7-Zip reads from the file's start, where another archive may begin (a ZIP in an
         * archive comment): it reads that one then, as libzip may. */
        int z7 = s->zip64 || (named_as_zip(s->path) && !(s->map.base && mz_get32(s->map.base) == MZ_SIG_LFH));
        interop_by(c, R_LIBZIP | (z7 ? R_7ZIP : 0), R_UNZIP, "bytes before the "
                   "archive that its offsets do not count",
                   "%s: %llu bytes precede the archive (a self-extractor stub, or bytes prepended after it was "
                   "written); the directory's offsets do not count them: zipfile corrects for them, unzip too with "
                   "a warning, libzip refuses the archive (or reads another one found in those bytes)%s", s->path,
                   (unsigned long long)s->prefix,
                   s->zip64 ? ", and 7-Zip refuses it behind ZIP64 end records"
                   : z7 ? ", and 7-Zip refuses it under a ZIP's name (it reads it as a self-extractor under "
                          "another, such as .exe)" : "");
    }
    uint64_t first = mz_first_lfh_off(s);
    /* 7-Zip looks for the first local header in the first 8 MiB of the file only (measured: 8,388,608
     * bytes before it open, 8,388,688 do not). */
    int z7_lost = s->n_committed && first > s->prefix && first - s->prefix > (UINT64_C(1) << 23);
    if (s->n_committed && first > s->prefix)
        interop_by(c, z7_lost ? R_7ZIP : 0, z7_lost ? 0 : R_7ZIP, "bytes before the first local header",
                   "%s: %llu bytes before the first entry's local header (%s); the offsets count them, so zipfile, "
                   "unzip and libzip read the archive, and 7-Zip %s", s->path, (unsigned long long)(first - s->prefix),
                   first >= MZ_LFH_FIXED && s->map.base && mz_lfh_sig_or_cleared(s->map.base + s->prefix)
                       ? "the dead local headers of entries replaced or removed since"
                       : "a self-extractor stub whose offsets were adjusted, or other bytes",
                   z7_lost ? "refuses it: it looks for the first entry in the file's first 8 MiB only (\"Cannot open "
                             "the file as [zip] archive\"); 'mmzip pack' rewrites the archive without them"
                           : "warns \"The archive is open with offset\"");
    if (s->n_committed && first > s->prefix && mz_dead_start_pending(s))
        interop_by(c, R_7ZIP, 0, "dead local headers that keep their signature",
                   "%s: dead local headers before the first entry keep their signature (a writer stopped between "
                   "its commit and clearing them): 7-Zip takes them for members and refuses the archive (\"Headers "
                   "Error\"); 'mmzip recover', or the next writable open, clears them", s->path);
    if (s->n_committed == 0 && s->cd_pos > 0)
        interop_by(c, R_UNZIP | R_7ZIP, 0, "an empty directory after other bytes",
                   "%s: the archive has no entries, and its end record follows %llu bytes that are not an entry "
                   "(entries removed): unzip and 7-Zip refuse it; zipfile and libzip read an empty archive",
                   s->path, (unsigned long long)s->cd_pos);
    else if (s->n_committed == 0)
        /* Not an objection: unzip says what the archive is, and every reader reads it as empty. */
        interop_by(c, 0, 0, NULL,
                   "%s: the archive has no entries: every reader reads it as empty; unzip -t says \"zipfile is "
                   "empty\" with exit status 1 (its status for warnings), which scripts may take for a failure",
                   s->path);
    if (s->count_wrapped)
        interop_by(c, 0, R_7ZIP, "a 16-bit entry count that wrapped",
                   "%s: %u entries, recorded in the end record's 16-bit count as %u (it wrapped: no ZIP64 end "
                   "records); mmzip, zipfile, unzip and libzip go by the directory's size, 7-Zip too with a warning "
                   "(\"16-bit overflow for number of files\"), readers that trust the count see %u", s->path,
                   s->n_committed, s->n_committed & 0xFFFFu, s->n_committed & 0xFFFFu);
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        char q[1300];
        if (e->mark & MZ_MARK_NONAME) {
            mz_quote_name(q, sizeof q, mz_name(s, e), e->name_len);
            interop_by(c, 0, 0, NULL, "%s: entry %u's name '%s' is %s: mmzip cannot look it up and does not list "
                    "it (zipfile cuts a name at its NUL); it is kept", s->path, i, q,
                    e->name_len == 0 ? "empty" : "cut short by a NUL byte");
            continue;
        }
        if (!(e->mark & MZ_MARK_BAD) && mz_lookup(s, mz_name(s, e), e->name_len, 0) != e &&
            !(e->mark & MZ_MARK_SHADOWED)) {
            mz_quote_name(q, sizeof q, mz_name(s, e), e->name_len);
            interop_by(c, R_LIBZIP, 0, "a name that appears twice",
                       "%s: entry '%s' appears more than once; mmzip, zipfile and zarr read the last one, unzip and "
                       "7-Zip list both, libzip refuses the archive", s->path, q);
        }
        if (e->name_len >= 4096) {
            /* Info-ZIP's buffer for a name holds 4,095 bytes and its NUL. */
            mz_quote_name(q, sizeof q, mz_name(s, e), e->name_len);
            interop_by(c, 0, R_UNZIP, "a name of 4,096 bytes or more",
                       "%s: entry '%.200s...' has a name of %u bytes: unzip cuts it at 4,095 (\"filename too "
                       "long--truncating\") and ends with a warning status; zipfile, 7-Zip and libzip read it", s->path,
                       q, e->name_len);
        }
        if (method_refusers(e->method) && mz_method_supported(e->method)) {
            mz_quote_name(q, sizeof q, mz_name(s, e), e->name_len);
            char who[200];
            reader_list(who, sizeof who, method_refusers(e->method));
            interop_by(c, method_refusers(e->method), 0, "a compression method it lacks",
                       "%s: entry '%s' uses compression method %u (%s), which %s cannot decode", s->path, q,
                       e->method, mmzip_method_name(e->method), who);
        }
    }
}

static void recover_say(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void recover_say(checker *c, const char *fmt, ...) {
    char msg[1300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    recover_line(msg, c);
}

static int recover_marked(mz_store *s, mz_entry *e, const char *how, void *ctx) {
    checker *c = ctx;
    if (mz_writer_lock_held(s->fd) == 1)
        recover_say(c, "none for entry '%.*s' while its writer is at work: it is being modified in place now (%s), "
                    "and that writer's next commit refreshes its CRC-32", (int)e->name_len, mz_name(s, e), how);
    else
        recover_say(c, "keep entry '%.*s' as the writer that was modifying it in place (%s) left it when it was "
                    "killed - its values may hold only part of that writer's changes - recompute its CRC-32 over "
                    "those bytes, and remove the marker", (int)e->name_len, mz_name(s, e), how);
    return 0;
}

/* The dry run of what recovery does with unfinished in-place edits (journal.c's undo journal and marker
 * file), each named, so that the CRC mismatch they cause has its "recover:" line. */
static void check_unfinished(checker *c, mz_store *s) {
    mz_entry *e;
    uint64_t jbytes;
    char jpath[4200];
    snprintf(jpath, sizeof jpath, "%s.mmzip-undo", s->path);
    if (mz_journal_pending(s, &e, &jbytes) && e) {
        if (mz_edit_lock_held(s, e->lfh_off))
            recover_say(c, "none for entry '%.*s' while its editor is at work: it is being edited in place now "
                        "(undo journal %s); its readers wait until that writer closes it", (int)e->name_len,
                        mz_name(s, e), jpath);
        else
            recover_say(c, "restore entry '%.*s' to its last commit (%llu bytes, crc %08x) from the undo journal %s "
                        "(%llu bytes), left by an in-place edit whose writer was killed before it published",
                        (int)e->name_len, mz_name(s, e), (unsigned long long)e->usize, e->crc, jpath,
                        (unsigned long long)jbytes);
    } else if (access(jpath, F_OK) == 0) {
        recover_say(c, "remove the undo journal %s, which restores nothing (its edit published, or changed no "
                    "committed byte, before its writer died); the archive itself is not changed", jpath);
    }
    if (mz_marked_each(s, recover_marked, c) < 0)
        recover_say(c, "none until the in-place marker file is dealt with: %s", mmzip_last_error());
    /* A marker file of another archive (this one was replaced or copied since) names nothing here; recovery
     * removes it, and says so: so does the dry run. */
    char *marks = mz_marks_path(s->path, 0);
    uint8_t *buf = NULL;
    size_t len;
    if (marks && mz_marks_read(s, marks, &buf, &len) == MMZIP_ESTALE)
        recover_say(c, "remove the in-place marker file %s, which belongs to another file (the archive was replaced "
                    "or copied since): nothing to refresh; the archive itself is not changed", marks);
    if (buf) free(buf);
    free(marks);
}

int mmzip_check(mmzip_t *h, mmzip_report_fn report, void *ctx) {
    if (!h) return mz_fail(MMZIP_EINVAL, "mmzip_check: NULL handle");
    mz_store *s = h->s;
    checker c = {report, ctx, 0, 0, 0};
    pthread_rwlock_rdlock(&s->rw);
    uint8_t *crc_failed = calloc(s->n_committed ? s->n_committed : 1, 1);
    uint64_t total = 0, done = 0;
    if (h->progress)
        for (uint32_t i = 0; i < s->n_committed; i++) total += s->e[i].csize;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        uint64_t before = done;
        done += e->csize;
        if (h->progress) h->progress(before, total, h->progress_ctx);
        if (e->mark & MZ_MARK_SHADOWED) continue; /* the writer's replaced entries: not in the next directory */
        if (mz_resolve_data(s, e) != MMZIP_OK) {
            const uint8_t *lh = s->map.base + e->lfh_off;
            if (e->lfh_off + MZ_LFH_FIXED + e->name_len <= s->file_size && mz_get32(lh) == MZ_SIG_LFH &&
                (mz_get16(lh + 26) != e->name_len || memcmp(lh + MZ_LFH_FIXED, mz_name(s, e), e->name_len) != 0))
                /* zipfile refuses the entry; unzip goes by the directory's name, with a warning. */
                problem_by(&c, MMZIP_ECORRUPT, R_ZIPFILE | R_LIBZIP, R_UNZIP, "a local header that names "
                           "another entry");
            else if (strstr(mmzip_last_error(), "overlaps what follows"))
                problem_by(&c, MMZIP_ECORRUPT, R_ALL, 0, "an entry that runs into the next");
            else
                problem(&c, MMZIP_ECORRUPT);
            continue;
        }
        uint32_t data_crc = 0;
        int st = check_data(h, e, before, total, &data_crc);
        const char *err = mmzip_last_error();
        unsigned refuse = 0;
        if (st == MMZIP_ECRC) {
            /* unzip checks the bytes against the local header's CRC-32 (a mismatch with the directory's alone
             * does not stop it), and goes by a local header's method where it differs from the directory's, and
             * may read bytes that are right for that method. */
            const uint8_t *lh = s->map.base + e->lfh_off;
            int local_right = !(mz_get16(lh + 6) & MZ_FLAG_DATA_DESCRIPTOR) && mz_get32(lh + 14) == data_crc;
            if (crc_failed) crc_failed[i] = local_right ? 2 : 1;
            problem_by(&c, st, R_ALL & ~(mz_get16(lh + 8) != e->method || local_right ? R_UNZIP : 0), 0,
                       "a CRC-32 that does not match");
        }
        else if (st && (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION) || e->method == 99))
            problem_by(&c, st, R_ALL, 0, "an encrypted entry (no password given)");
        else if (st && !mz_method_supported(e->method))
            problem_by(&c, st, method_refusers(e->method), 0, "a compression method it lacks");
        else if (st == MMZIP_ECORRUPT && e->method != 0 && decoded_size_objection(s, e, err, &refuse))
            problem_by(&c, st, refuse, 0, "a recorded size the data does not have");
        else if (st == MMZIP_ECORRUPT && e->method != 0)
            problem_by(&c, st, R_ALL, 0, "a corrupt compressed stream");
        else if (st)
            problem(&c, st);
    }
    if (h->progress) h->progress(total, total, h->progress_ctx);
    check_interop(&c, s, crc_failed);
    free(crc_failed);
    if (!s->writable) {
        /* The dry run: what a writable open (or mmzip recover) would do to the file as it is. */
        mz_recovery_plan plan;
        check_unfinished(&c, s);
        if (mz_plan_recovery(s, &plan, recover_line, &c) == MMZIP_OK) {
            /* What the repair of an mmzip file (not a foreign one, which is kept as it is) also does. */
            if (!plan.hold && (plan.ours || plan.cut || plan.move_directory) && mz_dead_start_pending(s))
                recover_say(&c, "neutralize the signature of the dead local header(s) before the first live "
                            "entry (entries replaced or removed by the last commits), so that readers that scan "
                            "local headers from the start skip them; no committed entry is touched");
            /* A writer killed before its close left the slack it kept for its next commits. */
            uint64_t slack = plan.hold || plan.cut || plan.move_directory || mz_writer_lock_held(s->fd) == 1
                                 ? 0 : mz_settle_would_remove(s);
            if (slack)
                recover_say(&c, "remove the %llu bytes of free slack below the directory (room a writer that did not "
                            "close kept for its next commits): the directory moves down behind the last entry; no "
                            "entry is touched", (unsigned long long)slack);
            if (!c.recover_lines) note(&c, "recover: nothing to do");
            /* Bytes after the last commit's end records: readable (the scan-back finds the commit) but not
             * an archive at rest until repaired. A relocated directory is a state every crash of a writer
             * may leave, which mmzip's readers read as the last commit: other readers refuse it, so it is
             * an interop finding, not an error. */
            if (plan.cut) {
                mz_fail(MMZIP_ECORRUPT, "%s: %llu bytes follow the last commit's end records (an interrupted mmzip "
                        "write); 'mmzip recover' removes them", s->path,
                        (unsigned long long)(s->file_size - s->locate_end));
                problem(&c, MMZIP_ECORRUPT);
            } else if (plan.move_directory && !s->concat && s->cd_pos + s->cd_size !=
                       (s->locate_end ? s->locate_end : s->file_size) - s->trailer_len) {
                /* The readers' objection is on the line about the bytes between them (check_interop). */
                interop_by(&c, 0, 0, NULL, "%s: the end records point back at a directory they do not follow (an "
                           "interrupted mmzip relocation); 'mmzip recover' moves it back", s->path);
            }
        }
    }
    pthread_rwlock_unlock(&s->rw);
    if (c.first)
        mz_fail(c.first, "%s: %u problem%s found", s->path, c.problems, c.problems == 1 ? "" : "s");
    return c.first;
}
