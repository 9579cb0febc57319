# Step-time variability per configuration: a box plot of every timed step of
# all repeats (box: quartiles; whiskers: 1.5 IQR), in percent from the
# configuration's median so that fast and slow models share one axis; each
# step is a dot coloured by its repeat, so a repeat that runs slower than the
# others shows as a band of one colour. The median in ms and the coefficient
# of variation are printed with each box.
#   gnuplot -e "datafile='DIR/variability_fp32'; outfile='FIG/variability_fp32.png'; title='...'" variability.gp
# reads datafile.'.vars' and datafile.'.dat' (one block per configuration:
# box pct_from_median x_jittered repeat).

if (!exists("datafile") || !exists("outfile")) { print "variability.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

set title title
set xrange [0.4:nbox + 0.6]
set yrange [ymin:ymax]
set format y "%+g%%"
set ylabel "step time, % from the configuration's median"
unset xlabel  # the tic labels name each configuration and its median
set grid noxtics nomxtics ytics
set xtics () scale 0 font ",10"
do for [i = 1:nbox] { set xtics add (value(sprintf("box_label_%d", i)) i) }
do for [i = 1:nbox] { set label value(sprintf("box_note_%d", i)) at first i, graph 0.965 center font ",10" }
if (nbox > 8) { set xtics rotate by 30 right }
set lmargin at screen 0.085
set rmargin at screen 0.84
set bmargin at screen (nbox > 8 ? 0.17 : 0.13)
set tmargin at screen 0.92
set key title "each dot: one step" font ",11"
set style boxplot outliers pointtype 7 range 1.5
set style fill solid 0.18 border lc rgb "#404040"
set boxwidth 0.6
rcolor(k) = value(sprintf("rep_color_%d", k))
rgbnum(k) = value(sprintf("rep_rgb_%d", int(k)))
set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb "#a0a0a0" dt 2 back

eval png_terminal
set output outfile
plot for [i = 1:nbox] datafile.".dat" index (i - 1) using (i):2 notitle with boxplot lc rgb "#5a7fa8" lw 1.3 ps 0, \
     datafile.".dat" using 3:2:(rgbnum($4)) notitle with points pt 7 ps 0.8 lc rgb variable, \
     for [k = 1:nrep] NaN title value(sprintf("rep_name_%d", k)) with points pt 7 ps 1.4 lc rgb rcolor(k)

eval svg_terminal
set output svgfile(outfile)
replot
unset output
