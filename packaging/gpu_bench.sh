#!/usr/bin/env bash
# Runs on the lent H200 after `source .gpu/b/install.sh` (vLLM 0.26, no Qt): the KV plugin check and
# snapshot cost at the real pool sizes, the loop variants, the comparison, and NVML against nvidia-smi
# throughout. Results go to $OUT. The comparison's path (d), the app's window offscreen, needs Qt (the
# kit's part q): COMPARE_PATHS=a,b,c,d REPEATS=8 SINGLE_SAMPLES=1 for the median of 8 paired ratios.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
step() { echo "=== $(date +%T) $*" | tee -a "$OUT/summary.txt"; }
# The result table of a log (PATTERN and LINES after it), or, when the run failed, the log's tail.
show() {
  if grep -q -- "$1" "$3"; then grep -A"$2" -- "$1" "$3"; else tail -30 "$3"; fi | tee -a "$OUT/summary.txt"
}
nvml() {
  python3 -c "from workbench.telemetry.gpu_memory import gpu_telemetry as t; r = t().read_devices(); print('pynvml used MiB', [m.used_bytes // 2**20 for m in r] if r is not None else t().unavailable)" | tee -a "$OUT/summary.txt"
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader | tee -a "$OUT/summary.txt"
}
python3 -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" | tee -a "$OUT/summary.txt"
nvml
# NVML (what the workbench reads) against nvidia-smi every 5 s while the runs below load the GPU.
python3 -m workbench.bench.memory_check --interval 5 --out "$OUT/memory.csv" &
SAMPLER=$!
finish() {
  kill $SAMPLER 2>/dev/null
  wait $SAMPLER 2>/dev/null
  python3 -m workbench.bench.memory_check --summary "$OUT/memory.csv" | tee -a "$OUT/summary.txt"
}
trap finish EXIT
for shape in ${SHAPES-qwen2.5-0.5b qwen2.5-7b}; do
  step "snapshot $shape"
  timeout 240 python3 -m workbench bench --shape $shape --gpu-memory-utilization 0.85 --max-model-len 4096 \
    snapshot --blocks 0 --running 256 --prompt-len 512 --samples 100 > "$OUT/snapshot-$shape.log" 2>&1
  show '^| blocks' 3 "$OUT/snapshot-$shape.log"
done
for LOOP_SHAPE in ${LOOP_SHAPES:-}; do
  step "loop $LOOP_SHAPE"
  timeout ${LOOP_TIMEOUT:-400} python3 -m workbench bench --shape $LOOP_SHAPE --gpu-memory-utilization ${LOOP_UTIL:-0.4} \
    --max-model-len 4096 loop --requests 256 --prompt-len 512 --output-len 256 --repeats ${REPEATS:-3} \
    --variants ${VARIANTS:-a,b} > "$OUT/loop-$LOOP_SHAPE.log" 2>&1
  show 'interleaved repeats' 9 "$OUT/loop-$LOOP_SHAPE.log"
done
# COMPARE_SHAPES: shapes, each with its own paths after a colon where they differ from COMPARE_PATHS
# (e.g. "qwen2.5-0.5b:a,d qwen2.5-7b:a,c,d"). APP_WITHOUT=heatmap,chat: (d) as an attribution run.
# CLIENT=thread|process: where vLLM's client loop runs for (d) and gui-stall (default: the app's, process).
for item in ${COMPARE_SHAPES:-}; do
  shape=${item%%:*}
  paths=${COMPARE_PATHS:-a,b,c}
  [ "$item" != "$shape" ] && paths=${item#*:}
  step "compare $shape ($paths)"
  timeout ${COMPARE_TIMEOUT:-540} python3 -m workbench bench --shape $shape --gpu-memory-utilization 0.4 --max-model-len 4096 \
    compare --requests 256 --prompt-len 512 --output-len 256 --repeats ${REPEATS:-3} --paths $paths \
    --hf-time-box ${HF_TIME_BOX:-120} --single-samples ${SINGLE_SAMPLES:-3} ${APP_WITHOUT:+--app-without $APP_WITHOUT} \
    ${CLIENT:+--client $CLIENT} --out "$OUT/compare-$shape${CLIENT:+-$CLIENT}" > "$OUT/compare-$shape${CLIENT:+-$CLIENT}.log" 2>&1
  show '^Workload' 28 "$OUT/compare-$shape${CLIENT:+-$CLIENT}.log"
done
# A search of engine arguments, headless (bench tune), e.g. TUNE_SHAPES=qwen2.5-7b: each call pauses the search
# before a trial or rerun that would not end within TUNE_TIMEOUT (less 45 s to shut down), so keep
# $OUT/tune-$shape/tune and carry it back with TUNE_RESUME=NAME (a trial cut short by the timeout runs again).
# TUNE_ARGS: the workload and goal (default: the issue's W1 at a fixed rate). TUNE_BUDGET_S: the trials' seconds
# (default 1800 for a new search; given with TUNE_RESUME, it replaces the search's own).
for shape in ${TUNE_SHAPES:-}; do
  step "tune $shape"
  timeout ${TUNE_TIMEOUT:-580} python3 -m workbench bench --shape $shape --max-model-len 4096 tune \
    --pause-after-s $(( ${TUNE_TIMEOUT:-580} - 45 )) ${TUNE_RESUME:+--resume "$TUNE_RESUME"} ${TUNE_ARGS:---goal goodput --ttft-limit-s 2 --itl-limit-ms 50 --requests 1000 \
    --prompt-len 2048 --output-len 128 --rate 8} ${TUNE_BUDGET_S:+--budget-s $TUNE_BUDGET_S} --store "${TUNE_STORE:-$OUT/tune-$shape/tune}" \
    --out "$OUT/tune-$shape" > "$OUT/tune-$shape.log" 2>&1
  show '^| trial' 40 "$OUT/tune-$shape.log"
  # a store kept on the machine (TUNE_STORE outside $OUT, for the next call while it is warm) comes back too
  if [ -n "${TUNE_STORE:-}" ] && [ -d "$TUNE_STORE" ]; then
    mkdir -p "$OUT/tune-$shape/store" && cp -r "$TUNE_STORE"/. "$OUT/tune-$shape/store/"
  fi
done
# W1's rate, before its search: the Poisson rate where vLLM's defaults' p99 TTFT first passes 2 s, probed on one
# engine (bench tune --find-rate --rate-only), e.g. RATE_SHAPES=qwen2.5-7b RATE_START=8; the search then runs
# with TUNE_ARGS holding --rate at what it found.
for shape in ${RATE_SHAPES:-}; do
  step "rate $shape"
  timeout ${RATE_TIMEOUT:-580} python3 -m workbench bench --shape $shape --max-model-len 4096 tune --find-rate \
    --rate-only --ttft-limit-s 2 --rate ${RATE_START:-8} --rate-probes ${RATE_PROBES:-8} --rate-growth ${RATE_GROWTH:-1.5} --requests 1000 \
    --prompt-len 2048 --output-len 128 --out "$OUT/rate-$shape" > "$OUT/rate-$shape.log" 2>&1
  show '^Rate search' 20 "$OUT/rate-$shape.log"
done
# The batch path against LLM.generate on one 1,000-prompt file, e.g. BATCH_SHAPES=qwen2.5-7b (each path in
# a process of its own, taking turns; raw output per run under $OUT/batch-$shape/).
for shape in ${BATCH_SHAPES:-}; do
  step "batch throughput $shape"
  timeout ${BATCH_TIMEOUT:-580} python3 -m workbench bench --shape $shape --gpu-memory-utilization 0.4 --max-model-len 4096 \
    batch throughput --requests 1000 --prompt-words 256 --output-len 256 --repeats ${BATCH_REPEATS:-2} \
    --out "$OUT/batch-$shape" > "$OUT/batch-$shape.log" 2>&1
  show 'prompts (' 8 "$OUT/batch-$shape.log"
done
# The GUI's stalls at real pool sizes, and the whole snapshot path in the same run (needs Qt: part q),
# e.g. STALL_BLOCKS="120000 640000".
for blocks in ${STALL_BLOCKS:-}; do
  step "gui-stall $blocks blocks"
  QT_QPA_PLATFORM=offscreen timeout ${STALL_TIMEOUT:-300} python3 -m workbench bench gui-stall --requests 256 \
    --output-len 256 --blocks $blocks ${CLIENT:+--client $CLIENT} > "$OUT/gui-stall-$blocks${CLIENT:+-$CLIENT}.log" 2>&1
  show '^GUI event-loop' 14 "$OUT/gui-stall-$blocks${CLIENT:+-$CLIENT}.log"
done
# Presets (needs tomlkit, in the kit's deps): the capacity planner's estimate against vLLM's block count at each
# shape, e.g. PRESET_SHAPES="qwen2.5-0.5b qwen2.5-7b" (target within 5 %); and PRESET_SWITCHES=1 for five preset
# switches in a row on the demo model (NVML memory after each switch; a switch against a cold start).
for shape in ${PRESET_SHAPES:-}; do
  step "preset capacity $shape"
  timeout ${PRESET_TIMEOUT:-580} python3 -m workbench bench --shape $shape presets capacity \
    --out "$OUT/presets-capacity-$shape" > "$OUT/presets-capacity-$shape.log" 2>&1
  show '^| preset' 7 "$OUT/presets-capacity-$shape.log"
done
if [ -n "${PRESET_SWITCHES:-}" ]; then
  step "preset switches"
  timeout ${PRESET_TIMEOUT:-580} python3 -m workbench bench presets switches --switches 5 \
    --out "$OUT/presets-switches" > "$OUT/presets-switches.log" 2>&1
  show '^| switch' 9 "$OUT/presets-switches.log"
fi
# What each shipped preset buys, through the app (path (d), the window offscreen: needs Qt, the kit's part q):
# throughput at 256 requests, TTFT p50/p99, single stream, KV blocks, the largest concurrency, long-context's
# prompt at its max_model_len, memory against the budget. E.g. PRESET_TABLE_SHAPES=qwen2.5-7b; five engine
# starts with CUDA graphs may not fit one call: PRESET_TABLE_PRESETS=balanced,low-latency,high-throughput
# in one call and long-context,memory-limited in the next.
for shape in ${PRESET_TABLE_SHAPES:-}; do
  step "preset table $shape"
  QT_QPA_PLATFORM=offscreen timeout ${PRESET_TABLE_TIMEOUT:-580} python3 -m workbench bench --shape $shape presets table \
    --requests ${TABLE_REQUESTS:-256} --prompt-len 512 --output-len ${TABLE_OUTPUT_LEN:-256} \
    --presets ${PRESET_TABLE_PRESETS:-balanced,low-latency,high-throughput,long-context,memory-limited} \
    --out "$OUT/preset-table-$shape" > "$OUT/preset-table-$shape.log" 2>&1
  show '^| preset' 7 "$OUT/preset-table-$shape.log"
done
# The workbench attached to a CUDA server under many concurrent streams (vLLM's own API server, started
# through the workbench's Serve path on a shape model, dummy weights): client CPU per output token, whether
# /metrics is read every interval, and with REMOTE_GUI=1 (needs Qt: part q) the GUI's p99 stall,
# e.g. REMOTE_SHAPES="qwen2.5-0.5b qwen2.5-7b" REMOTE_GUI=1. Raw output in $OUT/remote-$shape/.
for shape in ${REMOTE_SHAPES:-}; do
  step "remote $shape"
  QT_QPA_PLATFORM=offscreen timeout ${REMOTE_TIMEOUT:-580} python3 -m workbench bench --shape $shape \
    --gpu-memory-utilization ${REMOTE_UTIL:-0.4} --max-model-len 4096 remote --streams ${REMOTE_STREAMS:-256} \
    --prompt-len 512 --output-len 256 ${REMOTE_GUI:+--gui} --out "$OUT/remote-$shape" > "$OUT/remote-$shape.log" 2>&1
  show '^| path' 4 "$OUT/remote-$shape.log"
done
# What an interactive preset is for: a chat's TTFT while a batch runs, each preset under the app's condition
# (priority scheduling, the batch bounded to max_num_seqs - 4 in the engine, chats at priority 0), headless,
# e.g. CHAT_TTFT_SHAPES=qwen2.5-7b CHAT_TTFT_PRESETS=balanced,low-latency. Raw output in $OUT/chat-ttft-$shape/.
for shape in ${CHAT_TTFT_SHAPES:-}; do
  step "chat ttft beside a batch, presets $shape"
  timeout ${CHAT_TTFT_TIMEOUT:-400} python3 -m workbench bench --shape $shape batch chat-ttft \
    --presets ${CHAT_TTFT_PRESETS:-balanced,low-latency} --requests ${CHAT_TTFT_REQUESTS:-3000} --output-len 256 \
    --chats ${CHAT_TTFT_CHATS:-20} --chat-gap 0.25 --out "$OUT/chat-ttft-$shape" > "$OUT/chat-ttft-$shape.log" 2>&1
  show '^| condition' 7 "$OUT/chat-ttft-$shape.log"
done
