#!/bin/sh
# A long fuzz run that restarts after each crash (libFuzzer stops at the first one and saves it
# under $ARTIFACTS). Usage: fuzz/run.sh [SECONDS] [CORPUS] [ARTIFACTS]
# Run it niced and in the background, e.g.:
#   nohup nice -n 19 fuzz/run.sh 3600 /tmp/fuzz-corpus /tmp/fuzz-artifacts > /tmp/fuzz-run.log 2>&1 &
set -u
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python}
seconds=${1:-3600}
corpus=${2:-/tmp/fuzz-corpus}
artifacts=${3:-/tmp/fuzz-artifacts}
mkdir -p "$corpus" "$artifacts"
"$python" "$here/seed_corpus.py" "$corpus"
end=$(( $(date +%s) + seconds ))
runs=0
while [ "$(date +%s)" -lt "$end" ]; do
    runs=$((runs + 1))
    left=$(( end - $(date +%s) ))
    echo "=== fuzz session $runs, $left s left, $(date -u +%FT%TZ)"
    "$python" "$here/fuzz_wire.py" -dict="$here/json.dict" -max_total_time="$left" -timeout=30 \
        -rss_limit_mb=3000 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus"
    echo "=== fuzz session $runs exited with status $?"
done
echo "=== done: $runs sessions, crashes saved: $(ls "$artifacts" | wc -l)"
