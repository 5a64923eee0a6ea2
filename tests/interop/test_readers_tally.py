#!/usr/bin/env python3
"""The readers benchmark counts only the polls that overlap the writer's run.

Pollers start before the writer and wait for each other (zarr takes seconds to load), so from an empty archive
libzip polled 22 bytes thousands of times before the first put; counted, those polls made the failure rate from
an empty archive look 15 times lower than from no file. Here the tally is fed polls before, during and after a
writer's logged steps, and must count the ones that overlap them, and only those. Also: zipfile's own window
as its polls report it, and the fewest size changes a session-per-put writer can make (the floor the benchmark
prints beside each cell's size changes)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readers_during_append as rda  # noqa: E402

# The writer's log: (t_start, t_end, what, size before, size after), as read_log returns it.
ops = [(10.0, 10.5, "session.grew", 0, 100), (11.0, 12.0, "session.kept", 100, 100)]
polls = ["1.000000 1.001000 ok"] * 1000 + [          # before the writer: not counted
    "9.900000 10.100000 ok",                          # overlaps the first step: counted
    "10.600000 10.700000 fail BadZipFile: Bad magic number for central directory",
    "10.700000 10.800000 ok",
    "11.900000 12.100000 fail zip_open: Not a zip archive",  # overlaps the last step: counted
    "12.200000 12.300000 ok",                         # after: not counted
]
t = rda.tally(polls, ops)
assert t["polls"] == 4, t
assert t["ok"] == 2 and t["fail"] == 2, t
assert t["outside"] == 1001, t
assert len(t["bursts"]) == 2, t["bursts"]
assert abs(t["poll_seconds"] - 0.6) < 1e-9, t["poll_seconds"]
# A wrong byte is never allowed, so it is counted even outside the writer's run.
t = rda.tally(["1.000000 1.001000 wrong k/0000001.5 (size 4, expected 5)"] + polls, ops)
assert t["wrong"] == 1 and t["polls"] == 4 and t["outside"] == 1002, t
# zipfile's polls carry its own window (SizeThenTail): summed over the counted polls that report one.
t = rda.tally(polls[:1000] + ["10.600000 10.700000 ok window=0.000040", "10.700000 10.800000 ok window=0.000060"] +
              polls[1000:], ops)
assert t["own_window_polls"] == 2 and abs(t["own_window_seconds"] - 0.0001) < 1e-12, t
assert t["polls"] == 6 and t["ok"] == 4, t
# The fewest size changes a session-per-put writer keeping the at-rest allowance makes: from no file, 70,000
# bytes do not fit in 64 KiB (a change), ten entries of 1,000 then fit in the 64 KiB that growth may leave, and
# 70,000 more do not (a second change); put first, the small ones fit in the room of the archive at rest.
big, small = "k/%07d.70000", "k/%07d.1000"
check = rda.forced_size_changes
assert check(0, [big % 0] + [small % i for i in range(1, 11)] + [big % 11]) == 2
assert check(0, [small % i for i in range(10)]) == 0
assert check(0, [small % i for i in range(70)]) == 1  # 70 of them outgrow 64 KiB
# 10 MiB at rest leaves room for 100 KiB: one entry of 70,000 fits, the second does not.
assert check(10 << 20, [big % 0, big % 1]) == 1
print("ok: 4 polls counted, 1001 outside the writer's run; a wrong byte outside it counted")
