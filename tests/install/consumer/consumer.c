/*
 * consumer - a program built against an installed mmzip, as a user's would be: writes one entry into a new
 * archive, reads it back through a fresh read-only open and compares the bytes.
 *
 *   usage: consumer ARCHIVE
 *
 * Prints "consumer: mmzip VERSION, N bytes verified" and exits 0, or exits 1 with the library's message.
 */
#include <mmzip.h>

#include <stdio.h>
#include <string.h>

static const char payload[] = "written by an installed libmmzip consumer";

static int fail(const char *what, int status) {
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, mmzip_last_error(), mmzip_strerror(status));
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: consumer ARCHIVE\n");
        return 2;
    }
    mmzip_t *h;
    int st = mmzip_open(argv[1], "w", NULL, &h);
    if (st) return fail("open for writing", st);
    st = mmzip_put(h, "consumer/entry.txt", payload, sizeof payload - 1, 0);
    if (st) return fail("put", st);
    st = mmzip_close(h);
    if (st) return fail("close", st);

    st = mmzip_open(argv[1], "r", NULL, &h);
    if (st) return fail("open for reading", st);
    const void *data;
    uint64_t size;
    st = mmzip_get(h, "consumer/entry.txt", &data, &size);
    if (st) return fail("get", st);
    if (size != sizeof payload - 1 || memcmp(data, payload, size) != 0) {
        fprintf(stderr, "consumer: read back %llu bytes that differ from what was written\n",
                (unsigned long long)size);
        return 1;
    }
    mmzip_close(h);
    printf("consumer: mmzip %s, %llu bytes verified\n", mmzip_version(), (unsigned long long)size);
    return 0;
}
