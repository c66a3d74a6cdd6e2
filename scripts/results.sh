#!/usr/bin/env bash
# Re-runs the evaluations the results page is made from, saving each as results/<set>/<run>.json.gz,
# then refits the shipped calibration (rca/calibration.json) and makes the page (docs/results.md) and its plot. Sets outside this repository are read from
#   OB=<Nezha's OnlineBoutique folder>   LAB=<an `rcabot lab record` folder>  (each skipped when unset),
#   named by OB_SET and LAB_SET (default onlineboutique and lab-fresh; say when a copy is partial)
# Usage: scripts/results.sh [run ...]   (default: every run; e.g. `scripts/results.sh realistic cropped`);
#   ONLY=<set> keeps one set (e.g. ONLY=lab-fresh LAB=... scripts/results.sh realistic)
set -euo pipefail
cd "$(dirname "$0")/.."
RCABOT=${RCABOT:-.venv/bin/rcabot}
ENGINES=${ENGINES:-lats,linear-multi,baro}
declare -A SETS=([trainticket]=../shared/datasets/nezha-trainticket [petshop]=../shared/datasets/petshop)
[ -n "${OB:-}" ] && SETS[${OB_SET:-onlineboutique}]=$OB
[ -n "${LAB:-}" ] && SETS[${LAB_SET:-lab-fresh}]=$LAB
declare -A RUNS=(
  [realistic]="--audit"
  [cropped]="--protocol cropped"
  [late]="--protocol late"
  [resampled-5s]="--resample 5s"
  [resampled-60s]="--resample 60s"
  [otel-names]="--vocabulary otel"
  [fleet-200]="--fleet 200"
  [metrics-only]="--hide logs,traces"
  [no-traces]="--hide traces"
  [no-logs]="--hide logs"
)
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(realistic cropped late resampled-5s resampled-60s otel-names fleet-200 metrics-only no-traces no-logs)
for set in "${!SETS[@]}"; do
  [ -n "${ONLY:-}" ] && [ "$set" != "$ONLY" ] && continue
  mkdir -p "results/$set"
  for run in "${runs[@]}"; do
    [ -n "${RUNS[$run]+x}" ] || { echo "unknown run $run; known: ${!RUNS[*]}" >&2; exit 2; }
    out="results/$set/$run.json"
    # shellcheck disable=SC2086  # the run's options are words
    "$RCABOT" eval "${SETS[$set]}" --engine "$ENGINES" ${RUNS[$run]} --json "$out" > /dev/null
    gzip -nf "$out"
    echo "$set $run -> $out.gz"
  done
done
"$RCABOT" calibrate results --out rca/calibration.json > /dev/null  # the shipped calibration follows the results
"$RCABOT" report results --out docs/results.md --plot docs/results.svg
