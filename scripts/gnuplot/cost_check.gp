# The counters against the cost model for one GPU trace: per layer, in the
# network's order (then the loss and the update), counted / analytic FLOPs
# (top) and DRAM bytes (bottom) of each pass on log axes; colour: layer type,
# shape: pass (circle fwd, triangle up bwd_data, triangle down bwd_weights,
# diamond the loss and the update). The band is the factor within which the
# two agree; the passes outside it are named.
#   gnuplot -e "datafile='DIR/cost_check_X'; outfile='FIG/cost_check_X.png'; title='...'" cost_check.gp
# reads datafile.'.vars' and datafile.'.dat' (block 4 x type + pass, the
# fourth the loss and update: position flops_ratio bytes_ratio "flops_label"
# "bytes_label").

if (!exists("datafile") || !exists("outfile")) { print "cost_check.gp: set datafile and outfile with -e"; exit status 2 }
if (!exists("title")) title = ""
_d = ARG0; _i = strlen(_d); while (_i > 0 && _d[_i:_i] ne "/") { _i = _i - 1 }
load (_i > 0 ? _d[1:_i] : "./")."style.gp"
load datafile.".vars"

tcolor(t) = value(sprintf("color_%d", t))
# the shape of each pass: fwd, bwd_data, bwd_weights, the loss and update
spt(s) = s == 1 ? 7 : s == 2 ? 9 : s == 3 ? 11 : 13
set logscale y 10
set yrange [ymin:ymax]
set format y "%g"
set xrange [0:nlayers + 1]
set grid noxtics nomxtics ytics mytics
set key spacing 1.1
set style rect fc rgb "#e8f0e8" fs solid 1.0 noborder
set object 1 rect from graph 0, first 1.0 / factor to graph 1, first factor behind
set lmargin at screen 0.085
set rmargin at screen 0.80

# one panel: column c of the data (2 FLOPs, 3 bytes), its labels in c + 2
# (a pass's label a line above the previous pass's: a layer's passes often
# share a ratio);
# the legend (top panel only) names the types by colour and the passes by shape
points(c) = sprintf("for [t = 1:ntypes] for [s = 1:nscopes] datafile.'.dat' index (nscopes * (t - 1) + s - 1) using 1:%d notitle with points pt spt(s) ps 1.1 lc rgb tcolor(t), for [t = 1:ntypes] for [s = 1:nscopes] datafile.'.dat' index (nscopes * (t - 1) + s - 1) using 1:%d:%d notitle with labels left rotate by 35 offset char 0.6, char (s < 4 ? 1.1 * s - 0.7 : 0.4) font ',9' textcolor rgb tcolor(t), 1 notitle with lines lw 1.2 dt 2 lc rgb '#404040'", c, c, c + 2)
# the legends: the types' colours beside the top panel, the passes' shapes
# beside the bottom one (together they would not fit beside one panel)
types_legend = "for [t = 1:ntypes] NaN title value(sprintf('type_%d', t)) with points pt 5 ps 1.4 lc rgb tcolor(t)"
passes_legend = "for [s = 1:nscopes] NaN title value(sprintf('scope_%d', s)) with points pt spt(s) ps 1.2 lc rgb '#404040'"
flops_panel = points(2) . ", " . types_legend
bytes_panel = points(3) . ", " . passes_legend

# the two panels, as one command line that each terminal replays
top_panel = "set tmargin at screen 0.90; set bmargin at screen 0.535; set format x ''; unset xlabel; " . \
    "set ylabel 'counted / analytic FLOPs'; set key title 'layer type (colour)' font ',11'; " . \
    "set label 1 step_label at screen 0.815, screen 0.64 left front font ',10'; " . \
    "set label 2 sprintf('band: within %gx', factor) at graph 0.985, graph 0.06 right front font ',10'; " . \
    "plot " . flops_panel . "; unset label 1"
bottom_panel = "set tmargin at screen 0.465; set bmargin at screen 0.10; set format x '%g'; " . \
    "set xlabel \"layer, in the network's order (then the loss and the update)\"; " . \
    "set ylabel 'counted / analytic DRAM bytes'; set key title 'pass (shape)' font ',11'; plot " . bytes_panel
draw = "set multiplot title title font ',16'; " . top_panel . "; " . bottom_panel . "; unset multiplot"

eval png_terminal
set output outfile
eval draw
unset output
eval svg_terminal
set output svgfile(outfile)
eval draw
unset output
