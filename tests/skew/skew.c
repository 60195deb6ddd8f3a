/*
 * Shifts the wall clock of the process it is preloaded into (LD_PRELOAD) by
 * ORRERY_CLOCK_SKEW_SECONDS (negative: behind), leaving the monotonic clocks alone: a machine
 * whose clock is set wrong. Tests run runners under it to show that expiry never depends on
 * how two machines' clocks agree (fault case 17; docs/reliability.md). Built by
 * tests/src/skew.rs with the C compiler Rust already needs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long skew_seconds(void) {
    static long skew;
    static int read;
    if (!read) {
        const char *s = getenv("ORRERY_CLOCK_SKEW_SECONDS");
        skew = s ? strtol(s, NULL, 10) : 0;
        read = 1;
    }
    return skew;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (!real) {
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    }
    int r = real(id, ts);
    if (r == 0 && ts && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        ts->tv_sec += skew_seconds();
    }
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    static int (*real)(struct timeval *, void *);
    if (!real) {
        real = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
    }
    int r = real(tv, tz);
    if (r == 0 && tv) {
        tv->tv_sec += skew_seconds();
    }
    return r;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return (time_t)-1;
    }
    if (out) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
