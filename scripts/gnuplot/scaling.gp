# Data-parallel scaling: throughput (images/s) against the number of ranks,
# with each series' ideal (linear from its smallest world size) dashed, and
# the parallel efficiency (%) beside it.
#   gnuplot -e "datafile='DIR/scaling'; outfile='FIG/scaling.png'; title='...'" scaling.gp
# reads datafile.'.vars' and datafile.'.dat' (one block per model and mode:
# world_size images_per_s efficiency_pct ideal_images_per_s).

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
    set lmargin at screen 0.095
    set rmargin at screen 0.43
    set bmargin at screen 0.10
    set tmargin at screen 0.88
    set logscale y 10
    set yrange [ymin:ymax]
    set format y "%g"
    set ytics autofreq
    @log_y_125
    set ylabel "throughput (images/s)"
    unset key
    plot for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:4 notitle with lines dt 2 lw 1.4 lc rgb scolor(i), \
         for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:2 notitle with linespoints lw 2.2 pt spt(i) ps 1.5 lc rgb scolor(i)
    # right: efficiency
    set lmargin at screen 0.52
    set rmargin at screen 0.80
    unset logscale y
    set ytics autofreq
    set yrange [0:110]
    set format y "%g%%"
    set ylabel "parallel efficiency (% of ideal)"
    set key outside right top vertical Left reverse
    set arrow 1 from graph 0, first 100 to graph 1, first 100 nohead dt 2 lc rgb "#909090"
    plot for [i = 1:nseries] datafile.".dat" index (i - 1) using 1:3 \
             title value(sprintf("series_name_%d", i)) with linespoints lw 2.2 pt spt(i) ps 1.5 lc rgb scolor(i), \
         NaN title "ideal (dashed)" with lines dt 2 lw 1.4 lc rgb "#606060"
    unset multiplot
    unset output
}
