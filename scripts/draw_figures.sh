# Sourced by scripts/render.sh and scripts/compare.sh (not run on its own):
# draw_figures FIGS GNUPLOT draws every figure FIGS/figures.tsv lists (a
# script of scripts/gnuplot, a file name, a title, tab-separated; bin/plotdata
# writes it) from FIGS/data/<name> into FIGS/<name>.png (and .svg). What is
# drawn replaces what an earlier call drew; each figure is drawn under a
# temporary name and renamed (mv -T: a link planted at the figure's name is
# replaced, never followed); gnuplot's messages go to FIGS/gnuplot.log. A name
# that is not a script and a plain file name is not drawn. Messages start with
# the caller's $prog; the last line counts what was drawn.

# a text inside a gnuplot single-quoted string: a quote is doubled, nothing else
# is special
gp_quote() {
    printf '%s' "${1//\'/\'\'}"
}

draw_figures() { # FIGS GNUPLOT
    local figs=$1 gnuplot=$2 gp_dir
    gp_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gnuplot
    local log=$figs/gnuplot.log drawn=0 failed=0 script stem title tmp
    rm -f "$figs"/*.png "$figs"/*.svg "$log"
    : >"$log"
    while IFS=$'\t' read -r script stem title; do
        [ -n "$script" ] || continue
        if [[ ! $script =~ ^[a-z_]+\.gp$ || ! -f $gp_dir/$script || ! $stem =~ ^[A-Za-z0-9_-][A-Za-z0-9._-]*$ ]]; then
            failed=$((failed + 1))
            echo "$prog: $figs/figures.tsv: '$script' '$stem' is not a script of scripts/gnuplot and a file name; not drawn" >&2
            continue
        fi
        tmp=$figs/$stem.tmp
        rm -f "$tmp.png" "$tmp.svg"
        if "$gnuplot" -e "datafile='$(gp_quote "$figs/data/$stem")'; outfile='$(gp_quote "$tmp.png")'; title='$(gp_quote "$title")'" \
            "$gp_dir/$script" >>"$log" 2>&1 && [ -s "$tmp.png" ] &&
            mv -f -T "$tmp.png" "$figs/$stem.png" &&
            { [ ! -e "$tmp.svg" ] || mv -f -T "$tmp.svg" "$figs/$stem.svg"; }; then
            drawn=$((drawn + 1))
        else
            rm -f "$tmp.png" "$tmp.svg"
            failed=$((failed + 1))
            echo "$prog: gnuplot could not draw $stem ($script); see $log" >&2
        fi
    done <"$figs/figures.tsv"
    echo "$prog: $drawn figure(s) drawn in $figs${failed:+, $failed failed}" | sed 's/, 0 failed//'
}
