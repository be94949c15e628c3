# Shell functions shared by the side-by-side model benchmarks (bench-models.sh,
# bench-attention.sh, bench-scaling.sh); sourced, not run.

# The median latency in ms that `graphlift bench` prints for MODEL at THREADS threads with
# the static SHAPE (`name=AxB`), over RUNS timed runs; any further arguments go to `bench`.
gl_median() { # binary model threads shape runs [bench flags...]
    local bin="$1" model="$2" threads="$3" shape="$4" runs="$5"
    shift 5
    "$bin" bench "$model" --threads "$threads" --shape "$shape" --runs "$runs" "$@" 2>/dev/null |
        sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}

# The median of the whitespace-separated numbers on standard input (the lower middle one of
# an even count; empty fields, as a trailing space leaves, are not counted).
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# With BASE set (another graphlift binary timed in the same rounds), the two columns it adds
# to a table: their header, and their cells for graphlift's median GM and BASE's round
# times: BASE's median and the ratio graphlift / BASE. Nothing without BASE.
base_header() { [ -z "${BASE:-}" ] || printf " %9s %8s" base_ms vs_base; }
base_columns() { # graphlift-median base-round-times...
    [ -n "${BASE:-}" ] || return 0
    local gm="$1" bm
    shift
    bm=$(echo "$*" | median)
    awk -v b="$bm" -v g="$gm" 'BEGIN { printf " %9s %8.2f", b, g / b }'
}
