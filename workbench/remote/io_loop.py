"""An asyncio event loop on a thread of its own: the server's streams, its metrics and reconnects
run there, never on the engine loop's thread nor the GUI's."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future


class IOLoop:
    def __init__(self, name: str = "server-io"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine) -> Future:
        """Runs a coroutine on the loop; the future is thread-safe."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call(self, coroutine, timeout_s: float | None = None):
        """Runs a coroutine on the loop and waits for its result (raises what it raised)."""
        return self.submit(coroutine).result(timeout_s)

    def stop(self) -> None:
        """Cancels what still runs and ends the thread."""
        if not self.loop.is_running():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.call(cancel_all(), timeout_s=10)
        except Exception:  # a loop that will not cancel still stops below
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
