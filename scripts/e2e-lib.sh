# Shared by scripts/e2e.sh and scripts/e2e-cut.sh (sourced): records one run of a user
# command, whose --stats went to $W/err and whose answers to $W/out, into $LOG (the
# stats as printed) and $CSV (binary,command,engine,run,phase,seconds,note).
#     e2e_record NAME CMD ENGINE RUN WALL_SECONDS
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
