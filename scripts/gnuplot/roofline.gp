# Roofline of one traced configuration: every kernel at (arithmetic intensity,
# achieved GFLOP/s), coloured by layer type and sized by its share of the step's
# time; the whole step as one large marker; one horizontal ceiling per measured
# compute peak and one diagonal per memory level, ridge points marked.
#   gnuplot -e "datafile='DIR/roofline_X'; outfile='FIG/roofline_X.png'; title='...'" roofline.gp
# reads datafile.'.vars' (ranges, ceilings, layer types: written by bin/plotdata),
# datafile.'.kernels' (one block per layer type: ai gflops share) and
# datafile.'.step' (ai gflops); writes outfile and the SVG beside it.

if (!exists("datafile") || !exists("outfile")) { print "roofline.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
load (_i > 0 ? _d[1:_i] : "./")."ceilings.gp"
# bottom right: below every roof at high intensity, where kernels rarely are
# (a second line, the kernels not drawn, centres the label higher: kept off the axis)
set label step_label at graph 0.985, graph (strstrt(step_label, "\n") > 0 ? 0.06 : 0.04) right front font ",11" boxed
set key title "layer type\n(area: share of step time)" font ",11"

ps(share) = 0.8 + 9.0 * sqrt(share)
translucent(c) = "#50".c[2:]
eval png_terminal
set output outfile
plot @ceiling_lines, \
     for [i = 1:ntypes] datafile.".kernels" index (i - 1) using 1:2:(ps($3)) \
         notitle with points pt 7 ps variable lc rgb translucent(value(sprintf("color_%d", i))), \
     for [i = 1:ntypes] datafile.".kernels" index (i - 1) using 1:2:(ps($3)) \
         notitle with points pt 6 ps variable lw 0.7 lc rgb value(sprintf("color_%d", i)), \
     for [i = 1:ntypes] NaN title value(sprintf("type_%d", i)) with points pt 7 ps 1.6 \
         lc rgb value(sprintf("color_%d", i)), \
     datafile.".step" using 1:2 notitle with points pt 5 ps 3.6 lc rgb "#000000", \
     datafile.".step" using 1:2 notitle with points pt 5 ps 2.6 lc rgb "#ffd21f", \
     NaN title "whole step" with points pt 5 ps 1.8 lc rgb "#ffd21f", \
     NaN title "ceiling used" with lines lw 2.6 lc rgb "#202020", \
     NaN title "other ceilings" with lines lw 1.3 lc rgb "#8a8a8a"

eval svg_terminal
set output svgfile(outfile)
replot
unset output
