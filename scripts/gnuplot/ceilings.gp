# The roofline axes and ceilings shared by roofline.gp and roofline_models.gp:
# log-log axes over the ranges bin/plotdata computed; one horizontal line per
# compute ceiling bin/plotdata chose (those the kernels ran against) from its
# ridge point with DRAM/HBM; one diagonal per memory
# level (DRAM/HBM up to the highest ceiling, the caches up to the ceiling the
# kernels ran against); each labelled with its value; the ridge points of the
# ceiling the analysis used marked. Defines the macro @ceiling_lines for the
# plot command. Needs the .vars file loaded (xmin.., yunit, ncomp, comp_*,
# nmem, mem_*, main_y, ridge_ai; see analysis/plot_data.h).

set logscale xy 10
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set format x "%g"
set format y "%g"
main_mem = "DRAM"
do for [i = 1:nmem] { if (value(sprintf("mem_main_%d", i))) { main_mem = value(sprintf("mem_name_%d", i)) } }
set xlabel sprintf("arithmetic intensity (FLOP/byte of %s traffic)", main_mem)
set ylabel sprintf("achieved performance (%s)", yunit)
set samples 1000

# The plot area is fixed so that the diagonals' labels can be turned to the
# lines' on-screen slope and label lengths turned into decades.
set lmargin at screen 0.085
set rmargin at screen 0.80
set bmargin at screen 0.095
set tmargin at screen 0.92
px_per_decade_x = (0.80 - 0.085) * width / log10(xmax / xmin)
px_per_decade_y = (0.92 - 0.095) * height / log10(ymax / ymin)
slope_deg = atan2(px_per_decade_y, px_per_decade_x) * 180 / pi
# a label of n characters at font size 11 is about 7.3 n px long
label_px(text) = 7.3 * strlen(text) + 8

# ceilings: the pair the analysis classifies against (main = 1) bold and dark
comp(i) = value(sprintf("comp_y_%d", i))
memb(i) = value(sprintf("mem_slope_%d", i))
horiz(x, i) = x >= value(sprintf("comp_from_%d", i)) ? comp(i) : NaN
diag(x, i) = x <= value(sprintf("mem_to_%d", i)) ? memb(i) * x : NaN
ceil_color(main) = main > 0 ? "#202020" : "#8a8a8a"
ceil_width(main) = main > 0 ? 2.6 : 1.3
# a memory level drawn in a colour of its own where the .vars file gives one
# (mem_color_i: the hierarchical roofline matches each level's points)
mem_color(i) = exists(sprintf("mem_color_%d", i)) ? value(sprintf("mem_color_%d", i)) : ceil_color(value(sprintf("mem_main_%d", i)))

set style textbox opaque noborder margins 1,1
# Compute labels sit above their line (centre lab_rise_px above it), starting
# where the DRAM/HBM diagonal has risen past the label's top, so that it does
# not strike through the label; there the line is above the DRAM/HBM roof and
# no kernel that obeys it is under the label. A label too long for the rest of
# its line ends at the right edge: for the highest ceiling it then reaches left
# over the roof, where no kernel is and every cache diagonal has ended (they end
# at the ceiling used, at most this one); a lower one goes under its line.
lab_rise_px = 11.0
lab_half_px = 9.0
top_y = 0
do for [i = 1:ncomp] { if (comp(i) > top_y) { top_y = comp(i) } }
do for [i = 1:ncomp] {
    lab_text = value(sprintf("comp_label_%d", i))
    # the ceiling the analysis used also names its ridge point, which starts its line
    if (value(sprintf("comp_main_%d", i)) && ridge_ai > 0) { lab_text = lab_text.sprintf(", ridge point %.3g FLOP/B", ridge_ai) }
    lx = value(sprintf("comp_from_%d", i)) * 10 ** ((lab_rise_px + lab_half_px + 3) / px_per_decade_y)
    last_x = xmax / 10 ** (label_px(lab_text) / px_per_decade_x) / 1.05
    ly = comp(i) * 10 ** (lab_rise_px / px_per_decade_y)
    lab_under = 0
    if (!(lx > xmin)) { lx = xmin * 1.1 }
    if (lx > last_x) {
        lx = last_x
        if (comp(i) < top_y) { lab_under = 1; ly = comp(i) / 10 ** (lab_rise_px / px_per_decade_y) }
    }
    lab_main = value(sprintf("comp_main_%d", i))
    lab_color = ceil_color(lab_main)
    set label i lab_text at first lx, first ly left front textcolor rgb lab_color font ",11" boxed
    # the other ceilings' labels, and any under its line, go behind the data: a
    # kernel is worth more than a label
    if (!lab_main || lab_under) { set label i back }
}
# Diagonal labels are spread along their lines, the slowest level's leftmost
# and the fastest's near the end of its line, so that they do not print over
# each other (bin/plotdata already merged the labels of levels a few pixels
# apart). A label must end before its line does and below the top edge.
nlab = 0
do for [i = 1:nmem] { if (strlen(value(sprintf("mem_label_%d", i))) > 0) { nlab = nlab + 1 } }
k = 0
do for [i = 1:nmem] {
    lab_text = value(sprintf("mem_label_%d", i))
    if (strlen(lab_text) > 0) {
        along = label_px(lab_text) * cos(slope_deg * pi / 180) / px_per_decade_x
        first_x = xmin * (xmax / xmin) ** 0.015
        if (memb(i) * first_x < ymin * (ymax / ymin) ** 0.03) { first_x = ymin * (ymax / ymin) ** 0.03 / memb(i) }
        end_x = value(sprintf("mem_to_%d", i))
        if (end_x > ymax / 1.6 / memb(i)) { end_x = ymax / 1.6 / memb(i) }
        # and below the highest ceiling's label, which may reach over this line's end
        if (top_y > 0 && end_x > top_y / 10 ** ((lab_half_px + 20) / px_per_decade_y) / memb(i)) { end_x = top_y / 10 ** ((lab_half_px + 20) / px_per_decade_y) / memb(i) }
        last_x = end_x / 10 ** along
        if (last_x < first_x) { last_x = first_x }
        lx = first_x * (last_x / first_x) ** (nlab > 1 ? k / (nlab - 1.0) : 0)
        lab_color = mem_color(i)
        set label 100 + i lab_text at first lx, first memb(i) * lx * 10 ** (9.0 / px_per_decade_y) left \
            rotate by slope_deg front textcolor rgb lab_color font ",11" boxed
        k = k + 1
    }
}
# ridge points: where each memory roof meets the compute roof the analysis uses
if (main_y > 0) {
    do for [i = 1:nmem] {
        set object circle at first main_y / memb(i), first main_y size screen 0.0035 \
            fc rgb ceil_color(value(sprintf("mem_main_%d", i))) fs solid front
    }
}
ceiling_lines = "for [i = 1:nmem] diag(x, i) notitle with lines lw ceil_width(value(sprintf('mem_main_%d', i))) lc rgb mem_color(i), for [i = 1:ncomp] horiz(x, i) notitle with lines lw ceil_width(value(sprintf('comp_main_%d', i))) lc rgb ceil_color(value(sprintf('comp_main_%d', i)))"
