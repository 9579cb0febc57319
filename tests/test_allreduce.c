/* The allreduce microbenchmark (peaks/comm, bin/allreduce): nccl-tests' bus
 * bandwidth factor, the exact sums every rank checks, the latency and
 * plateau read off a curve, and under `mpirun -np 2` a short sweep whose
 * every size is checked and whose peaks rows are in peaks.csv's schema. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../peaks/comm/allreduce.h"
#include "helpers.h"

Test(allreduce, bus_factor_as_nccl_tests)
{
    cr_expect_eq(allreduce_bus_factor(1), 0.0);
    cr_expect_eq(allreduce_bus_factor(2), 1.0);
    cr_expect_float_eq(allreduce_bus_factor(8), 1.75, 1e-12);
    cr_expect_float_eq(allreduce_bus_factor(64), 2.0 * 63 / 64, 1e-12);
}

Test(allreduce, expected_sums_are_exact)
{
    float t[8];
    allreduce_expected_table(2, t);
    for (int j = 0; j < 8; j++)
        cr_expect_eq(t[j], allreduce_fill(0, j) + allreduce_fill(1, j), "element %d", j);
    allreduce_expected_table(1000, t);
    double sum = 0;
    for (int r = 0; r < 1000; r++)
        sum += allreduce_fill(r, 5);
    cr_expect_eq(t[5], (float)sum);
    cr_expect_eq((double)t[5], sum, "exact in fp32");
}

Test(allreduce, latency_and_plateau_of_a_curve)
{
    allreduce_point pts[12];
    allreduce_curve c = {.points = pts, .n = 12};
    for (int i = 0; i < 12; i++) {
        int64_t b = (int64_t)1024 << (2 * i); /* 1 KiB .. 4 GiB in steps of 4 */
        double t_us = 5.0 + b / 2e9 * 1e6;    /* 5 us + 2 GB/s */
        pts[i] = (allreduce_point){.bytes = b, .iters = 3, .time_us = t_us,
                                   .algbw_gbs = b / (t_us * 1e-6) / 1e9, .correct = true};
        pts[i].busbw_gbs = pts[i].algbw_gbs * allreduce_bus_factor(2);
    }
    allreduce_summary s = allreduce_summarise(&c);
    cr_expect_float_eq(s.latency_us, 5.0 + 1024 / 2e9 * 1e6, 1e-9);
    cr_expect_eq(s.latency_bytes, 1024);
    /* sizes of at least 4 GiB / 16 = 256 MiB: 256 MiB, 1 GiB, 4 GiB */
    cr_expect_eq(s.plateau_from_bytes, (int64_t)256 << 20);
    cr_expect(s.plateau_gbs > 1.99 && s.plateau_gbs < 2.0, "%g", s.plateau_gbs);
    cr_expect(!s.plateau_is_algbw);
}

#ifdef HAVE_MPI
#define MPIRUN_2                                                                              \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 100 mpirun "             \
    "--oversubscribe --bind-to none -np 2"

Test(allreduce, two_ranks_sweep_checked_and_peaks_rows, .timeout = 120)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    int status = sh("cd '%s' && " MPIRUN_2 " %s/allreduce --transport mpi --quick --max-bytes 1M "
                    "--env t2 --out curve.csv --peaks-out rows.csv >out.txt 2>err.txt",
                    dir, ROOFLINE_BIN_DIR);
    cr_assert_eq(status, 0, "%s", read_text(dir, "err.txt"));
    char *curve = read_text(dir, "curve.csv");
    cr_expect_eq(count_lines(curve), 1 + 11, "1 KiB .. 1 MiB:\n%s", curve);
    cr_expect(strstr(curve, ",no\n") == NULL, "every size checked right:\n%s", curve);
    cr_expect(strstr(curve, "\nt2,mpi,2,1,fp32,1024,") != NULL, "%s", curve);
    char *rows = read_text(dir, "rows.csv");
    cr_expect(strncmp(rows, "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,"
                            "notes\nt2,cpu,allreduce,", 80) == 0, "%s", rows);
    cr_expect(strstr(rows, "\nt2,cpu,allreduce_latency,") != NULL, "%s", rows);
    cr_expect_eq(count_lines(rows), 3, "%s", rows);
    remove_temp_dir(dir);
}

/* Rank 1 stops answering (SIGSTOP 3 s in: MPI's start and the first sizes
 * take well under that; the sweep to 1 GiB about 18 s on 2 cores): rank 0
 * gives up after --timeout with one line, and the sizes it had measured stay
 * in --out. */
Test(allreduce, a_lost_peer_keeps_the_sizes_measured, .timeout = 120)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    int status = sh("cd '%s' && " MPIRUN_2 " sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; "
                    "then (sleep 3; kill -STOP $$) & fi; exec %s/allreduce --transport mpi "
                    "--max-bytes 1G --timeout 1 --out curve.csv --peaks-out rows.csv' "
                    ">out.txt 2>err.txt",
                    dir, ROOFLINE_BIN_DIR);
    char *err = read_text(dir, "err.txt");
    cr_expect(status != 0 && status != 124, "exit %d: %s", status, err);
    cr_expect(strstr(err, "allreduce: rank 0 of 2 (") &&
                  strstr(err, "): no answer from the other ranks for 1 s while ") &&
                  strstr(err, ": a peer rank died or hangs (the limit is --timeout)"),
              "%s", err);
    cr_expect(!strstr(err, "rank 0 of 2: rank 0 of 2"), "%s", err);
    char *curve = read_text(dir, "curve.csv");
    int sizes = count_lines(curve) - 1;
    cr_expect(sizes >= 1 && sizes < 21, "1 KiB .. 1 GiB, cut short:\n%s", curve);
    char said[128];
    snprintf(said, sizeof said, "the %d size(s) measured before it are in curve.csv", sizes);
    cr_expect(strstr(err, said), "%s", err);
    cr_expect_eq(sh("test -e '%s/rows.csv'", dir), 1, "no peaks rows from a cut curve");
    remove_temp_dir(dir);
}
#endif

Test(allreduce, bad_options)
{
    expect_usage_error("allreduce --max-bytes 3", "--max-bytes: '3' is not a size");
    expect_usage_error("allreduce --transport tcp", "--transport: unknown 'tcp'");
    expect_usage_error("allreduce --min-bytes 1M --max-bytes 1K", "--min-bytes: 1048576 is above");
}
