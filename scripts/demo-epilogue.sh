#!/usr/bin/env bash
# What `make demo` does after the build (which wrote reports/build.html): evaluate the offline baseline, write its report, say how to review.
set -euo pipefail
RUN=${1:-runs/demo}
BIN=.venv/bin
# The offline baseline answers from annotations alone, so it falls for the priors the benchmark probes.
$BIN/reactbench eval --run-dir "$RUN" --model rules:rules-v1 --unverified
# The blind prior baseline: the question's text and the mined statistics, never the image.
$BIN/reactbench eval --run-dir "$RUN" --model prior:blind-v1 --unverified
$BIN/reactbench report eval --run-dir "$RUN"
# Trivial and blind baselines, balance, duplicates, the mix beside the paper (ends with one JSON line).
$BIN/reactbench report health --run-dir "$RUN"
# Every gold answer of every queued item checked against the sample's drawn truth (ends with one JSON line).
$BIN/reactbench audit --run-dir "$RUN"
cat <<MSG

The demo benchmark is in $RUN. To review it in the browser:
  $BIN/reactbench review add-user alice --role admin --run-dir $RUN      # prints alice's secret once
  $BIN/reactbench review serve --run-dir $RUN                            # then open http://127.0.0.1:8765
MSG
