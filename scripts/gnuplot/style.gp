# Shared look of every figure: loaded by the other scripts after the caller's -e
# variables are set. Defines the terminals (PNG through cairo, SVG), fonts,
# margins that leave room for a legend on the right, and the helpers below.
# Text is not "enhanced": layer and ceiling names hold underscores.

if (!exists("width")) width = 1200
if (!exists("height")) height = 800
if (!exists("font_name")) font_name = "DejaVu Sans"

png_terminal = sprintf("set terminal pngcairo size %d,%d noenhanced font '%s,12' linewidth 1.4", width, height, font_name)
svg_terminal = sprintf("set terminal svg size %d,%d noenhanced font '%s,12' linewidth 1.4 background rgb 'white'", width, height, font_name)

# outfile names the PNG; the SVG goes beside it.
svgfile(png) = (strlen(png) > 4 && png[strlen(png)-3:] eq ".png") ? png[1:strlen(png)-4].".svg" : png.".svg"

set border 3 lw 1.2 lc rgb "#404040"
set tics nomirror out scale 0.6 textcolor rgb "#303030"
set grid xtics ytics mxtics mytics lc rgb "#e4e4e4" lw 1, lc rgb "#f2f2f2" lw 0.8
set key outside right top vertical Left reverse samplen 1.5 spacing 1.25 box lc rgb "#d0d0d0" width 1
set title font ",16"
set xlabel font ",13"
set ylabel font ",13"

# A log axis spanning few decades gets 2x and 5x labels too: a throughput
# axis from 2 to 200 images/s with labels at 10 and 100 alone is hard to read.
# Used as @log_y_125 after yrange is set (ymin, ymax defined).
log_y_125 = "if (log10(ymax / ymin) <= 2.5) { do for [k = int(floor(log10(ymin))):int(ceil(log10(ymax)))] { set ytics add (2 * 10.0**k, 5 * 10.0**k) } }"
