# Hierarchical roofline of one GPU trace: every kernel three times, at the
# arithmetic intensity of its HBM (or DRAM), L2 and L1 traffic, all at its one
# achieved rate; colour: the level (the same as that level's roof), shape: the
# unit (circle: tensor core, triangle: CUDA core), area: share of the step's
# kernel time. The whole step per level as squares joined by a line. Roofs:
# one diagonal per level, the compute ceilings the kernels ran against.
#   gnuplot -e "datafile='DIR/roofline_hier_X'; outfile='FIG/roofline_hier_X.png'; title='...'" roofline_hier.gp
# reads datafile.'.vars' (ranges, ceilings, level colours: written by
# bin/plotdata), datafile.'.kernels' (blocks 2 x level + unit: ai gflops share)
# and datafile.'.step' (blocks 0..2: the step per level; block 3: all three).

if (!exists("datafile") || !exists("outfile")) { print "roofline_hier.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
load (_i > 0 ? _d[1:_i] : "./")."ceilings.gp"
set xlabel "arithmetic intensity (FLOP/byte of each level's traffic)"
# bottom right: below every roof at high intensity, where kernels rarely are
set label step_label at graph 0.985, graph 0.10 right front font ",10" boxed
set key title "colour: level\narea: share of\nkernel time" font ",11"

ps(share) = 0.7 + 7.0 * sqrt(share)
translucent(c) = "#60".c[2:]
lcolor(l) = value(sprintf("level_color_%d", l))
# block of level l (1..3) and unit u (0 tensor core, 1 CUDA core)
blk(l, u) = 2 * (l - 1) + u

eval png_terminal
set output outfile
plot @ceiling_lines, \
     for [l = 1:3] datafile.".kernels" index blk(l, 0) using 1:2:(ps($3)) \
         notitle with points pt 7 ps variable lc rgb translucent(lcolor(l)), \
     for [l = 1:3] datafile.".kernels" index blk(l, 0) using 1:2:(ps($3)) \
         notitle with points pt 6 ps variable lw 0.7 lc rgb lcolor(l), \
     for [l = 1:3] datafile.".kernels" index blk(l, 1) using 1:2:(ps($3)) \
         notitle with points pt 9 ps variable lc rgb translucent(lcolor(l)), \
     for [l = 1:3] datafile.".kernels" index blk(l, 1) using 1:2:(ps($3)) \
         notitle with points pt 8 ps variable lw 0.7 lc rgb lcolor(l), \
     datafile.".step" index 3 using 1:2 notitle with lines lw 1.4 dt 2 lc rgb "#000000", \
     for [l = 1:3] datafile.".step" index (l - 1) using 1:2 \
         notitle with points pt 5 ps 3.2 lc rgb "#000000", \
     for [l = 1:3] datafile.".step" index (l - 1) using 1:2 \
         notitle with points pt 5 ps 2.3 lc rgb lcolor(l), \
     for [l = 1:3] NaN title value(sprintf("level_name_%d", l)) with points pt 5 ps 1.6 \
         lc rgb lcolor(l), \
     NaN title "tensor-core kernel" with points pt 6 ps 1.6 lw 1.5 lc rgb "#000000", \
     NaN title "CUDA-core kernel" with points pt 8 ps 1.6 lw 1.5 lc rgb "#000000", \
     NaN title "whole step" with points pt 4 ps 1.8 lw 1.5 lc rgb "#000000", \
     NaN title "ceiling used" with lines lw 2.6 lc rgb "#202020", \
     NaN title "other ceilings" with lines lw 1.3 lc rgb "#8a8a8a"

eval svg_terminal
set output svgfile(outfile)
replot
unset output
