# Sourced by the GPU machine's request scripts: `step NAME SECONDS COMMAND...` runs COMMAND
# under `timeout SECONDS` and appends "NAME seconds exit-code" to $OUT/times.txt (124: cut
# by its timeout). COMMAND may be a shell function exported with `export -f` only through
# `bash -c` (timeout runs programs).
step() { # name timeout command...
    local name=$1 limit=$2 s rc
    shift 2
    s=$(date +%s)
    timeout "$limit" "$@"
    rc=$?
    echo "$name $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
}
