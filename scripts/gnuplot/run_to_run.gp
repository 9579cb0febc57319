# Run to run across several runs of one environment (scripts/compare.sh): per
# configuration measured in two or more of them, each run's median step in
# percent above the fastest run's, its own range (the 95% interval of the
# median widened to its repeats' medians) as the bar; a colour a run. Bars
# that share no level differ beyond the runs' own noise.
#   gnuplot -e "datafile='DIR/run_to_run'; outfile='FIG/run_to_run.png'; title='...'" run_to_run.gp
# reads datafile.'.vars' (nconf, conf_label_i, nruns, run_label_r, run_color_r,
# ymin, ymax) and datafile.'.dat' (one block a run: configuration pct lo hi).

if (!exists("datafile") || !exists("outfile")) { print "run_to_run.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
set xrange [0.4:nconf + 0.6]
set yrange [ymin:ymax]
set ylabel "median step: % above the fastest run's"
set format y "%g%%"
set xtics () rotate by -40 left font ",10" nomirror
do for [i = 1:nconf] { set xtics add (value(sprintf("conf_label_%d", i)) i) }
set grid noxtics
set bmargin at screen 0.24
set key title "run" font ",11"
set style fill solid
# the runs of a configuration side by side around its tick
dx = nruns > 1 ? 0.5 / (nruns - 1) : 0
shift(r) = (r - 1 - (nruns - 1) / 2.0) * dx
eval png_terminal
set output outfile
plot 0 notitle with lines lc rgb "#909090" dt 2, \
     for [r = 1:nruns] datafile.".dat" index (r - 1) using ($1 + shift(r)):2:3:4 \
         title value(sprintf("run_label_%d", r)) with yerrorbars pt 7 ps 1.3 lw 1.6 \
         lc rgb value(sprintf("run_color_%d", r))

eval svg_terminal
set output svgfile(outfile)
replot
unset output
