# The harness's exit after a GPU command: whole time, time after "process so far", output
# through a pipe (md5), the exit code with a bad line, and that the GPU is free after.
H=${H:-/tmp/b/harness}; B=${B-/tmp/b/harness-base}; W=/tmp/w; mkdir -p $W
[ -f $W/e.jsonl ] || timeout 60 $H ccm generate --out-subscriptions $W/s.jsonl --out-events $W/e.jsonl --events 1000000 > /dev/null 2>&1
{ head -1000 $W/e.jsonl; echo '{"temp": }'; tail -1000 $W/e.jsonl; } > $W/bad.jsonl
cat $W/*.jsonl > /dev/null
ns() { date +%s.%N; }
for r in 1 2 3; do for b in $H ${B:-}; do
 s=$(ns); timeout 60 $b ccm match --subscriptions $W/s.jsonl --events $W/e.jsonl --stats 2> $W/stats.txt | md5sum > $W/md5; e=$(ns)
 p=$(grep "process so far" $W/stats.txt | awk '{print $5}')
 echo "$(basename $b) run $r: whole $(awk "BEGIN{print $e - $s}") s, process so far $p s, md5 $(cut -c1-8 $W/md5)"
done; done
for b in $H ${B:-}; do
 timeout 60 $b ccm match --subscriptions $W/s.jsonl --events $W/bad.jsonl > $W/o.txt 2> $W/err.txt; rc=$?; echo "$(basename $b) bad line: exit $rc, $(wc -l < $W/o.txt) lines out, $(head -c 200 $W/err.txt)"
done
sleep 1; echo "GPU processes after: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
