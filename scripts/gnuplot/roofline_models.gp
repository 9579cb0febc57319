# Roofline comparing the models of one precision: each traced configuration's
# whole step as a large square and its layer types as circles (area: share of
# the step's time; the types above 5% named), one colour per model, over the
# machine's ceilings.
#   gnuplot -e "datafile='DIR/roofline_models_fp32'; outfile='FIG/roofline_models_fp32.png'; title='...'" roofline_models.gp
# reads datafile.'.vars', datafile.'.types' (one block per model: ai gflops
# share "label") and datafile.'.steps' (one block per model: ai gflops).

if (!exists("datafile") || !exists("outfile")) { print "roofline_models.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"
set title title
load (_i > 0 ? _d[1:_i] : "./")."ceilings.gp"

set label sprintf("FLOPs and bytes: %s", source) at graph 0.015, graph 0.97 left front font ",11" boxed
set key title "model" font ",11"
ps(share) = 0.8 + 4.5 * sqrt(share)
translucent(c) = "#60".c[2:]
scolor(i) = value(sprintf("series_color_%d", i))

eval png_terminal
set output outfile
plot @ceiling_lines, \
     for [i = 1:nseries] datafile.".types" index (i - 1) using 1:2:(ps($3)) \
         notitle with points pt 7 ps variable lc rgb translucent(scolor(i)), \
     for [i = 1:nseries] datafile.".types" index (i - 1) using 1:2:(ps($3)) \
         notitle with points pt 6 ps variable lw 0.8 lc rgb scolor(i), \
     for [i = 1:nseries] datafile.".types" index (i - 1) using 1:2:4 \
         notitle with labels left offset char 1.1, char 0.35 font ",10" textcolor rgb scolor(i), \
     for [i = 1:nseries] datafile.".steps" index (i - 1) using 1:2 \
         notitle with points pt 5 ps 3.4 lc rgb "#000000", \
     for [i = 1:nseries] datafile.".steps" index (i - 1) using 1:2 \
         notitle with points pt 5 ps 2.5 lc rgb scolor(i), \
     for [i = 1:nseries] NaN title value(sprintf("series_name_%d", i)) with points pt 5 ps 1.8 \
         lc rgb scolor(i), \
     NaN title "square: whole step" with points pt 4 ps 1.8 lw 1.5 lc rgb "#000000", \
     NaN title "circle: layer type" with points pt 6 ps 1.6 lw 1.5 lc rgb "#000000", \
     NaN title "ceiling used" with lines lw 2.6 lc rgb "#202020", \
     NaN title "other ceilings" with lines lw 1.3 lc rgb "#8a8a8a"

eval svg_terminal
set output svgfile(outfile)
replot
unset output
