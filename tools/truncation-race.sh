#!/usr/bin/env bash
# The truncation race: a model file truncated by another process while a command loads it.
#
# Each run copies MODEL to a scratch file, starts the command on the copy, and truncates the copy
# to 40,000,000 bytes after a delay that sweeps from 0 to (RUNS-1) x STEP_MS milliseconds, so
# that the truncation lands before the open, during the loader's copy and after the snapshot.
# A run must end in one of two ways, never by a signal:
#   complete  the command ran to its end on the snapshot (for generate, the same text as an
#             untouched run; for serve, the switch answered with the same text);
#   refused   exit 1 (serve: a failed request, the server still up), the message naming the file
#             and what was wrong with it (a short read while copying, a file that changed, or
#             the truncated file's own bytes when the truncation came before the open).
# Prints one line per run and a tally per command; exits 1 if any run ended otherwise.
#
# usage: tools/truncation-race.sh REDLINE MODEL [RUNS] [STEP_MS] [COMMANDS...]
#   REDLINE   the redline binary; MODEL  a GGUF model (SmolLM2-135M: the loader's copy of its
#   98 MB takes long enough to be hit); COMMANDS  any of generate bench lower serve (all).
set -uo pipefail

redline=$1
model=$2
runs=${3:-20}
step_ms=${4:-15}
shift $(( $# < 4 ? $# : 4 ))
commands=("$@")
[ ${#commands[@]} -eq 0 ] && commands=(generate bench lower serve)

work=$(mktemp -d "${TMPDIR:-/tmp}/truncation-race.XXXXXX")
trap 'rm -rf "$work"' EXIT
export REDLINE_HOME="$work/home"
export REDLINE_REPLAY_BACKEND=auto
cd "$work" || exit 2
cut_bytes=40000000
failures=0

# The command for one run on the file $1, writing into $2 (a fresh directory).
run_command() {
  local file=$1 out=$2
  case $command in
    generate) "$redline" generate --device sim --model "$file" --prompt "The capital of France is" --max-tokens 16 ;;
    bench) "$redline" bench --model "$file" --device sim --tokens 4 --warmup 0 --runs 1 \
             --gate-window 2 --gate-confirm 2 --gate-rows-max 6 --out "$out/report.json" --plot "$out/plot.svg" ;;
    lower) "$redline" lower --model "$file" --position 3 --arch gfx1100 --out "$out/bundle" ;;
  esac
}

# Whether a finished run (its stdout $1 and stderr $2) is a complete run: for generate, the
# text an untouched run prints; for bench, the verdict it ends with (exit 1 when the promotion
# rule holds the route back, as it does for a run this short); for lower, the checked bundle.
complete() {
  case $command in
    generate) cmp -s "$1" "$work/baseline.out" ;;
    bench) grep -q '^promotion:' "$1" "$2" ;;
    lower) grep -q 'expected regions match' "$1" ;;
  esac
}

classify() { # code stdout stderr file
  local code=$1 stdout=$2 stderr=$3 file=$4
  if [ "$code" -gt 128 ]; then
    echo "SIGNAL $((code - 128))"
  elif [ "$code" -eq 1 ] && grep -qF "$file" "$stderr" && ! complete "$stdout" "$stderr"; then
    if grep -q 'short read' "$stderr"; then echo "refused: short read"
    elif grep -q 'changed while it was read\|grew while' "$stderr"; then echo "refused: changed while read"
    else echo "refused: the truncated file ($(grep -o 'redline: error: .*' "$stderr" | cut -c1-90))"
    fi
  elif { [ "$code" -eq 0 ] || [ "$command" = bench ]; } && complete "$stdout" "$stderr"; then
    echo "complete"
  else
    echo "OTHER exit $code: $(tail -c 300 "$stderr" | tr '\n' ' ')"
  fi
}

one_run() { # index
  local i=$1 delay_ms=$(( $1 * step_ms )) dir="$work/run-$command-$1"
  mkdir -p "$dir"
  cp "$model" "$dir/m.gguf"
  local start end
  start=$(date +%s%N)
  run_command "$dir/m.gguf" "$dir" >"$dir/stdout" 2>"$dir/stderr" &
  local pid=$!
  sleep "$(printf '0.%03d' "$delay_ms")"
  truncate -s $cut_bytes "$dir/m.gguf"
  wait $pid
  local code=$?
  end=$(date +%s%N)
  local verdict
  verdict=$(classify $code "$dir/stdout" "$dir/stderr" "$dir/m.gguf")
  printf '%-8s run %2d  truncated at %4d ms  exit %3d  %5d ms  %s\n' "$command" "$i" "$delay_ms" "$code" \
    $(( (end - start) / 1000000 )) "$verdict"
  echo "$verdict" >>"$work/tally-$command"
  case $verdict in complete|refused*) ;; *) failures=$((failures + 1)) ;; esac
  rm -rf "$dir"
}

# serve: model A (the built-in tiny) is loaded at startup, model B (the copy) is opened, hashed
# and checked at startup; each run asks for B, which switches to it (a new snapshot through the
# descriptor opened at startup), and truncates B's file after the delay; then asks for A again,
# so the next run switches once more. The server must stay up throughout.
serve_runs() {
  local dir="$work/serve" port
  mkdir -p "$dir"
  port=$(( 20000 + RANDOM % 20000 ))
  local request='{"model":"m","prompt":"The capital of France is","max_tokens":8,"temperature":0}'
  for i in $(seq 0 $((runs - 1))); do
    cp "$model" "$dir/m.gguf"
    "$redline" serve --model tiny --model "$dir/m.gguf" --device sim --port $port >"$dir/server.out" 2>"$dir/server.err" &
    local server=$!
    for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
    if [ $i -eq 0 ]; then
      curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' -d "$request" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])' >"$work/serve-baseline"
      # Back to the first model (its id is the file's stem), so that the run switches again.
      local first
      first=$(curl -s "http://127.0.0.1:$port/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
      curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
        -d "{\"model\":\"$first\",\"prompt\":\"a\",\"max_tokens\":1}" >/dev/null
    fi
    local switches_before
    switches_before=$(curl -s "http://127.0.0.1:$port/redline/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["switches"])')
    local delay_ms=$(( i * step_ms )) start end
    start=$(date +%s%N)
    curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' -d "$request" \
      -o "$dir/answer" -w '%{http_code}' >"$dir/status" &
    local client=$!
    sleep "$(printf '0.%03d' "$delay_ms")"
    truncate -s $cut_bytes "$dir/m.gguf"
    wait $client
    end=$(date +%s%N)
    local status verdict alive=yes switched
    status=$(cat "$dir/status")
    switched=$(curl -s "http://127.0.0.1:$port/redline/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["switches"])')
    kill -0 $server 2>/dev/null || alive=no
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || alive=no
    if [ "$alive" = no ]; then
      wait $server; verdict="SERVER DIED (exit $?)"
    elif [ "$status" = 200 ] && [ "$switched" -ne $((switches_before + 1)) ]; then
      verdict="OTHER: the request did not switch models"
    elif [ "$status" = 200 ] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' \
        "$dir/answer" | cmp -s - "$work/serve-baseline"; then
      verdict=complete
    elif [ "$status" != 200 ] && grep -qF "$dir/m.gguf" "$dir/answer"; then
      if grep -q 'short read' "$dir/answer"; then verdict="refused: short read ($status)"
      else verdict="refused: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$dir/answer") ($status)"
      fi
    else
      verdict="OTHER $status: $(head -c 300 "$dir/answer")"
    fi
    printf '%-8s run %2d  truncated at %4d ms  HTTP %s  %5d ms  %s\n' serve "$i" "$delay_ms" "$status" \
      $(( (end - start) / 1000000 )) "$verdict"
    echo "$verdict" | sed 's/ ([0-9]*)$//' >>"$work/tally-serve"
    case $verdict in complete|refused*) ;; *) failures=$((failures + 1)) ;; esac
    kill -TERM $server; wait $server 2>/dev/null
  done
}

for command in "${commands[@]}"; do
  if [ "$command" = serve ]; then
    serve_runs
  else
    if [ "$command" = generate ]; then
      "$redline" generate --device sim --model "$model" --prompt "The capital of France is" --max-tokens 16 \
        >"$work/baseline.out" 2>/dev/null
    fi
    for i in $(seq 0 $((runs - 1))); do one_run "$i"; done
  fi
  echo "== $command: $(sort "$work/tally-$command" | uniq -c | sed 's/^ *//' | paste -sd ';' | sed 's/;/; /g')"
done
echo "runs that ended otherwise (a signal, a dead server, an unexplained exit): $failures"
[ $failures -eq 0 ]
