# Training throughput (images/s) against batch size, one line per model; the
# bars span the interquartile range of the timed steps of all repeats, the
# small labels give each point's share of the compute peak.
#   gnuplot -e "datafile='DIR/throughput_fp32'; outfile='FIG/throughput_fp32.png'; title='...'" throughput.gp
# reads datafile.'.vars' and datafile.'.dat' (one block per model:
# batch median q1 q3 "pct").

if (!exists("datafile") || !exists("outfile")) { print "throughput.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
set logscale x 2
set xrange [xmin:xmax]
set format x "%g"
set yrange [ymin:ymax]
if (ylog) { set logscale y 10; set format y "%g"; @log_y_125 } else { set format y "%g" }
set xlabel "batch size (images per step)"
set ylabel "throughput (images/s, median over steps and repeats)"
set lmargin at screen 0.085
set rmargin at screen 0.80
set bmargin at screen 0.095
set tmargin at screen 0.92
set key title "model" font ",11"
set label "bars: interquartile range; labels: % of the compute peak (analytic FLOPs)" at graph 0.015, graph 0.97 left front font ",11"
scolor(i) = value(sprintf("series_color_%d", i))

eval png_terminal
set output outfile
plot for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:2:3:4 \
         notitle with yerrorbars lw 1.6 pt 7 ps 0.1 lc rgb scolor(i), \
     for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:2 \
         title value(sprintf("series_name_%d", i)) with linespoints lw 2.2 \
         pt value(sprintf("series_pt_%d", i)) ps 1.6 lc rgb scolor(i), \
     for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:2:5 \
         notitle with labels left offset char 0.9, char (i % 2 ? 0.8 : -0.8) font ",10" textcolor rgb scolor(i)

eval svg_terminal
set output svgfile(outfile)
replot
unset output
