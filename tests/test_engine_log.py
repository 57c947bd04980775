"""The engine log: captured from child processes, and read for the root cause and advice.

The GPU-only causes use vLLM's own output, captured on an H200 (packaging/gpu_start_failures.py)
and kept as given in tests/data/engine_logs/."""
from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

from workbench.engine.engine_log import EngineLogCapture, read_log, root_cause
from workbench.engine.start_failure import explain_start_failure
from workbench.engine.weights_check import find_damaged_weights

LOGS = Path(__file__).parent / "data" / "engine_logs"
CLIENT_SUMMARY = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


def explain(log_name: str, model_path: str = "/models/none") -> str:
    return explain_start_failure(CLIENT_SUMMARY, read_log(LOGS / log_name), model_path, 4096)[0]


def test_cuda_out_of_memory_on_h200():
    message = explain("h200-cuda-out-of-memory.log")
    assert message.startswith("The engine did not start: the GPU ran out of memory while the engine started.")
    assert "Lower gpu_memory_utilization" in message
    assert "vLLM said (in vLLM's EngineCore process): torch.OutOfMemoryError: CUDA out of memory." in message
    assert "See root cause above" not in message


def test_free_memory_below_utilization_on_h200():
    message = explain("h200-free-memory-below-utilization.log")
    assert ("only 6.98 of 139.8 GiB of GPU memory are free, and gpu_memory_utilization=0.5 asks for 69.9 GiB"
            in message)
    assert "lower gpu_memory_utilization to 0.05 or less" in message
    assert "ValueError: Free memory on device cuda:0" in message


def test_cuda_fork_on_h200():
    message = explain("h200-cuda-fork.log")
    assert "forked from a process that already used CUDA" in message
    assert "VLLM_WORKER_MULTIPROC_METHOD" in message
    assert "RuntimeError: Cannot re-initialize CUDA in forked subprocess" in message


def test_root_cause_prefers_the_engine_process_and_skips_client_summaries():
    cause = root_cause(read_log(LOGS / "h200-cuda-fork.log"))
    assert cause.process == "EngineCore"
    assert cause.exception.startswith("RuntimeError: Cannot re-initialize CUDA")
    assert "EngineCore failed to start." in cause.error_lines
    assert not any(line.startswith(("Traceback", "File ")) for line in cause.error_lines)
    assert "init_device" in cause.traceback


def test_a_log_without_errors_has_no_root_cause():
    assert root_cause("(EngineCore pid=1) INFO 11-29 22:00:00 [core.py:1] all well\n") is None


def test_unrecognised_failure_keeps_vllm_words_and_generic_advice():
    message = explain_start_failure(ValueError("something odd"), "", "/models/none", 2048)[0]
    assert message.startswith("The engine did not start. Check the model and the engine settings")
    assert "vLLM said: ValueError: something odd" in message


def write_safetensors(path: Path, tensors: dict[str, int], cut: int = 0) -> None:
    header, offset = {}, 0
    for name, size in tensors.items():
        header[name] = {"dtype": "U8", "shape": [size], "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    data = struct.pack("<Q", len(blob)) + blob + bytes(offset)
    path.write_bytes(data[:len(data) - cut])


def test_damaged_weights_are_named(tmp_path):
    write_safetensors(tmp_path / "whole.safetensors", {"a": 64, "b": 32})
    write_safetensors(tmp_path / "cut.safetensors", {"a": 64, "b": 32}, cut=10)
    (tmp_path / "garbage.safetensors").write_bytes(b"\xff" * 64)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "whole.safetensors", "c": "model-00002-of-00002.safetensors"}}))
    damaged = {d.path.name: d.problem for d in find_damaged_weights(tmp_path)}
    assert set(damaged) == {"cut.safetensors", "garbage.safetensors", "model-00002-of-00002.safetensors"}
    assert damaged["cut.safetensors"].startswith("it is truncated")
    assert "header claims" in damaged["garbage.safetensors"]
    assert "lists it but it is missing" in damaged["model-00002-of-00002.safetensors"]


CHILD = """
import sys
print("child says hello", flush=True)
raise ValueError("raised in the child process")
"""


def test_capture_keeps_what_child_processes_print(tmp_path, capfd):
    """A process started while attached keeps writing to the log after the parent detaches."""
    capture = EngineLogCapture(tmp_path / "engine.log")
    capture.attach()
    try:
        child = subprocess.Popen([sys.executable, "-c", CHILD])
    finally:
        capture.detach_parent()
    print("the parent's own output after detaching", flush=True)
    child.wait(timeout=60)
    assert capture.wait_closed(timeout_s=10)
    text = capture.text()
    assert "child says hello" in text
    assert "ValueError: raised in the child process" in text
    assert "after detaching" not in text
    console = capfd.readouterr()
    assert "child says hello" in console.out + console.err, "the console still gets the engine's output"
    assert root_cause(text).exception == "ValueError: raised in the child process"



def test_capture_without_standard_streams_leaves_them_alone(tmp_path, monkeypatch):
    """Under a launcher that gives the app no stdout/stderr, the engine starts without a log."""
    import os

    def no_such_stream(fd):
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(os, "dup", no_such_stream)
    capture = EngineLogCapture(tmp_path / "engine.log")
    assert capture.attach() is False
    capture.detach_parent()  # nothing to give back
    assert capture.wait_closed(timeout_s=0.1) and capture.text() == ""


def test_a_model_workers_death_is_named_with_its_signal_and_what_it_usually_means():
    from workbench.engine.engine_log import worker_death

    line = ("(EngineCore pid=4651) ERROR 12-01 22:43:32 [multiproc_executor.py:315] Worker proc VllmWorker-0 "
            "died unexpectedly (exit code: {}), shutting down executor.\n")
    said = worker_death("(EngineCore pid=4651) INFO starting\n(Worker pid=4700) INFO loading\n" + line.format(-4))
    assert said.startswith("its model worker VllmWorker-0 (pid 4700) was killed by signal 4 (SIGILL)")
    assert "does not fit this CPU" in said
    killed = worker_death(line.format(-9))  # who sent it is not known: named as possible, no memory advice
    assert killed.endswith("was killed by signal 9 (SIGKILL): something outside vLLM ended it — the "
                           "out-of-memory killer, a `kill`, or a system monitor"), killed
    assert worker_death(line.format(1)) == "its model worker VllmWorker-0 exited with code 1"
    assert worker_death("(EngineCore pid=4651) INFO all well\n") == ""


def test_a_signal_death_names_the_out_of_memory_killer_only_on_the_kernels_word():
    from workbench.engine.process_death import OomVerdict, death_label, ended, oom_kill_in

    who = "its engine core (VLLM::EngineCore, pid 4321)"
    unknown = ended(who, -9)
    assert unknown == (f"{who} was killed by signal 9 (SIGKILL): something outside vLLM ended it — the "
                       "out-of-memory killer, a `kill`, or a system monitor")
    not_oom = ended(who, -9, OomVerdict("not", "the kernel log names no out-of-memory kill of it"))
    assert "not the kernel's out-of-memory killer" in not_oom and "max_num_seqs" not in not_oom
    oom = ended(who, -9, OomVerdict("killed", 'the kernel log says "Out of memory: Killed process 4321"'))
    assert "the kernel's out-of-memory killer ended it" in oom and "lower max_num_seqs" in oom
    assert "max_num_seqs" not in unknown and "max_num_seqs" not in ended(who, -15)
    assert ended(who, 1) == f"{who} exited with code 1"
    assert death_label(f"The engine stopped during a reply: {unknown}.") == "engine died: SIGKILL"
    assert death_label("The engine stopped: it exited with code 3.") == "engine died: exit code 3"
    assert death_label("The engine stopped during a reply: the connection was closed.") == "engine died"
    record = ("3,812,96170043,-;Out of memory: Killed process 4321 (VLLM::Worker) total-vm:9046424kB, "
              "anon-rss:7702252kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:15504kB oom_score_adj:0\n")
    assert oom_kill_in(record) == (96170043, 4321, "Out of memory: Killed process 4321 (VLLM::Worker)")
    assert oom_kill_in("6,813,96170050,-;EXT4-fs (vda): mounted filesystem\n") is None
