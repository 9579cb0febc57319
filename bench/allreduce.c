/* bin/allreduce: the allreduce curve of this machine's ranks, 1 KiB to 1 GiB,
 * over MPI (host buffers) or NCCL (one GPU per rank), run under mpirun or
 * srun (alone: one rank). Every size is checked for the exact sum; algbw and
 * busbw as nccl-tests defines them; the small-message latency and the
 * bandwidth plateau as peaks.csv rows (peaks/comm/). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../peaks/comm/allreduce.h"
#include "cli.h"
#ifdef HAVE_CUDA
#include "../models/cuda/cuda_backend.h"
#endif

static const char *const prog = "allreduce";

typedef struct {
    allreduce_options run;
    const char *transport;      /* mpi, nccl, auto */
    const char *env, *out, *peaks_out;
    double timeout_s;
    bool device_given;
} options;

static void print_help(void)
{
    printf("usage: allreduce [--transport mpi|nccl|auto] [--min-bytes B] [--max-bytes B]\n"
           "                 [--factor F] [--warmup W] [--quick] [--device D] [--timeout S]\n"
           "                 [--env NAME] [--out allreduce.csv] [--peaks-out FILE]\n"
           "Times fp32 allreduce (sum) from --min-bytes (default 1K) to --max-bytes (default\n"
           "1G; K, M, G are powers of 1024) in steps of --factor (default 2) on every rank\n"
           "of mpirun/srun (alone: one rank), about 0.2 s per size (--quick: 0.02 s and up\n"
           "to 64M); checks every element of every result. MPI: host buffers and\n"
           "MPI_Iallreduce, as the DDP module's host transport; NCCL: device buffers, one\n"
           "GPU per rank (the rank on the node, or --device). auto (default): NCCL where\n"
           "a GPU opens, else MPI. Prints nccl-tests' columns: algbw = bytes / time, busbw =\n"
           "algbw x 2(n-1)/n. --out: the whole curve; --peaks-out: rows in peaks.csv's\n"
           "schema (ceilings allreduce, the busbw plateau, and allreduce_latency, the\n"
           "smallest size's time) for the runner to append to peaks.csv. A wait for the\n"
           "other ranks longer than --timeout seconds (default 60; 10 x that to create the\n"
           "NCCL communicator) ends the run; --out then holds the sizes measured before\n"
           "it, if any (and --peaks-out nothing).\n");
}

/* 1024, 64K, 1M, 1G: at most 4G, checked before the multiplication can
 * overflow */
static int64_t parse_bytes(const char *option, const char *text)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    int64_t unit = 1;
    if (*end == 'K' || *end == 'k')
        unit = 1 << 10, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1 << 20, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1 << 30, end++;
    const int64_t max = (int64_t)4 << 30;
    bool ok = isdigit((unsigned char)*text) && !*end && errno == 0 && v > 0 && v <= max / unit &&
              (v * unit) % 4 == 0;
    if (!ok)
        cli_usage_error(prog, "%s: '%s' is not a size of 4 bytes to 4G in multiples of 4 (K, "
                              "M, G: powers of 1024)", option, text);
    return (int64_t)v * unit;
}

static const char *out_file(const char *option, const char *text)
{
    return cli_output_file(prog, option, text);
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"transport", required_argument, 0, 't'}, {"min-bytes", required_argument, 0, 'b'},
        {"max-bytes", required_argument, 0, 'e'}, {"factor", required_argument, 0, 'f'},
        {"warmup", required_argument, 0, 'w'},    {"quick", no_argument, 0, 'q'},
        {"device", required_argument, 0, 'D'},    {"timeout", required_argument, 0, 'T'},
        {"env", required_argument, 0, 'E'},       {"out", required_argument, 0, 'o'},
        {"peaks-out", required_argument, 0, 'p'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--transport, --min-bytes, --max-bytes, --factor, --warmup, --quick, "
                           "--device, --timeout, --env, --out, --peaks-out";
    options o = {.run = {.min_bytes = 1 << 10, .max_bytes = (int64_t)1 << 30, .factor = 2,
                         .warmup = 5, .target_s = 0.2},
                 .transport = "auto", .env = "local", .timeout_s = 60};
    bool max_given = false, quick = false;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (strcmp(optarg, "mpi") && strcmp(optarg, "nccl") && strcmp(optarg, "auto"))
                cli_usage_error(prog, "--transport: unknown '%s' (accepted: mpi, nccl, auto)",
                                optarg);
            o.transport = optarg;
            break;
        case 'b': o.run.min_bytes = parse_bytes("--min-bytes", optarg); break;
        case 'e':
            o.run.max_bytes = parse_bytes("--max-bytes", optarg);
            max_given = true;
            break;
        case 'f': o.run.factor = cli_int_option(prog, "--factor", optarg, 2, 16); break;
        case 'w': o.run.warmup = cli_int_option(prog, "--warmup", optarg, 0, 1000); break;
        case 'q': quick = true; break;
        case 'D':
            o.run.device = cli_int_option(prog, "--device", optarg, 0, 63);
            o.device_given = true;
            break;
        case 'T': o.timeout_s = cli_int_option(prog, "--timeout", optarg, 1, 3600); break;
        case 'E': o.env = cli_name_option(prog, "--env", optarg); break;
        case 'o': o.out = out_file("--out", optarg); break;
        case 'p': o.peaks_out = out_file("--peaks-out", optarg); break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    if (quick) {
        o.run.target_s = 0.02;
        o.run.warmup = o.run.warmup < 2 ? o.run.warmup : 2;
        if (!max_given)
            o.run.max_bytes = (int64_t)64 << 20;
    }
    if (o.run.min_bytes > o.run.max_bytes)
        cli_usage_error(prog, "--min-bytes: %lld is above --max-bytes %lld",
                        (long long)o.run.min_bytes, (long long)o.run.max_bytes);
    if (o.out && o.peaks_out && !strcmp(o.out, o.peaks_out))
        cli_usage_error(prog, "--peaks-out: '%s' is also --out", o.out);
    return o;
}

/* auto: NCCL where this build has it and a GPU opens. */
static comm_transport choose_transport(const options *o, int *devices_seen)
{
    bool nccl_built = false;
    int devices = 0;
    char why[200] = "this build has no CUDA";
#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)
    nccl_built = true;
    devices = cuda_device_count(why, sizeof why);
#endif
    *devices_seen = devices;
    if (!strcmp(o->transport, "mpi"))
        return COMM_MPI;
    if (!strcmp(o->transport, "nccl")) {
        if (!nccl_built)
            cli_usage_error(prog, "--transport: nccl: this build has no NCCL (nccl.h was not "
                                  "found when it was built)");
        if (devices == 0)
            cli_usage_error(prog, "--transport: nccl: no CUDA device (%s)", why);
        return COMM_NCCL;
    }
    return nccl_built && devices > 0 ? COMM_NCCL : COMM_MPI;
}

static void print_curve(const ddp_world *w, const char *transport, const allreduce_curve *c,
                        const allreduce_summary *s)
{
    printf("# allreduce fp32 sum over %s, %d rank(s) on %d node(s); busbw = algbw x %.3f\n",
           transport, w->size, w->nodes, allreduce_bus_factor(w->size));
    printf("#%13s %12s %7s %12s %10s %10s %7s\n", "size (B)", "count", "iters", "time (us)",
           "algbw GB/s", "busbw GB/s", "check");
    for (int i = 0; i < c->n; i++) {
        const allreduce_point *p = &c->points[i];
        printf("%14lld %12lld %7d %12.2f %10.3f %10.3f %7s\n", (long long)p->bytes,
               (long long)(p->bytes / 4), p->iters, p->time_us, p->algbw_gbs, p->busbw_gbs,
               p->correct ? "ok" : "WRONG");
    }
    printf("# latency %.2f us (%lld B); %s plateau %.3f GB/s (sizes from %lld B)\n",
           s->latency_us, (long long)s->latency_bytes, s->plateau_is_algbw ? "algbw" : "busbw",
           s->plateau_gbs, (long long)s->plateau_from_bytes);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    int devices = 0;
    comm_transport tr = choose_transport(&o, &devices);
    const char *name = tr == COMM_NCCL ? "nccl" : "mpi";
    o.run.transport = tr;
    ddp_world w;
    char err[DDP_ERR_LEN];
    if (ddp_world_init(&w, &argc, &argv, o.timeout_s, "--timeout", err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    ddp_install_stop_handler(&w, prog);
    if (tr == COMM_NCCL && !o.device_given) {
        o.run.device = ddp_world_gpu(&w, devices, err, sizeof err);
        if (o.run.device < 0)
            cli_usage_error(prog, "the nccl transport: %s (--transport mpi reduces over MPI)",
                            err);
    }
    allreduce_curve c;
    int rc = 0;
    if (allreduce_sweep(&w, &o.run, &c)) {
        ddp_world_say(&w, prog, c.err);
        /* the sizes measured before the failure are kept; an incomplete
         * curve gives no ceiling, so no --peaks-out rows */
        if (w.rank == 0 && o.out && c.n > 0) {
            if (allreduce_write_curve(o.out, o.env, name, w.size, w.nodes, &c, err, sizeof err))
                fprintf(stderr, "%s: --out: %s\n", prog, err);
            else
                fprintf(stderr, "%s: the %d size(s) measured before it are in %s\n", prog, c.n,
                        o.out);
        }
        allreduce_curve_free(&c);
        ddp_world_abort(&w, 1);
    }
    allreduce_summary s = allreduce_summarise(&c);
    bool all_correct = true;
    for (int i = 0; i < c.n; i++)
        all_correct &= c.points[i].correct;
    if (w.rank == 0) {
        print_curve(&w, name, &c, &s);
        const char *device = tr == COMM_NCCL ? "gpu" : "cpu";
        if (o.out && allreduce_write_curve(o.out, o.env, name, w.size, w.nodes, &c, err,
                                           sizeof err)) {
            fprintf(stderr, "%s: --out: %s\n", prog, err);
            rc = 1;
        }
        /* a wrong sum is no ceiling: no peaks rows */
        if (rc == 0 && o.peaks_out && all_correct &&
            allreduce_write_peaks(o.peaks_out, o.env, device, name, w.size, w.nodes, &s, err,
                                  sizeof err)) {
            fprintf(stderr, "%s: --peaks-out: %s\n", prog, err);
            rc = 1;
        }
        if (!all_correct) {
            fprintf(stderr, "%s: a result was not the exact sum (see the check column)\n", prog);
            rc = 1;
        }
    }
    allreduce_curve_free(&c);
    ddp_world_finalize(&w);
    return rc;
}
