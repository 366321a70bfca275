#!/usr/bin/env bash
# Seals every soft-device fixture of registry/fixtures.json from one bench campaign whose
# promotion rule, declared before each run's timed rows, demands a retained route at least as
# fast as the ordinary one in the same run (interleaved rows, after the stationarity gate):
# `ratio>=1.0,gates=pass,health=pass`. Each run's whole bench report is kept as
# registry/reports/<fixture>.json; a fixture whose run did not promote the route keeps its row
# (golden still checks that it reproduces) but its admission row arms nothing by default
# (registry/README.md, "Admission needs a promotion").
#
# Usage: registry/seal-campaign.sh REDLINE   (the binary `cargo test` checks the fixtures with,
# target/debug/redline, so that the tok/s floors are those of that build; REDLINE_SMOLLM2_GGUF
# and REDLINE_GEMMA3_GGUF name the two catalogue models' files). Run it on an otherwise idle
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
redline="${1:?usage: registry/seal-campaign.sh path/to/redline}"
: "${REDLINE_SMOLLM2_GGUF:?}" "${REDLINE_GEMMA3_GGUF:?}"
rule='ratio>=1.0,gates=pass,health=pass'
gate=(--warmup 1 --runs 3 --order interleaved --process resident
      --gate-window 3 --gate-confirm 2 --gate-slope-pct 25 --gate-spread-pct 60 --gate-drift-pct 40 --gate-rows-max 24)
seal() { # id model tokens context
  "$redline" golden --seal "$1" --registry registry/fixtures.json --report "registry/reports/$1.json" \
    --promotion-rule "$rule" --floor-tok-s-fraction 0.2 --floor-ratio-fraction 0.6 \
    --model "$2" --device sim --arch "$arch" --prompt "Hi" --tokens "$3" --context "$4" "${gate[@]}"
}
for arch in gfx1030 gfx1100 gfx1150 gfx1151 gfx1200 gfx1201; do
  seal "smollm2-135m-$arch-sim" "$REDLINE_SMOLLM2_GGUF" 3 1024
  seal "gemma-3-270m-$arch-sim" "$REDLINE_GEMMA3_GGUF" 3 1024
  for model in tiny-lfm2 tiny-qwen35; do
    seal "$model-$arch-sim" "$model" 16 256
  done
done
