#!/usr/bin/env bash
# Long fuzzing: runs every Jazzer @FuzzTest of stitch-core, stitch-delta and stitch-sidecar in fuzzing mode (Maven
# profile -Pfuzz, one target per JVM as Jazzer requires), then prints one summary line per target
# from libFuzzer's final stats. Findings land as crash-* files in the target's seed corpus
# (src/test/resources/.../<Class>Inputs/<method>/), where plain `mvn verify` replays them.
#
# usage: stitch-bench/fuzz/fuzz.sh [--seconds N] [--runs N] [--offline] [TargetClass ...]
#   --seconds N  wall-time budget per target (default 300)
#   --runs N     stop a target after N executions (default 1000000; -1 = no limit)
#   --offline    pass -o to Maven
#   TargetClass  simple class names (e.g. ManifestFuzzTest); default: all *FuzzTest classes
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_PER_TARGET=300
RUNS=1000000
MVN_FLAGS=(-B)
ONLY=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_PER_TARGET="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --offline) MVN_FLAGS+=(-o); shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) ONLY+=("$1"); shift ;;
    esac
done

OUT="$ROOT/target-fuzz"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
SUMMARY="$OUT/fuzz-summary.md"

# module<TAB>class for every fuzz target, in a stable order
mapfile -t TARGETS < <(cd "$ROOT" && for m in stitch-core stitch-delta stitch-sidecar; do
    find "$m/src/test/java" -name '*FuzzTest.java' | sort | while read -r f; do
        printf '%s\t%s\n' "$m" "$(basename "$f" .java)"
    done
done)

selected() {
    [ ${#ONLY[@]} -eq 0 ] && return 0
    local o
    for o in "${ONLY[@]}"; do [ "$o" = "$1" ] && return 0; done
    return 1
}

cd "$ROOT"
echo "fuzz.sh: compiling for Jazzer (release 23, target-fuzz/)"
mvn "${MVN_FLAGS[@]}" -q -Pfuzz -pl stitch-core,stitch-delta,stitch-sidecar -am test-compile

{
    echo "| target | execs | execs/s | wall s | new corpus units | findings |"
    echo "|---|---:|---:|---:|---:|---|"
} > "$SUMMARY"

status=0
for t in "${TARGETS[@]}"; do
    module="${t%%$'\t'*}"
    cls="${t##*$'\t'}"
    selected "$cls" || continue
    log="$LOGS/$cls.log"
    echo "fuzz.sh: $cls ($module), up to ${SECONDS_PER_TARGET}s / $RUNS runs -> $log"
    set +e
    mvn "${MVN_FLAGS[@]}" -Pfuzz -pl "$module" -am test -Dtest="$cls" -Dsurefire.failIfNoSpecifiedTests=false \
        -Dfuzz.seconds="$SECONDS_PER_TARGET" -Dfuzz.runs="$RUNS" > "$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -a 'stat::number_of_executed_units:' "$log" | tail -n 1 | awk '{print $2}' || true)
    rate=$(grep -a 'stat::average_exec_per_sec:' "$log" | tail -n 1 | awk '{print $2}' || true)
    wall=$(grep -a -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 | awk '{print $5}' || true)
    added=$(grep -a 'stat::new_units_added:' "$log" | tail -n 1 | awk '{print $2}' || true)
    crashes=$(grep -a -o 'Test unit written to [^ ]*' "$log" | awk '{print $5}' | xargs -r -n 1 basename | paste -sd, - || true)
    errors=$(grep -a -c -E 'FuzzTestFinding|<<< (FAILURE|ERROR)' "$log" || true)
    if [ -z "$execs" ]; then
        findings="no libFuzzer stats (build or JVM failure, exit $rc; see $log)"
        status=1
    elif [ -n "$crashes" ] || [ "$errors" -gt 0 ]; then
        findings="FINDING: ${crashes:-see log}"
        status=1
    else
        findings="none"
    fi
    line="| $cls | ${execs:-?} | ${rate:-?} | ${wall:-?} | ${added:-?} | $findings |"
    echo "$line" >> "$SUMMARY"
    echo "fuzz.sh: $line"
done

echo
cat "$SUMMARY"
echo "(summary in $SUMMARY)"
exit $status
