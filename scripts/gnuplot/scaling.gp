# Data-parallel scaling: throughput (images/s) against the number of ranks,
# with each series' ideal (linear from its smallest world size) dash-dotted,
# and the parallel efficiency (%) beside it; the scaling model's predictions
# beside the measured points: dashed with open circles where the model was
# fitted to this run's allreduce curve, dotted on the links given as
# parameters (NVLink / InfiniBand, to 64 ranks).
#   gnuplot -e "datafile='DIR/scaling'; outfile='FIG/scaling.png'; title='...'" scaling.gp
# reads datafile.'.vars', datafile.'.dat' (one block per model and mode:
# world_size images_per_s efficiency_pct ideal_images_per_s) and
# datafile.'.model' (two blocks per model and mode, the fit's and the links':
# world_size images_per_s efficiency_pct).

if (!exists("datafile") || !exists("outfile")) { print "scaling.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"
scolor(i) = value(sprintf("series_color_%d", i))
spt(i) = value(sprintf("series_pt_%d", i))

set key title "model (mode)" font ",11"
set logscale x 2
set xrange [xmin:xmax]
set format x "%g"
set xlabel "ranks (GPUs or processes)"

# multiplot cannot be replotted: the figure is drawn once per terminal
do for [pass = 1:2] {
    if (pass == 1) { eval png_terminal; set output outfile } else { eval svg_terminal; set output svgfile(outfile) }
    unset arrow 1
    set multiplot title title font ",16"
    # left: throughput, log-log, with the ideal
    set lmargin at screen 0.085
    set rmargin at screen 0.40
    set bmargin at screen 0.10
    set tmargin at screen 0.88
    set logscale y 10
    set yrange [ymin:ymax]
    set format y "%g"
    set ytics autofreq
    @log_y_125
    set ylabel "throughput (images/s)"
    unset key
    plot for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:4 notitle with lines dt 4 lw 1.2 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".model" index (2 * i - 2) using 1:2 notitle with linespoints dt 2 lw 1.6 pt 6 ps 1.3 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".model" index (2 * i - 1) using 1:2 notitle with lines dt 3 lw 1.6 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:2 notitle with linespoints lw 2.2 pt spt(i) ps 1.5 lc rgb scolor(i)
    # right: efficiency
    set lmargin at screen 0.48
    set rmargin at screen 0.74
    unset logscale y
    set ytics autofreq
    set yrange [0:110]
    set format y "%g%%"
    set ylabel "parallel efficiency (% of ideal)"
    set key outside right top vertical Left reverse
    set arrow 1 from graph 0, first 100 to graph 1, first 100 nohead dt 2 lc rgb "#909090"
    plot for [i = 1:nseries] datafile.".model" index (2 * i - 2) using 1:3 notitle with linespoints dt 2 lw 1.6 pt 6 ps 1.3 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".model" index (2 * i - 1) using 1:3 notitle with lines dt 3 lw 1.6 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:3 \
             title value(sprintf("series_name_%d", i)) with linespoints lw 2.2 pt spt(i) ps 1.5 lc rgb scolor(i), \
         NaN title "measured" with linespoints lw 2.2 pt 7 lc rgb "#606060", \
         (model_fit_rows > 0 ? NaN : 1/0) title (model_fit_rows > 0 ? "model: fit to this run" : "") with linespoints dt 2 lw 1.6 pt 6 lc rgb "#606060", \
         (model_link_rows > 0 ? NaN : 1/0) title (model_link_rows > 0 ? "model: given links" : "") with lines dt 3 lw 1.6 lc rgb "#606060", \
         NaN title "ideal (left)" with lines dt 4 lw 1.2 lc rgb "#606060"
    unset multiplot
    unset output
}
