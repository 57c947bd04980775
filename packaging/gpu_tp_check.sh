#!/usr/bin/env bash
# Tensor parallelism through the app, on the two-GPU machine (device kind nvidia-h200-x2), after the kit's
# calls 1 and 2 (parts a and b) and with part q (Qt) sourced:
#   source .gpu/q/install.sh && bash packaging/gpu_tp_check.sh
# The app's real window offscreen on a shape model (dummy weights): an engine with tensor_parallel_size 1,
# a chat, a preset switch to TP 2 through the preset panel, a chat, back to TP 1, a chat; after each switch
# and at exit, no vLLM worker process of an earlier engine is left. Prints each engine's KV blocks (one
# logical pool, which the heatmap must show whole), its workers and the memory per GPU per process (NVML),
# beside nvidia-smi's own list. Results go to $OUT; exit status 0 when every check held.
#   TP_SHAPE=qwen2.5-7b (default) or qwen2.5-0.5b; TP_SIZES=1,2,1; TP_UTIL=0.4; TP_TIMEOUT=540 (seconds)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG="$OUT/tp-check.log"
python3 -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__, 'GPUs', torch.cuda.device_count())" \
  | tee "$LOG"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "this machine has $gpus GPU(s): the TP check needs two (device kind nvidia-h200-x2)" | tee -a "$LOG"
  exit 2
fi
smi() {
  echo "--- nvidia-smi $1" | tee -a "$LOG"
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader | tee -a "$LOG"
  nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader | tee -a "$LOG"
}
smi before
# Each engine start of the 7B shape with enforce_eager takes well under a minute; three starts and three
# chats fit the device call.
QT_QPA_PLATFORM=offscreen timeout ${TP_TIMEOUT:-540} python3 -m workbench.bench.gui.tp_check \
  --shape ${TP_SHAPE:-qwen2.5-7b} --sizes ${TP_SIZES:-1,2,1} --gpu-memory-utilization ${TP_UTIL:-0.4} \
  --max-model-len 4096 2>&1 | tee -a "$LOG" | grep -E '^(step|  |TP check|start)' 
status=${PIPESTATUS[0]}
smi after
# Anything of vLLM's still alive after the app exited is a leftover worker.
left=$(pgrep -f '^VLLM::' | tr '\n' ' ')
echo "vLLM processes after exit: ${left:-none}" | tee -a "$LOG"
[ -z "$left" ] || status=1
echo "exit status $status" | tee -a "$LOG"
exit $status
