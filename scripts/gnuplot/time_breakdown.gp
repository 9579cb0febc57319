# Where the kernel time of one traced GPU step goes: one bar per phase (fwd,
# bwd_data, bwd_weights, update, loss, comm, in the order a step runs them),
# stacked by layer type, in percent of the step's kernel time; each bar's
# total above it.
#   gnuplot -e "datafile='DIR/time_breakdown_X'; outfile='FIG/time_breakdown_X.png'; title='...'" time_breakdown.gp
# reads datafile.'.vars' and datafile.'.dat' (one row per phase: "phase",
# the percent of each layer type, the total).

if (!exists("datafile") || !exists("outfile")) { print "time_breakdown.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border lc rgb "#ffffff"
set boxwidth 0.7
set yrange [0:ymax]
set format y "%g%%"
set ylabel "share of the step's kernel time"
set xlabel "phase" . "\n" . total_label
set grid noxtics nomxtics ytics nomytics
set xtics scale 0 font ",12"
set lmargin at screen 0.085
set rmargin at screen 0.80
set bmargin at screen 0.13
set tmargin at screen 0.92
set key title "layer type (share)" font ",11"
# as the report prints a share: a small one is "<0.1%", not "0.0%"
pct(v) = v > 0 && v < 0.05 ? "<0.1%" : sprintf("%.1f%%", v)

eval png_terminal
set output outfile
plot for [t = 1:ntypes] datafile.".dat" using (column(t + 1)):xtic(1) \
         title value(sprintf("type_%d", t)) lc rgb value(sprintf("color_%d", t)), \
     datafile.".dat" using 0:(column(ntypes + 2)):(pct(column(ntypes + 2))) \
         notitle with labels offset char 0, char 0.8 font ",11"

eval svg_terminal
set output svgfile(outfile)
replot
unset output
