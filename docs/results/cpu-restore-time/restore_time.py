import shutil, sys, time
from pathlib import Path
from workbench.storage.store import Storage
from workbench.model.app_model import AppModel
from workbench.engine.spec import EngineConfig
copy = Path(sys.argv[2]); shutil.copy(sys.argv[1], copy)
storage = Storage.open(copy); model = AppModel(EngineConfig("demo"), "")
began = time.perf_counter(); storage.restore_into(model)
print(f"restore_into: {time.perf_counter() - began:.2f} s, batch runs' rows: {[r.results.num_rows for r in model.batch_runs.values()]}")
storage.close()
