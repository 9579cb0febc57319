#include "helpers.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

network build_or_fail(const char *model, int res, int classes)
{
    network net;
    int status = zoo_build(&net, model, res, classes);
    cr_assert_eq(status, NET_OK, "building %s at %d: %s", model, res, net.err);
    return net;
}

int run_bin(const char *args, int want_stderr, char *buf, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/%s %s", ROOFLINE_BIN_DIR, args,
             want_stderr ? "2>&1 >/dev/null" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t used = fread(buf, 1, len - 1, p);
    buf[used] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status), "%s did not exit normally", cmd);
    return WEXITSTATUS(status);
}

int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

void expect_usage_error(const char *args, const char *expect)
{
    char err[4096];
    int status = run_bin(args, 1, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d: %s", args, status, err);
    cr_expect_eq(count_lines(err), 1, "'%s' printed: %s", args, err);
    cr_expect(strstr(err, expect) != NULL, "'%s' printed '%s', wanted '%s'", args, err, expect);
}

double gemm_train_gflop_per_image(const char *model)
{
    network net = build_or_fail(model, zoo_find(model)->default_res,
                                zoo_find(model)->default_classes);
    int64_t flops = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (l->type != LAYER_CONV && l->type != LAYER_FC)
            continue;
        layer_cost c = cost_layer(&net, i, 1, PREC_FP32);
        /* the published counts leave the bias out, in fwd and in its gradient */
        int64_t bias_ops = l->has_bias ? shape_elems(l->out_shape) : 0;
        flops += c.flops[PASS_FWD] + c.flops[PASS_BWD_DATA] + c.flops[PASS_BWD_WEIGHTS] -
                 2 * bias_ops;
    }
    net_free(&net);
    return flops / 1e9;
}

char *temp_dir(void)
{
    char *dir = malloc(64);
    cr_assert_not_null(dir);
    strcpy(dir, "/tmp/roofline-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    return dir;
}
