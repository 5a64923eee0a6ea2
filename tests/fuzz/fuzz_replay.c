/*
 * fuzz_replay - runs the fuzz target over files, without libFuzzer: the regression test of the corpus.
 *
 *   usage: fuzz_replay FILE|DIRECTORY...
 *
 * Directories are read one level deep, in name order. Each file is one input. A crash or a broken
 * invariant aborts (the test fails); otherwise prints how many inputs ran and exits 0.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "fuzz_replay: %s: out of memory\n", path);
        return -1;
    }
    fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay FILE|DIRECTORY...\n");
        return 2;
    }
    unsigned long count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0) return 1;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        for (struct dirent *de; (de = readdir(d));) {
            if (de->d_name[0] == '.') continue;
            if (n == cap) names = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            names[n++] = strdup(de->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, by_name);
        for (size_t k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (replay_file(path) != 0) return 1;
                count++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("fuzz_replay: %lu inputs replayed without a crash or a broken invariant\n", count);
    return count ? 0 : 1;
}
