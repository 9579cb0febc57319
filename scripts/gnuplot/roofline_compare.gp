# Roofline of several environments (scripts/compare.sh): each environment's
# roof in its colour (the compute ceilings its traced steps ran against and
# its DRAM/HBM bandwidth) and every traced step as a point in that colour,
# its shape naming the model.
#   gnuplot -e "datafile='DIR/roofline_compare'; outfile='FIG/roofline_compare.png'; title='...'" roofline_compare.gp
# reads datafile.'.vars' and datafile.'.steps' (one block per environment:
# ai gflops point_type "model").

if (!exists("datafile") || !exists("outfile")) { print "roofline_compare.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
set logscale xy 10
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set format x "%g"
set format y "%g"
set xlabel "arithmetic intensity (FLOP/byte of DRAM or HBM traffic)"
set ylabel sprintf("achieved performance (%s)", yunit)
set samples 800
set lmargin at screen 0.085
set tmargin at screen 0.92

cval(i) = value(sprintf("ceil_value_%d", i))
cenv(i) = int(value(sprintf("ceil_env_%d", i)))
ecolor(e) = value(sprintf("env_color_%d", e))
is_compute(i) = value(sprintf("ceil_compute_%d", i))
roof(x, i) = is_compute(i) ? (x >= value(sprintf("ceil_from_%d", i)) ? cval(i) : NaN) \
                           : (x <= value(sprintf("ceil_to_%d", i)) ? cval(i) * x : NaN)

# The roofs' values are in the legend: labels on the lines would lie under
# another environment's points. Bottom right is below every roof at high
# intensity, where steps (compute-heavy, near their roofs) rarely are.
set key inside right bottom vertical Left reverse opaque box lc rgb "#d0d0d0" width 1 spacing 1.2
set bmargin at screen 0.095
set rmargin at screen 0.96
set label "colour: environment (its roof and its steps); shape: model" at graph 0.015, graph 0.97 left front font ",11"

eval png_terminal
set output outfile
plot for [i = 1:nceil] roof(x, i) notitle with lines lw 2.2 lc rgb ecolor(cenv(i)), \
     for [e = 1:nenv] datafile.".steps" index (e - 1) using 1:2:3 notitle \
         with points pt variable ps 2.6 lc rgb "#000000", \
     for [e = 1:nenv] datafile.".steps" index (e - 1) using 1:2:3 notitle \
         with points pt variable ps 2.0 lc rgb ecolor(e), \
     for [e = 1:nenv] NaN title value(sprintf("env_title_%d", e)) with linespoints lw 2.2 pt 5 ps 1.6 lc rgb ecolor(e), \
     for [m = 1:nmodels] NaN title value(sprintf("model_name_%d", m)) with points \
         pt value(sprintf("model_pt_%d", m)) ps 1.6 lc rgb "#404040"

eval svg_terminal
set output svgfile(outfile)
replot
unset output
