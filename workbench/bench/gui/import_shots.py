"""Offscreen screenshots of the command-line import dialog for the docs (no engine needed):

    python -m workbench.bench.gui.import_shots docs   docs/import-docker.png (a docker run line from
                                                      vLLM's deployment docs), docs/import-snippet.png
                                                      (an indented LLM(...) snippet)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

DOCKER = """docker run --runtime nvidia --gpus all \\
    -v ~/.cache/huggingface:/root/.cache/huggingface \\
    --env "HF_TOKEN=$HF_TOKEN" \\
    -p 8000:8000 --ipc=host \\
    vllm/vllm-openai:v0.9.0 \\
    --model Qwen/Qwen3-8B --tensor-parallel 2 --max-model-len 32k \\
    --speculative-config.method ngram --speculative-config.num_speculative_tokens 4 \\
    --enable-auto-tool-choice --tool-call-parser hermes --swap-space 16
"""
SNIPPET = """    def make_llm():
        llm = LLM(
            model="Qwen/Qwen2.5-VL-3B-Instruct",
            max_model_len=4096,
            max_num_seqs=5,
            limit_mm_per_prompt={"image": 2},
        )
        sampling_params = SamplingParams(temperature=0.2, max_tokens=64)
        return llm, sampling_params
"""


def main(folder: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.bench.gui.screenshot import process_events_until
    from workbench.ui.command_import import CommandImportDialog

    app = QApplication.instance() or QApplication(sys.argv)
    for name, text in (("import-docker.png", DOCKER), ("import-snippet.png", SNIPPET)):
        dialog = CommandImportDialog("demo-qwen2")
        dialog.resize(1000, 760)
        dialog.paste.setPlainText(text)
        dialog.read()
        process_events_until(lambda: not dialog.reading, 60)
        dialog.show()
        app.processEvents()
        dialog.grab().save(str(Path(folder) / name))
        dialog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
