# Shared by scripts/e2e.sh, scripts/e2e-cut.sh and scripts/e2e-clcb-cut.sh (sourced).

# e2e_setup: BIN (required), OUT (default out, made), W (a temporary folder removed at
# exit), CSV ($OUT/e2e.csv, its header written) and LOG ($OUT/e2e.txt, emptied).
e2e_setup() {
    BIN=${BIN:?BIN: the directory holding harness and harness-base}
    OUT=${OUT:-out}
    mkdir -p "$OUT"
    W=$(mktemp -d)
    trap 'rm -rf "$W"' EXIT
    CSV="$OUT/e2e.csv"
    LOG="$OUT/e2e.txt"
    echo "binary,command,engine,run,phase,seconds,note" > "$CSV"
    : > "$LOG"
}

# say TEXT...: prints TEXT and appends it to $LOG.
say() { echo "$*" | tee -a "$LOG"; }

# e2e_begin NAME DEFAULT_DEADLINE: the log's first lines (NAME, the time, the cores and, where
# nvidia-smi runs, the GPU and its driver), and the clock of `left` (which e2e_run asks):
# seconds to DEADLINE_S (DEFAULT_DEADLINE when unset) from now; T0 is now.
e2e_begin() {
    T0=$(date +%s)
    E2E_DEADLINE=${DEADLINE_S:-$2}
    say "$1: $(date -u +%FT%TZ), $(nproc) cores"
    command -v nvidia-smi > /dev/null &&
        say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
    return 0
}
left() { echo $(( E2E_DEADLINE - ($(date +%s) - T0) )); }

# e2e_record NAME CMD ENGINE RUN WALL_SECONDS: records one run of a user command, whose
# --stats went to $W/err and whose answers to $W/out, into $LOG (the stats as printed)
# and $CSV (binary,command,engine,run,phase,seconds,note).
e2e_record() {
    local name=$1 cmd=$2 engine=$3 runno=$4 s=$5
    {
        echo "== $name $cmd $engine run $runno: wall $s s"
        grep -v '^stats:' "$W/err" | head -5 || true
        grep '^stats:' "$W/err" || true
    } >> "$LOG"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$name,$cmd,$engine,$runno" '{
        # "PHASE  SECONDS s  NOTE" or "peak RSS  MB MB"
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    echo "$name,$cmd,$engine,$runno,wall,$s," >> "$CSV"
    # The pairs' order differs between engines (the GPU orders each window): compared sorted.
    local sum
    if [ "$cmd" = ddm-pairs ]; then sum=$(sort "$W/out" | md5sum); else sum=$(md5sum < "$W/out"); fi
    echo "$name,$cmd,$engine,$runno,answers,0,${sum:0:12}" >> "$CSV"
}

# e2e_run NAME BIN COMMAND ENGINE RUN ARGS...: as scripts/e2e.sh's run(), under `timeout
# 30`, skipped when the caller's `left` says less than 15 s are left; PRE: words before
# the binary (`env ...`).
e2e_run() {
    local name=$1 bin=$2 cmd=$3 engine=$4 runno=$5; shift 5
    if [ "$(left)" -lt 15 ]; then
        echo "skipped (time): $name $cmd $engine $runno" >> "$LOG"
        return
    fi
    local eng=()
    case "$engine" in default*) ;; *) eng=(--engine "$engine") ;; esac
    local t s
    t=$(date +%s.%N)
    local tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%U %S %M" -o "$W/time")
    rm -f "$W/time"
    "${tv[@]}" timeout 30 "${PRE[@]}" "$bin" "$@" "${eng[@]}" --stats > "$W/out" 2> "$W/err" || echo "exit $? ($name $cmd $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    if [ -s "$W/time" ]; then
        # user and system CPU seconds and the peak RSS (kB) of the whole process
        read -r u sy m < <(tail -1 "$W/time")
        echo "$name,$cmd,$engine,$runno,user,$u," >> "$CSV"
        echo "$name,$cmd,$engine,$runno,sys,$sy," >> "$CSV"
        echo "cpu: user $u s, sys $sy s, max RSS $m kB" >> "$W/err"
    fi
    e2e_record "$name" "$cmd" "$engine" "$runno" "$s"
}
